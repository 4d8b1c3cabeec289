//===- compiler/driver/EmbedWeights.h - weights built in --------*- C++ -*-===//
//
// attnc --weights: checks every attn.weight against the model's safetensors
// file, then computes the constants block to embed in the model library by
// running the model's own "init" kernels (WeightInit.h) on the file at build
// time: they are compiled for the host into a private library whose "run"
// writes each constant, which libattnrt loads with the file and runs. So
// weight expressions have one implementation, the kernels a library that
// reads its weights at load runs, and both kinds of library compute the same
// bits.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_EMBEDWEIGHTS_H
#define ATTNC_COMPILER_DRIVER_EMBEDWEIGHTS_H

#include "compiler/codegen/ObjectCache.h"
#include "compiler/driver/WeightInit.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::driver {

/// What the model reads of its weights file.
struct WeightsFileUse {
  /// The file's tensors the model declares no weight for (a checkpoint may
  /// hold a pooler, a head, buffers), in file order; `attnc --verbose` lists
  /// them.
  std::vector<std::string> unusedTensors;
  size_t fileTensors = 0;
};

/// Checks every attn.weight of `funcs` against `weightsPath`, reporting a
/// missing, mistyped or mis-shaped weight at its attn.weight (every one of
/// them, not just the first) and an unreadable file at an unknown location.
mlir::FailureOr<WeightsFileUse>
checkWeightsFile(llvm::ArrayRef<mlir::func::FuncOp> funcs,
                 llvm::StringRef weightsPath);

/// The constants block of an embedded library: the init constants at the
/// offsets OutlinedInit gave them, then every weight a kernel reads as it is.
struct EmbeddedWeights {
  std::vector<uint8_t> blob;
  /// How the model's entries read each weight expression: all constants.
  ConstantMap constants;
};

/// Runs `init` (outlined from the model's entries) on the checked file at
/// `weightsPath` and lays out the constants block. Errors are reported at an
/// unknown location in `context`; `compilerVersion` and `cache` as
/// LinkOptions' (Link.h).
mlir::FailureOr<EmbeddedWeights>
embedWeights(mlir::MLIRContext *context, const OutlinedInit &init,
             llvm::StringRef weightsPath, llvm::StringRef compilerVersion,
             const codegen::ObjectCache &cache);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_EMBEDWEIGHTS_H
