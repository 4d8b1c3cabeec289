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

#include "compiler/codegen/ObjectCache.h"
#include "dialects/attn/IR/AttnOps.h"
#include "schedules/TargetDesc.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace attnc::codegen {

using schedules::BuildTarget;
using schedules::ScheduleKind;

/// The Halide autoscheduler behind ScheduleKind::Auto, e.g. "Mullapudi2016".
const char *autoschedulerName();

/// The portable x86-64 build: AVX-512 (Skylake) and AVX2 variants of every
/// kernel, for the CPUs our machines have.
constexpr llvm::StringLiteral kMultiTargetName = "x86-64-multi";

/// --target `name` and --schedule `schedule`, parsed once: `name` is
/// "host", a Halide target string (e.g. "x86-64-linux-avx2", or
/// "host-cuda-cuda_capability_80" and "host-opencl" for GPUs), a comma-
/// separated list of CPU targets (most capable first) or kMultiTargetName,
/// checked and completed into full targets, one variant each; the error
/// lists the accepted forms.
llvm::Expected<BuildTarget> parseTarget(llvm::StringRef name,
                                        ScheduleKind schedule);

/// Where the kernels of `target` run: an attn_model_device (model_abi.h).
int32_t modelDevice(const BuildTarget &target);

/// What the linears of `target` multiply: an attn_model_precision.
int32_t modelPrecision(const BuildTarget &target);

/// An error when `target.schedule()` cannot schedule `target` (GPU targets
/// have hand schedules only).
llvm::Error checkSchedule(const BuildTarget &target);

/// An error when a variant of `target` cannot compute at
/// `target.precision()`: bf16 needs AVX512_BF16 on every CPU variant (no
/// variant falls back to f32 silently) and runs on no GPU; neither does
/// int8.
llvm::Error checkPrecision(const BuildTarget &target);

/// Compiles `kernel` into object files beside `objectPath` (one per target
/// and a dispatching wrapper when there are several), defining `fnName` and
/// `fnName_argv`; returns the files. They come from `cache` when it holds
/// the same scheduled pipelines compiled by this Halide for these targets,
/// and go into it otherwise (`outcome` says which). Errors (including
/// Halide's) are reported as diagnostics at the kernel.
mlir::FailureOr<std::vector<std::string>>
compileKernel(mlir::attn::KernelOp kernel, const BuildTarget &target,
              llvm::StringRef fnName, llvm::StringRef objectPath,
              const ObjectCache &cache, CacheOutcome &outcome);

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
                                   const BuildTarget &target, KernelText what,
                                   llvm::StringRef path);

/// Compiles the one Halide runtime the kernels of a model share, for the
/// baseline target, or takes it from `cache` (`outcome` says which).
llvm::Error compileHalideRuntime(const BuildTarget &target,
                                 llvm::StringRef objectPath,
                                 const ObjectCache &cache,
                                 CacheOutcome &outcome);

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_KERNELCODEGEN_H
