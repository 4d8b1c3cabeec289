//===- schedules/gpu/GpuSchedules.h - schedules for GPUs --------*- C++ -*-===//
//
// The hand schedules for CUDA and OpenCL targets: every anchor of a kernel
// runs as GPU blocks of threads, its per-thread partial results in
// registers. The same KernelStages as the CPU schedules (cpu/), placed
// differently; the algorithm is shared.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SCHEDULES_GPU_GPUSCHEDULES_H
#define ATTNC_SCHEDULES_GPU_GPUSCHEDULES_H

#include "schedules/KernelStages.h"
#include "schedules/TargetDesc.h"

namespace attnc::schedules {

/// The hand schedule for a GPU target (CUDA or OpenCL).
void scheduleGpu(KernelStages &stages, const TargetDesc &target);

/// A kernel that only moves data (the "init" entry's weight layouts): one
/// thread per output element, in 2-D tiles.
void scheduleGpuLayout(KernelStages &stages);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_GPU_GPUSCHEDULES_H
