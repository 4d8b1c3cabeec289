//===- compiler/driver/PlanEmitter.h - plan.c source ------------*- C++ -*-===//
//
// Writes the C source that defines a model library's descriptor tables
// (model_abi.h), its kernels' `_argv` entries in kernel order, and its
// descriptor, around the glue to the Halide kernels that every library
// shares: the files of compiler/driver/glue/, pasted in as they are.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_PLANEMITTER_H
#define ATTNC_COMPILER_DRIVER_PLANEMITTER_H

#include "compiler/driver/Plan.h"

#include <string>

namespace attnc::driver {

/// The symbol the embedded constants object defines (hidden), 64-byte
/// aligned.
constexpr llvm::StringLiteral kConstantsSymbol = "attn_constants";

struct PlanSourceInfo {
  std::string compilerVersion;
  /// The Halide targets, comma-separated, most capable first.
  std::string halideTarget;
  /// The constants block is linked in (kConstantsSymbol); otherwise the
  /// runtime allocates it and the "init" entry fills it.
  bool embedsConstants = false;
  /// The kernels take bf16 and f16 tensors as uint16 (codegen/HalfBits.h).
  bool halfAsBits = false;
  /// Where the kernels run (attn_model_device): on a GPU the library gives
  /// the runtime its device memory functions.
  int32_t device = 0;
  /// What the linears multiply (attn_model_precision).
  int32_t precision = 0;
};

/// plan.c for `plan`; it includes "attn/model_abi.h" and Halide's runtime
/// headers.
std::string emitPlanSource(const Plan &plan, const PlanSourceInfo &info);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_PLANEMITTER_H
