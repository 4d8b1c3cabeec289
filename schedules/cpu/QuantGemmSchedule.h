//===- schedules/cpu/QuantGemmSchedule.h - int8 GEMM ------------*- C++ -*-===//
#ifndef ATTNC_SCHEDULES_CPU_QUANTGEMMSCHEDULE_H
#define ATTNC_SCHEDULES_CPU_QUANTGEMMSCHEDULE_H

#include "schedules/KernelStages.h"
#include "schedules/TargetDesc.h"

namespace attnc::schedules {

/// The hand schedule of a QuantGemmStage whose output (or a wrapper of it)
/// is `out` over `vars`, `features` outputs in vectors of `width`; a decode
/// kernel (`fewRows`) tiles its batch's sequences, others their rows.
void scheduleQuantGemm(Halide::Func out, const std::vector<Halide::Var> &vars,
                       QuantGemmStage &d, const TargetDesc &target,
                       int64_t features, int width, bool fewRows);

/// --schedule=naive: every Func of the stage at root.
void scheduleQuantGemmNaive(QuantGemmStage &d);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_CPU_QUANTGEMMSCHEDULE_H
