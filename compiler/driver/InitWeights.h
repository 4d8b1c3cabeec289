//===- compiler/driver/InitWeights.h - random weights -----------*- C++ -*-===//
//
// `attnc --init-weights`: a deterministic random safetensors file holding
// every weight a model declares, so a model can be compiled, run and tested
// before it has trained weights.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_INITWEIGHTS_H
#define ATTNC_COMPILER_DRIVER_INITWEIGHTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace attnc::driver {

/// Writes one F32 tensor per distinct attn.weight name of `func` to `path`
/// (atomically). Each tensor depends only on `seed` and its name and shape,
/// drawn as the ops that read it say (mlir::attn::getWeightInit):
///   - matrices: uniform in +-1/sqrt(fan_in), fan_in the dim the linear,
///     attention or embedding contracts (else the last dim, as [out, in]);
///   - a norm's scale: uniform in 1 +- 0.1;
///   - other vectors (biases, norm shifts, Gemma's `1 + weight` scales):
///     uniform in +-0.02.
/// Reports a weight declared twice with two shapes at its second use.
mlir::LogicalResult writeRandomWeights(mlir::func::FuncOp func,
                                       llvm::StringRef path, uint64_t seed);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_INITWEIGHTS_H
