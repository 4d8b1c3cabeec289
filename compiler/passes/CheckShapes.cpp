//===- compiler/passes/CheckShapes.cpp - symbolic dim agreement -----------===//
#include "compiler/passes/Passes.h"
#include "dialects/attn/Analysis/DimSymbols.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCHECKSHAPESPASS
#include "compiler/passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct CheckShapes : attn::impl::AttnCheckShapesPassBase<CheckShapes> {
  void runOnOperation() override {
    if (failed(DimSymbols::compute(getOperation())))
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
