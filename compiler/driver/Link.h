//===- compiler/driver/Link.h - model library linking -----------*- C++ -*-===//
//
// Compiles a plan's kernels and links them with one Halide runtime, the plan
// tables and, when embedded, the constants into a shared library that exports
// only its descriptor function (model_abi.h). Intermediate files live in a
// private temporary directory; the library appears at its path complete or
// not at all. The C compiler that links is `cc` from PATH, or $ATTNC_CC.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_LINK_H
#define ATTNC_COMPILER_DRIVER_LINK_H

#include "compiler/codegen/KernelCodegen.h"
#include "compiler/driver/Plan.h"

namespace attnc::driver {

struct LinkOptions {
  schedules::BuildTarget target;
  std::string outputPath;
  std::string compilerVersion;
  /// Say on stderr how many distinct kernels were compiled.
  bool verbose = false;
  /// Where compiled kernels and Halide's runtime are kept between builds.
  codegen::ObjectCache cache;
};

/// Builds the library; `constants` is the embedded constants block, empty
/// when the "init" entry computes it at load. Kernel errors are reported at
/// their attn.kernel, everything else (files, the C compiler and linker with
/// their output) at an unknown location in `context`.
mlir::LogicalResult linkModel(mlir::MLIRContext *context, const Plan &plan,
                              llvm::ArrayRef<uint8_t> constants,
                              const LinkOptions &options);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_LINK_H
