//===- schedules/TargetDesc.h - what kernels are built for ------*- C++ -*-===//
//
// The target description: one Halide target a kernel is compiled for (a
// variant). Every decision that follows from the target and that more than
// one schedule reads is a TargetDesc property, answered here once: the pass
// pipeline reads the weight layout the GEMM schedule wants (gemmPanelWidth),
// the algorithm the attention tiles it is built with (and records them in its
// stages, so a schedule never derives them again), and the schedules place the
// Funcs for it. This header and its .cpp include nothing of schedules/cpu or
// schedules/gpu, which include it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SCHEDULES_TARGETDESC_H
#define ATTNC_SCHEDULES_TARGETDESC_H

#include "Halide.h"

namespace attnc::schedules {

/// Where a kernel's loops run.
enum class Device { Host, Cuda, OpenCL };

/// "host", "cuda" or "opencl", as attnc and the docs name them.
const char *deviceName(Device device);

/// One variant: the Halide target a kernel is compiled for, and what
/// follows from it.
class TargetDesc {
public:
  explicit TargetDesc(Halide::Target halide) : halide_(std::move(halide)) {}

  const Halide::Target &halide() const { return halide_; }
  Device device() const;
  bool isGpu() const { return device() != Device::Host; }

  /// Output features per packed weight panel, the CPU GEMM schedule's
  /// register tile (attn.pack_panels): 4 vectors wide with AVX-512's 32
  /// registers, 2 with AVX2's 16. 0 where GEMMs read plain [in, out]
  /// weights (on GPUs, where a warp's threads read consecutive outputs of
  /// one row).
  int gemmPanelWidth() const;

  /// Query rows per flash-attention tile: the rows that share each key
  /// tile's loads (on a GPU, one thread per row of a block). A decode (a few
  /// new queries over a KV cache) takes them one at a time, since a tile's
  /// rows past the queries would be computed for nothing.
  int attentionQueryTile(bool decoding) const;

  /// Keys per flash-attention key tile: the keys whose scores, maximum, sum
  /// and output are computed together before they are folded into a query
  /// row's state.
  int attentionKeyTile() const;

  /// Runs of key tiles a decode's attention is cut into (flash decoding):
  /// independent states merged at the end, so one query's keys spread over
  /// CPU cores or GPU threads. 1 for a prefill.
  int attentionKeyChunks(bool decoding) const;

  /// bf16 and f16 tensors are stored as their bits (uint16) and converted
  /// with integer operations: OpenCL without cl_khr_fp16 (Halide's
  /// cl_half feature) has no half type to load them as, and Halide's CUDA
  /// code generator cannot widen bf16.
  bool storesHalfAsBits() const;

  /// GPU schedules' loops over a warp's lanes (gpu_lanes) keep each lane's
  /// values in its registers and read a neighbour's with a warp shuffle:
  /// CUDA. Halide 21's OpenCL back end refuses gpu_lanes; there the same
  /// loops run over threads with those values in shared memory.
  bool warpShuffles() const;

private:
  Halide::Target halide_;
};

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_TARGETDESC_H
