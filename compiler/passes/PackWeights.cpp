//===- compiler/passes/PackWeights.cpp - weights in kernel layout ---------===//
#include "compiler/passes/Builders.h"
#include "compiler/passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPACKWEIGHTSPASS
#include "compiler/passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct TransposeToInOut : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLayout() == WeightLayout::in_out)
      return rewriter.notifyMatchFailure(op, "already [in, out]");
    auto wtype = op.getWeight().getType();
    auto transposed = RankedTensorType::get(
        {wtype.getDimSize(1), wtype.getDimSize(0)}, wtype.getElementType());
    Value w = rewriter.create<TransposeOp>(op.getLoc(), transposed,
                                           op.getWeight());
    rewriter.replaceOp(op, buildLinear(rewriter, op.getLoc(), op.getInput(), w,
                                       op.getBias(), WeightLayout::in_out));
    return success();
  }
};

struct PackWeights : attn::impl::AttnPackWeightsPassBase<PackWeights> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<TransposeToInOut>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
