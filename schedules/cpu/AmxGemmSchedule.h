//===- schedules/cpu/AmxGemmSchedule.h - GEMMs in AMX tiles -----*- C++ -*-===//
#ifndef ATTNC_SCHEDULES_CPU_AMXGEMMSCHEDULE_H
#define ATTNC_SCHEDULES_CPU_AMXGEMMSCHEDULE_H

#include "schedules/KernelStages.h"

namespace attnc::schedules {

/// The AMX tiles of `g` (GemmStage::amxTiles) for one parallel task of
/// `out`, the loop `task` (a block of rows, or of rows of a few sequences,
/// by outputs that read at most one packed weight panel, `panel` of the
/// GEMM's outputs): the task's panel copied once, then at the loop `rowLoop`
/// (`task`, or the task's loop over its sequences) the rows' sums in
/// AmxTile tiles, each over all inputs in tile registers, stored to a
/// buffer the outputs read.
void scheduleAmxTiles(Halide::Func out, Halide::Var task, Halide::Var rowLoop,
                      GemmStage &g, int panel);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_CPU_AMXGEMMSCHEDULE_H
