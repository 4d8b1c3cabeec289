//===- schedules/cpu/CpuSchedules.h - schedules for SIMD CPUs ---*- C++ -*-===//
#ifndef ATTNC_SCHEDULES_CPU_CPUSCHEDULES_H
#define ATTNC_SCHEDULES_CPU_CPUSCHEDULES_H

#include "schedules/KernelStages.h"
#include "schedules/TargetDesc.h"

namespace attnc::schedules {

/// The hand schedule: register-blocked GEMMs, per-row norms and attention,
/// vectorised at the target's natural width, parallel over rows; GEMM
/// register tiles of TargetDesc::gemmPanelWidth outputs.
void scheduleHand(KernelStages &stages, const TargetDesc &target);

/// A kernel that only moves data (weights transposed, joined, scaled, packed
/// in panels at load): coarse parallel tasks over the outermost dim, 2-D
/// outputs in cache-sized tiles so a transpose reads whole cache lines.
void scheduleLayout(KernelStages &stages, const TargetDesc &target);

/// The simplest correct schedule: every stage computed at root, serially,
/// without vectors. A baseline for benchmarks and a debugging aid.
void scheduleNaive(KernelStages &stages);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_CPU_CPUSCHEDULES_H
