//===- compiler/driver/WeightFolder.h - model weights section ---*- C++ -*-===//
//
// attnc --weights: checks every attn.weight against the model's safetensors
// file and evaluates the weight expressions (weight, transpose, slice,
// concat, scale, pack_panels) that feed kernels into the constants block
// embedded in the model library. (Without --weights, WeightInit.h compiles
// the same expressions into kernels the library runs at load.)
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_WEIGHTFOLDER_H
#define ATTNC_COMPILER_DRIVER_WEIGHTFOLDER_H

#include "compiler/driver/Plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::driver {

/// The constants block: float32 row-major constants at 64-byte aligned
/// offsets. Each kernel operand computed from weights is a CONSTANT at its
/// offset; equal constants share one.
struct WeightSection {
  std::vector<uint8_t> blob;
  ConstantMap constants;
  /// The file's tensors the model declares no weight for (a checkpoint may
  /// hold a pooler, a head, buffers), in file order; `attnc --verbose` lists
  /// them.
  std::vector<std::string> unusedTensors;
  size_t fileTensors = 0;
};

/// Reads `weightsPath` and folds `func`'s weight expressions. A missing,
/// mistyped or mis-shaped weight is reported at its attn.weight (every one of
/// them, not just the first); an unreadable file at an unknown location.
mlir::FailureOr<WeightSection> foldWeights(mlir::func::FuncOp func,
                                           llvm::StringRef weightsPath);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_WEIGHTFOLDER_H
