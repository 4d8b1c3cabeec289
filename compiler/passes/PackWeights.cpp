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
/// i8 and 4-bit weights, which `quantized-out-in` keeps [out, in].
bool isQuantized(LinearOp op) {
  return isa<IntegerType>(op.getWeight().getType().getElementType());
}

/// The transposed weight of `op` and its scales (a 4-bit matrix's group
/// scales follow it; an i8 matrix's per-output ones stay).
std::pair<Value, Value> transposeWeight(LinearOp op,
                                        PatternRewriter &rewriter) {
  auto wtype = op.getWeight().getType();
  auto transposed = RankedTensorType::get(
      {wtype.getDimSize(1), wtype.getDimSize(0)}, wtype.getElementType());
  Value w =
      rewriter.create<TransposeOp>(op.getLoc(), transposed, op.getWeight());
  Value scales = op.getScales();
  auto stype =
      scales ? cast<RankedTensorType>(scales.getType()) : RankedTensorType();
  if (stype && stype.getRank() == 2) {
    scales = rewriter.create<TransposeOp>(
        op.getLoc(),
        RankedTensorType::get({stype.getDimSize(1), stype.getDimSize(0)},
                              stype.getElementType()),
        scales);
  }
  return {w, scales};
}

struct TransposeToInOut : OpRewritePattern<LinearOp> {
  TransposeToInOut(MLIRContext *context, bool quantizedOutIn)
      : OpRewritePattern(context), quantizedOutIn(quantizedOutIn) {}

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLayout() != WeightLayout::out_in)
      return rewriter.notifyMatchFailure(op, "not [out, in]");
    if (quantizedOutIn && isQuantized(op))
      return rewriter.notifyMatchFailure(op, "quantized, kept [out, in]");
    // A 4-bit matrix's group scales follow it: [in / G, out], so a GEMM's
    // vector of outputs reads its scales contiguously.
    auto [w, scales] = transposeWeight(op, rewriter);
    rewriter.replaceOp(op, buildLinear(rewriter, op.getLoc(), op.getInput(), w,
                                       op.getBias(), WeightLayout::in_out,
                                       /*panelOutputs=*/0, scales));
    return success();
  }

  bool quantizedOutIn;
};

/// Inputs per block of the int8 activations' quantization
/// (codegen/lowerings/Int8Linear.h's kActivationBlock), which a packed i8
/// matrix's inputs must fill whole.
constexpr int64_t kActivationBlock = 32;

/// `int8-panel-width` (`width` > 0): whether `op`'s i8 or 4-bit matrix is
/// packed into quads of bytes, for the int8 GEMM (lowerings/Int8Gemm.cpp).
/// A 4-bit matrix's groups must hold whole activation blocks, so that each
/// block has one scale per output.
bool packsIntoQuads(LinearOp op, int64_t width) {
  Type element = op.getWeight().getType().getElementType();
  int64_t in = op.getInFeatures();
  if (width <= 0 || op.getLayout() == WeightLayout::panels ||
      !element.isInteger(8) || ShapedType::isDynamic(in) ||
      in % kActivationBlock != 0)
    return false;
  if (element.isSignlessInteger(8))
    return true;
  auto stype = cast<RankedTensorType>(op.getScales().getType());
  int64_t groups =
      stype.getDimSize(op.getLayout() == WeightLayout::out_in ? 1 : 0);
  return (in / groups) % kActivationBlock == 0;
}

/// `int8-panel-width`: an i8 or 4-bit matrix, [out, in] (transposed first)
/// or [in, out], packed into quads of bytes, [ceil(out / W), bytes / 4, W,
/// 4] (a 4-bit byte holds two inputs, so a quad eight), an i8 matrix's
/// per-output scales unchanged, a 4-bit one's group scales packed as its
/// bytes are, [ceil(out / W), in / G, W]: a panel's scales lie together, as
/// its bytes do, where [in / G, out] put each block's W scales a row of all
/// the outputs after the last (12 KiB for GPT-2's MLP, 196 KiB for its
/// head). GPT-2 small's q4-a8 decode on Zen 4 took 0.91 of its time for
/// that with a GEMV's panels read at once, 0.67 with them read in turn.
struct QuantizedToQuads : OpRewritePattern<LinearOp> {
  QuantizedToQuads(MLIRContext *context, int64_t width)
      : OpRewritePattern(context), width(width) {}

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (!packsIntoQuads(op, width))
      return rewriter.notifyMatchFailure(
          op, "not an i8 or 4-bit matrix of whole activation blocks");
    Value w = op.getWeight(), scales = op.getScales();
    if (op.getLayout() == WeightLayout::out_in)
      std::tie(w, scales) = transposeWeight(op, rewriter);
    auto wtype = cast<RankedTensorType>(w.getType());
    int64_t bytes = wtype.getDimSize(0), out = op.getOutFeatures();
    auto packed =
        RankedTensorType::get({(out + width - 1) / width, bytes / 4, width, 4},
                              wtype.getElementType());
    Value quads = rewriter.create<PackPanelsOp>(
        op.getLoc(), packed, w, rewriter.getI64IntegerAttr(width));
    if (auto stype = cast<RankedTensorType>(scales.getType());
        stype.getRank() == 2)
      scales = rewriter.create<PackPanelsOp>(
          op.getLoc(),
          RankedTensorType::get(
              {packed.getDimSize(0), stype.getDimSize(0), width},
              stype.getElementType()),
          scales, rewriter.getI64IntegerAttr(width));
    rewriter.replaceOp(op, buildLinear(rewriter, op.getLoc(), op.getInput(),
                                       quads, op.getBias(),
                                       WeightLayout::panels, out, scales));
    return success();
  }

  int64_t width;
};

/// `quantized-out-in`: an [in, out] quantized matrix (GPT-2's Conv1D)
/// transposed to [out, in], a row of bytes per output, as int8 dot
/// products read it (lowerings/Int8Linear.cpp).
struct QuantizedToOutIn : OpRewritePattern<LinearOp> {
  QuantizedToOutIn(MLIRContext *context, int64_t quadWidth)
      : OpRewritePattern(context), quadWidth(quadWidth) {}

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLayout() != WeightLayout::in_out || !isQuantized(op))
      return rewriter.notifyMatchFailure(op, "not a quantized [in, out]");
    if (packsIntoQuads(op, quadWidth))
      return rewriter.notifyMatchFailure(op, "packed into quads");
    auto [w, scales] = transposeWeight(op, rewriter);
    rewriter.replaceOp(op, buildLinear(rewriter, op.getLoc(), op.getInput(), w,
                                       op.getBias(), WeightLayout::out_in,
                                       /*panelOutputs=*/0, scales));
    return success();
  }

  int64_t quadWidth;
};

struct InOutToPanels : OpRewritePattern<LinearOp> {
  InOutToPanels(MLIRContext *context, int64_t width, bool bf16Pairs,
                bool quantizedOutIn)
      : OpRewritePattern(context), width(width), bf16Pairs(bf16Pairs),
        quantizedOutIn(quantizedOutIn) {}

  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLayout() != WeightLayout::in_out)
      return rewriter.notifyMatchFailure(op, "not [in, out]");
    if (quantizedOutIn && isQuantized(op))
      return rewriter.notifyMatchFailure(op, "quantized, kept [out, in]");
    auto wtype = op.getWeight().getType();
    int64_t in = wtype.getDimSize(0), out = wtype.getDimSize(1);
    Type element = wtype.getElementType();
    // Quantized and f16 weights keep their own GEMMs; an odd number of
    // inputs has no pairs.
    bool pairs =
        bf16Pairs && (element.isF32() || element.isBF16()) && in % 2 == 0;
    // A last panel padded with zeros; fewer outputs than a panel would be
    // mostly padding, which only bf16 pairs take (--precision=bf16 means
    // every linear's products in bf16, however narrow).
    if (out % width != 0 && out < width && !pairs)
      return rewriter.notifyMatchFailure(op, "fewer outputs than a panel");
    int64_t panels = (out + width - 1) / width;
    auto packed = RankedTensorType::get({panels, in, width}, element);
    if (pairs)
      packed = RankedTensorType::get({panels, in / 2, width, 2},
                                     rewriter.getBF16Type());
    Value w = rewriter.create<PackPanelsOp>(op.getLoc(), packed,
                                            op.getWeight(),
                                            rewriter.getI64IntegerAttr(width));
    rewriter.replaceOp(op, buildLinear(rewriter, op.getLoc(), op.getInput(), w,
                                       op.getBias(), WeightLayout::panels, out,
                                       op.getScales()));
    return success();
  }

  int64_t width;
  bool bf16Pairs;
  bool quantizedOutIn;
};

struct PackWeights : attn::impl::AttnPackWeightsPassBase<PackWeights> {
  using AttnPackWeightsPassBase::AttnPackWeightsPassBase;

  void runOnOperation() override {
    if (panelWidth < 0) {
      getOperation().emitError("attn-pack-weights: panel-width must be >= 0");
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<TransposeToInOut>(&getContext(), quantizedOutIn);
    if (int8PanelWidth < 0 || (int8PanelWidth > 0 && !quantizedOutIn)) {
      getOperation().emitError("attn-pack-weights: int8-panel-width must be "
                               ">= 0 and needs quantized-out-in");
      return signalPassFailure();
    }
    if (quantizedOutIn) {
      patterns.add<QuantizedToOutIn>(&getContext(), int8PanelWidth);
      patterns.add<QuantizedToQuads>(&getContext(), int8PanelWidth);
    }
    if (bf16Pairs && panelWidth == 0) {
      getOperation().emitError("attn-pack-weights: bf16-pairs needs a "
                               "panel-width");
      return signalPassFailure();
    }
    if (panelWidth > 0)
      patterns.add<InOutToPanels>(&getContext(), panelWidth, bf16Pairs,
                                  quantizedOutIn);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
