//===- compiler/codegen/KernelCodegen.h - attn.kernel -> object -*- C++ -*-===//
//
// Lowers each attn.kernel to a Halide pipeline (the algorithm, from
// HalideAlgorithm.h), schedules it (schedules/), and compiles it ahead of time
// into an object file with Target::NoRuntime. One standalone Halide runtime
// object serves all kernels of a model.
//
// A kernel's arguments are Halide's user context (`void *`), its inputs in
// order (the attn.kernel operands), then its outputs (the attn.yield
// operands), all halide_buffer_t*. The object defines `fnName` and
// `fnName_argv` (`int(void **args)`, args[0] pointing at the context).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_KERNELCODEGEN_H
#define ATTNC_COMPILER_CODEGEN_KERNELCODEGEN_H

#include "dialects/attn/IR/AttnOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace attnc::codegen {

/// --schedule: the hand schedules (schedules/cpu/, schedules/gpu/), Halide's
/// autoscheduler (schedules/AutoSchedule.h) or the naive baseline. Layout is
/// not a user's choice: it schedules the kernels that rearrange weights at
/// load (the "init" entry), whatever --schedule says.
enum class ScheduleKind { Hand, Auto, Naive, Layout };

struct KernelTarget {
  /// Full Halide target strings, e.g. "x86-64-linux-avx2-fma-sse41", most
  /// capable first. With more than one, every kernel is compiled once per
  /// target and picks its variant by the CPU it runs on (Halide's
  /// multitarget); the last, the baseline, is what a CPU must have.
  std::vector<std::string> halideTargets;
  ScheduleKind schedule = ScheduleKind::Hand;

  const std::string &baseline() const { return halideTargets.back(); }
  /// "a,b": the targets as the library's descriptor records them.
  std::string joined() const;
};

/// The Halide autoscheduler behind ScheduleKind::Auto, e.g. "Mullapudi2016".
const char *autoschedulerName();

/// The portable x86-64 build: AVX-512 (Skylake) and AVX2 variants of every
/// kernel, for the CPUs our machines have.
constexpr llvm::StringLiteral kMultiTargetName = "x86-64-multi";

/// "host", a Halide target string (e.g. "x86-64-linux-avx2", or
/// "host-cuda-cuda_capability_80" and "host-opencl" for GPUs), a comma-
/// separated list of CPU targets (most capable first) or kMultiTargetName,
/// checked and completed into full target strings; the error lists the
/// accepted forms.
llvm::Expected<std::vector<std::string>> resolveTarget(llvm::StringRef name);

/// Where the kernels of `target` run: an attn_model_device (model_abi.h).
int32_t modelDevice(const KernelTarget &target);

/// The kernels of `target` take bf16 and f16 tensors as their bits, uint16
/// (schedules::TargetDesc::storesHalfAsBits).
bool storesHalfAsBits(const KernelTarget &target);

/// An error when `target.schedule` cannot schedule `target` (GPU targets
/// have hand schedules only).
llvm::Error checkSchedule(const KernelTarget &target);

/// Compiles `kernel` into object files beside `objectPath` (one per target
/// and a dispatching wrapper when there are several), defining `fnName` and
/// `fnName_argv`; returns the files. Errors (including Halide's) are
/// reported as diagnostics at the kernel.
mlir::FailureOr<std::vector<std::string>>
compileKernel(mlir::attn::KernelOp kernel, const KernelTarget &target,
              llvm::StringRef fnName, llvm::StringRef objectPath);

/// What emitKernelText writes.
enum class KernelText {
  /// Halide's lowered statement (attnc --emit=halide-stmt).
  Stmt,
  /// The GPU code (attnc --emit=device-code): PTX for CUDA, OpenCL C for
  /// OpenCL; empty for a CPU target.
  DeviceCode,
};

/// Writes `what` of `kernel`, scheduled for `target`'s baseline, to `path`.
mlir::LogicalResult emitKernelText(mlir::attn::KernelOp kernel,
                                   const KernelTarget &target, KernelText what,
                                   llvm::StringRef path);

/// Compiles the one Halide runtime the kernels of a model share, for the
/// baseline target.
llvm::Error compileHalideRuntime(const KernelTarget &target,
                                 llvm::StringRef objectPath);

/// Output features per packed weight panel that `target`'s GEMM schedule
/// reads (the pipeline's AttnPipelineOptions::panelWidth), the baseline's
/// for all variants; 0 for schedules that read plain [in, out] weights.
int64_t weightPanelWidth(const KernelTarget &target);

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_KERNELCODEGEN_H
