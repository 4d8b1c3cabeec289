//===- schedules/cpu/PanelPrefetch.h - the next weight panel, early -*- C++
//-*-===//
//
// A prefill GEMM whose tiles sum whole (scheduleGemm) reads its panel of
// packed weights from memory in the task's first register tile, which then
// waits on its loads. The tiles of the task before prefetch it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SCHEDULES_CPU_PANELPREFETCH_H
#define ATTNC_SCHEDULES_CPU_PANELPREFETCH_H

#include "schedules/KernelStages.h"

#include <vector>

namespace attnc::schedules {

/// Adds a lowering pass to `pipeline` that, for each of `prefetches`,
/// prefetches into L2 one line of the next panel's row at every reduction
/// step of a task's first register tiles (tile t the row's line t, as many
/// tiles as a row has lines), so they bring the next task's panel in. A
/// step loop that does not read the weights as dense rows is left as it
/// was.
void addPanelPrefetches(Halide::Pipeline &pipeline,
                        const std::vector<PanelPrefetch> &prefetches);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_CPU_PANELPREFETCH_H
