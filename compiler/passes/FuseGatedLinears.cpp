//===- compiler/passes/FuseGatedLinears.cpp - one GEMM for gate and up ----===//
#include "compiler/passes/Builders.h"
#include "compiler/passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFUSEGATEDLINEARSPASS
#include "compiler/passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The linear defining `v` when `v` is its only use; null otherwise.
LinearOp soleLinear(Value v) {
  auto linear = v.getDefiningOp<LinearOp>();
  if (!linear || !linear->hasOneUse() ||
      linear.getLayout() == WeightLayout::panels)
    return nullptr;
  return linear;
}

/// `v` = act(linear(..)) with act an elementwise function of one tensor used
/// only here: returns act and sets `linear`.
Operation *gateActivation(Value v, LinearOp &linear) {
  Operation *act = v.getDefiningOp();
  if (!act || !act->hasOneUse() || act->getNumOperands() != 1 ||
      !isa<BuiltinFunctionOpInterface>(act))
    return nullptr;
  auto fusion = dyn_cast<FusionOpInterface>(act);
  if (!fusion || fusion.getFusionRole() != FusionRole::Epilogue)
    return nullptr;
  linear = soleLinear(act->getOperand(0));
  return linear ? act : nullptr;
}

struct FuseGatedLinears : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    LinearOp gate, up;
    Operation *act = gateActivation(op.getLhs(), gate);
    up = soleLinear(op.getRhs());
    if (!act || !up) {
      act = gateActivation(op.getRhs(), gate);
      up = soleLinear(op.getLhs());
    }
    if (!act || !up)
      return rewriter.notifyMatchFailure(
          op, "not act(linear(x, gate)) * linear(x, up) with each used once");
    if (gate.getInput() != up.getInput() ||
        gate.getLayout() != up.getLayout() ||
        gate.getWeight().getType() != up.getWeight().getType() ||
        (gate.getScales() &&
         gate.getScales().getType() != up.getScales().getType()) ||
        bool(gate.getBias()) != bool(up.getBias()) ||
        (gate.getBias() &&
         gate.getBias().getType() != up.getBias().getType()) ||
        op.getType() != gate.getType())
      return rewriter.notifyMatchFailure(
          op, "gate and up differ in input, layout, shape, dtype or bias");

    Location loc = op.getLoc();
    auto interleave = [&](Value a, Value b, int64_t dim) -> Value {
      auto type = cast<RankedTensorType>(a.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[dim] *= 2;
      return rewriter.create<InterleaveOp>(
          loc, RankedTensorType::get(shape, type.getElementType()),
          ValueRange{a, b}, rewriter.getI64IntegerAttr(dim));
    };
    // Output features are dim 0 of an [out, in] weight, dim 1 of [in, out].
    int64_t outDim = gate.getLayout() == WeightLayout::out_in ? 0 : 1;
    Value w = interleave(gate.getWeight(), up.getWeight(), outDim);
    Value b;
    if (gate.getBias())
      b = interleave(gate.getBias(), up.getBias(), 0);
    // Quantized weights (gate and up share the type) keep their scales: per
    // output (i8), or per group of inputs of each output, in the weight's
    // layout (4-bit).
    Value s;
    if (gate.getScales())
      s = interleave(
          gate.getScales(), up.getScales(),
          cast<RankedTensorType>(gate.getScales().getType()).getRank() == 2
              ? outDim
              : 0);
    Value fused = buildLinear(rewriter, loc, gate.getInput(), w, b,
                              gate.getLayout(), /*panelOutputs=*/0, s);
    StringRef name = act->getName().stripDialect();
    rewriter.replaceOpWithNewOp<GluOp>(op, op.getType(), fused,
                                       rewriter.getStringAttr(name));
    rewriter.eraseOp(act);
    rewriter.eraseOp(gate);
    rewriter.eraseOp(up);
    return success();
  }
};

struct FuseGatedLinearsPass
    : attn::impl::AttnFuseGatedLinearsPassBase<FuseGatedLinearsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGatedLinears>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
