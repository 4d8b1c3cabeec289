//===- schedules/cpu/AmxGemmSchedule.h - GEMMs in AMX tiles -----*- C++ -*-===//
#ifndef ATTNC_SCHEDULES_CPU_AMXGEMMSCHEDULE_H
#define ATTNC_SCHEDULES_CPU_AMXGEMMSCHEDULE_H

#include "schedules/KernelStages.h"

namespace attnc::schedules {

/// The AMX tiles of `g` (GemmStage::amxTiles) for one parallel task of
/// `out`, the loop `task` (a block of rows by outputs that read at most
/// one packed weight panel, `panel` of the GEMM's outputs): the task's sums in
/// AmxTile tiles, each over all inputs in tile registers, then stored to a
/// buffer the task's outputs read.
void scheduleAmxTiles(Halide::Func out, Halide::Var task, GemmStage &g,
                      int panel);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_CPU_AMXGEMMSCHEDULE_H
