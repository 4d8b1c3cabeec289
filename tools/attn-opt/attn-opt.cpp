//===- tools/attn-opt/attn-opt.cpp - mlir-opt with the attn dialect -------===//
//
// Runs attn passes on .mlir files; the lit tests drive every pass through it.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"
#include "dialects/attn/IR/AttnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::attn::registerAttnPasses();
  mlir::attn::registerAttnPipeline();

  mlir::DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attn optimizer driver\n", registry));
}
