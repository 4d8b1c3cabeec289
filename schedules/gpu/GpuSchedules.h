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

/// Shared memory a flash-attention block takes (bytes): a tile of
/// `keyTile` keys and values, and the (max, sum, output) state of each of
/// its `queryTile` rows, all three per output feature.
int64_t attentionSharedBytes(int queryTile, int keyTile, int keyHeadDim,
                             int headDim);

/// Shared memory every block may take without asking for more: the 48 KiB
/// every CUDA device (and OpenCL's usual local memory) gives; a CUDA launch
/// asking for more fails (CUDA_ERROR_INVALID_VALUE).
constexpr int64_t kGpuSharedBytes = 48 * 1024;

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_GPU_GPUSCHEDULES_H
