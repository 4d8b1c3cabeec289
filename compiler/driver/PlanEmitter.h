//===- compiler/driver/PlanEmitter.h - plan.c source ------------*- C++ -*-===//
//
// Writes the C source that defines a model library's descriptor tables
// (model_abi.h) and its glue to the Halide kernels: run_kernel turns the
// runtime's views into halide_buffer_t and calls each kernel's `_argv` entry.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_PLANEMITTER_H
#define ATTNC_COMPILER_DRIVER_PLANEMITTER_H

#include "compiler/driver/Plan.h"

#include <string>

namespace attnc::driver {

/// The symbol the weights object defines (hidden), 64-byte aligned.
constexpr llvm::StringLiteral kWeightsSymbol = "attn_weights";

struct PlanSourceInfo {
  std::string compilerVersion;
  std::string halideTarget;
  uint64_t weightsSize = 0; ///< 0: the library embeds no weights
};

/// plan.c for `plan`; it includes "attn/model_abi.h" and "HalideRuntime.h".
std::string emitPlanSource(const Plan &plan, const PlanSourceInfo &info);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_PLANEMITTER_H
