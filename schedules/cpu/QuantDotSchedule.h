//===- schedules/cpu/QuantDotSchedule.h - int8 dot products -----*- C++ -*-===//
#ifndef ATTNC_SCHEDULES_CPU_QUANTDOTSCHEDULE_H
#define ATTNC_SCHEDULES_CPU_QUANTDOTSCHEDULE_H

#include "schedules/KernelStages.h"
#include "schedules/TargetDesc.h"

namespace attnc::schedules {

/// The hand schedule of a QuantDotStage whose output (or a wrapper of it)
/// is `out` over `vars`, in vectors of `width` floats.
void scheduleQuantDot(Halide::Func out, const std::vector<Halide::Var> &vars,
                      QuantDotStage &d, int width);

/// The quantized activation rows both int8 lowerings read (scales,
/// integers, corrections): each computed once, in parallel over the rows.
void scheduleQuantizedRows(const std::vector<Halide::Func> &activations);

/// --schedule=naive: every Func of the stage at root.
void scheduleQuantDotNaive(QuantDotStage &d);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_CPU_QUANTDOTSCHEDULE_H
