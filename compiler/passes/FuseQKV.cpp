//===- compiler/passes/FuseQKV.cpp - one GEMM for Q, K and V --------------===//
#include "compiler/passes/Builders.h"
#include "compiler/passes/Passes.h"

#include "mlir/IR/IRMapping.h"
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
    // Q, K and V projected from one input (self-attention) become one GEMM;
    // K and V from one input apart from Q's (cross-attention: the memory)
    // become one GEMM of their own.
    SmallVector<OpOperand *, 3> operands = {
        &op.getQueryMutable(), &op.getKeyMutable(), &op.getValueMutable()};
    SmallVector<LinearOp, 3> projs;
    // The rotary embedding between a projection and the attention, if any:
    // it moves onto the fused projection's slice.
    SmallVector<RopeOp, 3> ropes;
    auto fusible = [&](ArrayRef<OpOperand *> group) {
      projs.clear();
      ropes.clear();
      for (OpOperand *operand : group) {
        Value projected = operand->get();
        auto rope = projected.getDefiningOp<RopeOp>();
        if (rope && rope->hasOneUse())
          projected = rope.getInput();
        else
          rope = nullptr;
        ropes.push_back(rope);
        auto linear = projected.getDefiningOp<LinearOp>();
        if (!linear || !linear->hasOneUse() ||
            linear.getLayout() == WeightLayout::panels)
          return false;
        if (!projs.empty() &&
            (linear.getInput() != projs[0].getInput() ||
             linear.getLayout() != projs[0].getLayout() ||
             bool(linear.getBias()) != bool(projs[0].getBias())))
          return false;
        // The concatenation is one tensor of one element type.
        auto elementType = [](Value v) {
          return v ? cast<RankedTensorType>(v.getType()).getElementType()
                   : Type();
        };
        if (!projs.empty() &&
            (elementType(linear.getWeight()) !=
                 elementType(projs[0].getWeight()) ||
             elementType(linear.getBias()) != elementType(projs[0].getBias())))
          return false;
        // 4-bit matrices' group scales join only for one group size.
        auto groups = [](LinearOp l) -> int64_t {
          auto s = l.getScales()
                       ? cast<RankedTensorType>(l.getScales().getType())
                       : RankedTensorType();
          if (!s || s.getRank() != 2)
            return 0;
          return s.getDimSize(l.getLayout() == WeightLayout::out_in ? 1 : 0);
        };
        if (!projs.empty() && groups(linear) != groups(projs[0]))
          return false;
        projs.push_back(linear);
      }
      return true;
    };
    ArrayRef<OpOperand *> group = operands;
    if (!fusible(group)) {
      group = group.drop_front();
      if (!fusible(group))
        return rewriter.notifyMatchFailure(
            op, "no two of q, k and v are projections of one input, in one "
                "layout and weight dtype, used only here");
    }
    Value input = projs[0].getInput();
    WeightLayout layout = projs[0].getLayout();
    bool biased = bool(projs[0].getBias());

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
    SmallVector<Value, 3> ws, bs, ss;
    for (LinearOp p : projs) {
      ws.push_back(p.getWeight());
      bs.push_back(p.getBias());
      ss.push_back(p.getScales());
    }
    Value w = concat(ws, outDim);
    Value b, s;
    if (biased)
      b = concat(bs, 0);
    // Quantized weights (one element type for all) keep their scales: per
    // output (i8), or per group of inputs of each output, in the weight's
    // layout (4-bit).
    if (projs[0].getScales())
      s = concat(ss, cast<RankedTensorType>(ss[0].getType()).getRank() == 2
                         ? outDim
                         : 0);
    Value fused = buildLinear(rewriter, loc, input, w, b, layout,
                              /*panelOutputs=*/0, s);
    int64_t last = cast<RankedTensorType>(fused.getType()).getRank() - 1;
    SmallVector<Value, 3> parts;
    int64_t offset = 0;
    for (auto [p, rope] : llvm::zip(projs, ropes)) {
      int64_t features = p.getOutFeatures();
      Value part = buildSlice(rewriter, loc, fused, last, offset, features);
      if (rope) {
        IRMapping mapping;
        mapping.map(rope.getInput(), part);
        part = rewriter.clone(*rope, mapping)->getResult(0);
      }
      parts.push_back(part);
      offset += features;
    }
    rewriter.modifyOpInPlace(op, [&] {
      for (auto [operand, part] : llvm::zip(group, parts))
        operand->set(part);
    });
    for (auto [p, rope] : llvm::zip(projs, ropes)) {
      if (rope)
        rewriter.eraseOp(rope);
      rewriter.eraseOp(p);
    }
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
