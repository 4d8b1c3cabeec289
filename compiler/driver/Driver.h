//===- compiler/driver/Driver.h - model to library --------------*- C++ -*-===//
//
// The back half of attnc: a module after the attn pipeline in, one model
// shared library out, which reads its weights at load or embeds them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_DRIVER_H
#define ATTNC_COMPILER_DRIVER_DRIVER_H

#include "compiler/codegen/KernelCodegen.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attnc::driver {

/// "attnc X.Y.Z", as `--version` prints it and every library records it.
llvm::StringRef getVersionString();

/// The model function of `module`: `@model`, or else its only public
/// function without an `attn.entry`.
mlir::FailureOr<mlir::func::FuncOp> getModelFunction(mlir::ModuleOp module);
/// The model function, then the other entries' (`attn.entry`: a decoder's
/// "prefill" and "decode").
mlir::FailureOr<llvm::SmallVector<mlir::func::FuncOp>>
getEntryFunctions(mlir::ModuleOp module);

struct CompileOptions {
  explicit CompileOptions(schedules::BuildTarget target)
      : target(std::move(target)) {}

  /// A safetensors file to fold and embed; empty: the library reads its
  /// weights at load.
  std::string weightsPath;
  schedules::BuildTarget target;
  std::string outputPath;
  /// The model's name when its function has no `attn.model_name`.
  std::string defaultModelName;
  /// Report what was compiled on stderr (attnc --verbose).
  bool verbose = false;
  /// Where compiled kernels and Halide's runtime are kept between builds
  /// (none by default).
  codegen::ObjectCache cache;
};

/// Plans and links `module` (after the attn pipeline) into
/// `options.outputPath`, folding the weights first when it embeds them. With
/// weights read at load, the module gains the @attn_init function. Errors are
/// MLIR diagnostics: at the op they concern, or at an unknown location for
/// files and tools. On failure no file is left at the output path, not even an
/// older library, so a build system never takes a stale library for a fresh
/// one.
mlir::LogicalResult compileModel(mlir::ModuleOp module,
                                 const CompileOptions &options);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_DRIVER_H
