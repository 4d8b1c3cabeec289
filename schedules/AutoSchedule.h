//===- schedules/AutoSchedule.h - Halide's autoscheduler --------*- C++ -*-===//
//
// `--schedule=auto`: one of Halide's autoschedulers schedules the whole
// kernel pipeline, so the hand schedules (CpuSchedules.h) always have a
// machine-made schedule to be compared with. It needs no KernelStages roles,
// only the pipeline, its inputs and an estimated extent for every dim of
// every input and output.
//
// The autoscheduler is a plugin of the Halide SDK; which one is chosen at
// configure time (cmake/AttncHalide.cmake, ATTNC_AUTOSCHEDULER) and loaded at
// first use: the environment variable ATTNC_AUTOSCHEDULER_PLUGIN's path, else
// the copy installed beside attnc (<prefix>/lib/attnc), else the wheel's path
// found at build time. Its schedule is then made safe for every
// extent: the estimates are a guess, the library serves S = 1 to the bound.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SCHEDULES_AUTOSCHEDULE_H
#define ATTNC_SCHEDULES_AUTOSCHEDULE_H

#include "Halide.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::schedules {

/// Estimated extents of one buffer's dims, innermost (Halide dim 0) first.
using Extents = std::vector<int64_t>;

/// The autoscheduler attnc was built with, e.g. "Adams2019".
const char *autoschedulerName();

/// Sets the estimates of `params` (one Extents each) and of the pipeline's
/// outputs (one Extents each, in order; every dim starts at 0), then applies
/// the autoscheduler for `target`. Returns an error message, empty on
/// success: the plugin is missing or cannot be loaded. The autoscheduler's
/// own failures are thrown as Halide::Error, like every Halide failure.
std::string scheduleAuto(Halide::Pipeline &pipeline,
                         std::vector<Halide::ImageParam> &params,
                         const std::vector<Extents> &inputEstimates,
                         const std::vector<Extents> &outputEstimates,
                         const Halide::Target &target);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_AUTOSCHEDULE_H
