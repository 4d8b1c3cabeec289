//===- compiler/passes/FuseQKV.cpp - one GEMM for Q, K and V --------------===//
#include "compiler/passes/Builders.h"
#include "compiler/passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFUSEQKVPASS
#include "compiler/passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct FuseProjections : OpRewritePattern<SdpaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SdpaOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<LinearOp, 3> projs;
    for (Value operand : {op.getQuery(), op.getKey(), op.getValue()}) {
      auto linear = operand.getDefiningOp<LinearOp>();
      if (!linear || !linear->hasOneUse())
        return rewriter.notifyMatchFailure(
            op, "q, k and v are not projections used only here");
      projs.push_back(linear);
    }
    Value input = projs[0].getInput();
    WeightLayout layout = projs[0].getLayout();
    bool biased = bool(projs[0].getBias());
    for (LinearOp p : projs)
      if (p.getInput() != input || p.getLayout() != layout ||
          bool(p.getBias()) != biased)
        return rewriter.notifyMatchFailure(
            op, "projections differ in input, layout or bias");
    if (layout == WeightLayout::panels)
      return rewriter.notifyMatchFailure(op, "weights already in panels");

    Location loc = op.getLoc();
    auto concat = [&](ArrayRef<Value> parts, int64_t dim) -> Value {
      auto type = cast<RankedTensorType>(parts[0].getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[dim] = 0;
      for (Value part : parts)
        shape[dim] += cast<RankedTensorType>(part.getType()).getDimSize(dim);
      return rewriter.create<ConcatOp>(
          loc, RankedTensorType::get(shape, type.getElementType()), parts,
          rewriter.getI64IntegerAttr(dim));
    };
    // Output features are dim 0 of an [out, in] weight, dim 1 of [in, out].
    int64_t outDim = layout == WeightLayout::out_in ? 0 : 1;
    Value w = concat(
        {projs[0].getWeight(), projs[1].getWeight(), projs[2].getWeight()},
        outDim);
    Value b;
    if (biased)
      b = concat({projs[0].getBias(), projs[1].getBias(), projs[2].getBias()},
                 0);
    Value qkv = buildLinear(rewriter, loc, input, w, b, layout);
    int64_t last = op.getQuery().getType().getRank() - 1;
    SmallVector<Value, 3> parts;
    int64_t offset = 0;
    for (LinearOp p : projs) {
      int64_t features = p.getOutFeatures();
      parts.push_back(buildSlice(rewriter, loc, qkv, last, offset, features));
      offset += features;
    }
    rewriter.modifyOpInPlace(op, [&] {
      op.getQueryMutable().assign(parts[0]);
      op.getKeyMutable().assign(parts[1]);
      op.getValueMutable().assign(parts[2]);
    });
    for (LinearOp p : projs)
      rewriter.eraseOp(p);
    return success();
  }
};

struct FuseQKV : attn::impl::AttnFuseQKVPassBase<FuseQKV> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseProjections>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
