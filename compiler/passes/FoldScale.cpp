//===- compiler/passes/FoldScale.cpp - scale into the query weights -------===//
#include "compiler/passes/Builders.h"
#include "compiler/passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFOLDSCALEPASS
#include "compiler/passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct FoldScaleIntoQuery : OpRewritePattern<SdpaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    APFloat scale = op.getScale();
    if (scale.convertToFloat() == 1.0f)
      return rewriter.notifyMatchFailure(op, "scale is already 1");
    if (op.getScore())
      return rewriter.notifyMatchFailure(
          op, "an additive score is not linear in the query");
    Value projected = op.getQuery();
    // Rotary embeddings are linear in the query: rope(s q) == s rope(q).
    if (auto rope = projected.getDefiningOp<RopeOp>();
        rope && rope->hasOneUse())
      projected = rope.getInput();
    auto query = projected.getDefiningOp<LinearOp>();
    if (!query || !query->hasOneUse())
      return rewriter.notifyMatchFailure(
          op, "query is not a projection used only here");
    // A bf16 or f16 weight times s would be rounded back to its precision
    // (or widened, doubling its bytes): either way the query would no longer
    // be x W as PyTorch computes it from the same checkpoint, so the scale
    // stays in the attention, applied in f32 to the scores.
    auto isF32 = [](Value v) {
      return !v || cast<RankedTensorType>(v.getType()).getElementType().isF32();
    };
    if (!isF32(query.getWeight()) || !isF32(query.getBias()))
      return rewriter.notifyMatchFailure(
          op, "query weights are not f32: scaling them would round again");
    // softmax(s * (xW + b) K^T) == softmax((x(sW) + sb) K^T).
    auto factor = rewriter.getF32FloatAttr(scale.convertToFloat());
    Location loc = query.getLoc();
    rewriter.setInsertionPoint(query);
    Value w = rewriter.create<ScaleOp>(loc, query.getWeight(), factor);
    Value b = query.getBias();
    if (b)
      b = rewriter.create<ScaleOp>(loc, b, factor);
    Value q = buildLinear(rewriter, loc, query.getInput(), w, b,
                          query.getLayout(), query.getOutFeatures());
    rewriter.replaceOp(query, q);
    rewriter.modifyOpInPlace(
        op, [&] { op.setScaleAttr(rewriter.getF32FloatAttr(1.0f)); });
    return success();
  }
};

struct FoldScale : attn::impl::AttnFoldScalePassBase<FoldScale> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldScaleIntoQuery>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
