//===- compiler/passes/DecomposeAttention.cpp - self_attention -> sdpa ----===//
#include "compiler/passes/Builders.h"
#include "compiler/passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSEATTENTIONPASS
#include "compiler/passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct DecomposeSelfAttention : OpRewritePattern<SelfAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SelfAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    Value wq = op.getQWeight(), bq = op.getQBias(), sq = op.getQScales();
    Value wk = op.getKWeight(), bk = op.getKBias(), sk = op.getKScales();
    Value wv = op.getVWeight(), bv = op.getVBias(), sv = op.getVScales();
    int64_t headDim = op.getHeadDimension();
    // Queries of heads * head_dim features (d_model unless head_dim says
    // otherwise), keys and values of kv_heads * head_dim.
    int64_t d = op.getHeads() * headDim;
    int64_t kvd = op.getNumKvHeads() * headDim;
    // A packed [d + 2 kvd, D] projection is cut into its Q, K and V rows; the
    // slices are weight expressions, so later passes treat all three alike.
    if (Value w = op.getQkvWeight()) {
      Value b = op.getQkvBias(), s = op.getQkvScales();
      if (op.getQkvPerHead()) {
        // Rows [heads, 3, head_dim] (GPT-NeoX): part t of head h starts at
        // row (3 h + t) head_dim; each part joins its heads' slices.
        auto gather = [&](Value t, int64_t part) -> Value {
          SmallVector<Value> rows;
          for (int64_t h = 0; h < op.getHeads(); ++h)
            rows.push_back(buildSlice(rewriter, loc, t, 0,
                                      (3 * h + part) * headDim, headDim));
          auto type = cast<RankedTensorType>(t.getType());
          SmallVector<int64_t> shape(type.getShape());
          shape[0] = d;
          return rewriter.create<ConcatOp>(
              loc, RankedTensorType::get(shape, type.getElementType()), rows,
              rewriter.getI64IntegerAttr(0));
        };
        wq = gather(w, 0);
        wk = gather(w, 1);
        wv = gather(w, 2);
        if (b) {
          bq = gather(b, 0);
          bk = gather(b, 1);
          bv = gather(b, 2);
        }
        if (s) {
          sq = gather(s, 0);
          sk = gather(s, 1);
          sv = gather(s, 2);
        }
      } else {
        wq = buildSlice(rewriter, loc, w, 0, 0, d);
        wk = buildSlice(rewriter, loc, w, 0, d, kvd);
        wv = buildSlice(rewriter, loc, w, 0, d + kvd, kvd);
        if (b) {
          bq = buildSlice(rewriter, loc, b, 0, 0, d);
          bk = buildSlice(rewriter, loc, b, 0, d, kvd);
          bv = buildSlice(rewriter, loc, b, 0, d + kvd, kvd);
        }
        if (s) {
          sq = buildSlice(rewriter, loc, s, 0, 0, d);
          sk = buildSlice(rewriter, loc, s, 0, d, kvd);
          sv = buildSlice(rewriter, loc, s, 0, d + kvd, kvd);
        }
      }
    }
    auto layout = WeightLayout::out_in;
    Value q = buildLinear(rewriter, loc, x, wq, bq, layout, 0, sq);
    Value k = buildLinear(rewriter, loc, x, wk, bk, layout, 0, sk);
    Value v = buildLinear(rewriter, loc, x, wv, bv, layout, 0, sv);
    if (std::optional<RopeStyle> style = op.getRope()) {
      // Positions 0 .. S-1 of the input's sequence dim; when decoding, each
      // sequence's after the tokens already in its caches (P_b .. P_b + S-1).
      auto xt = cast<RankedTensorType>(x.getType());
      int64_t seq = xt.getRank() - 2;
      ArrayRef<int64_t> dims = xt.getShape().take_front(seq + 1);
      if (!op.getPosition())
        dims = dims.take_back();
      Value positions = rewriter.create<PositionsOp>(
          loc, RankedTensorType::get(dims, rewriter.getI32Type()), x,
          rewriter.getI64IntegerAttr(seq), op.getPosition(),
          rewriter.getI64IntegerAttr(0));
      float theta = op.getRopeTheta() ? op.getRopeTheta()->convertToFloat()
                                      : kDefaultRopeTheta;
      auto rotate = [&](Value t) -> Value {
        auto rope = rewriter.create<RopeOp>(
            loc, t.getType(), t, positions, rewriter.getI64IntegerAttr(headDim),
            RopeStyleAttr::get(rewriter.getContext(), *style),
            rewriter.getF32FloatAttr(theta), op.getRopeDimsAttr(),
            op.getRopeScalingAttr(), op.getRopeFactorAttr(),
            op.getRopeLowFreqFactorAttr(), op.getRopeHighFreqFactorAttr(),
            op.getRopeOriginalMaxAttr());
        return rope.getResult();
      };
      q = rotate(q);
      k = rotate(k);
    }
    // The caches hold rotated keys, as Hugging Face's do.
    Value position = op.getPosition();
    Value keyScale, valueScale;
    if (Value cache = op.getKeyCache()) {
      // Keys and values go into the caches; a decode attends over the
      // caches, a prefill over its own keys (the same rows). An i8 cache's
      // rows are quantized per key/value head, and their scales written
      // into the scale states.
      IntegerAttr groups;
      if (op.getKeyCacheScale())
        groups = rewriter.getI64IntegerAttr(op.getNumKvHeads());
      auto write = [&](Value into, Value rows, bool scales) -> Value {
        return rewriter.create<CacheWriteOp>(
            loc, into.getType(), into, rows, position, groups,
            scales ? rewriter.getUnitAttr() : UnitAttr());
      };
      Value keys = write(cache, k, false);
      Value values = write(op.getValueCache(), v, false);
      if (groups) {
        keyScale = write(op.getKeyCacheScale(), k, true);
        valueScale = write(op.getValueCacheScale(), v, true);
      }
      if (position) {
        k = keys;
        v = values;
      } else {
        keyScale = valueScale = Value();
      }
    }
    Type weights = op.getWeights() ? op.getWeights().getType() : Type();
    IntegerAttr kvHeads = op.getNumKvHeads() != op.getHeads()
                              ? op.getKvHeadsAttr()
                              : IntegerAttr();
    auto xt = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> heads(xt.getShape());
    heads.back() = d;
    auto sdpa = rewriter.create<SdpaOp>(
        loc, RankedTensorType::get(heads, xt.getElementType()), weights, q, k,
        v, op.getKeyLengths(), op.getBias(), /*score=*/Value(),
        /*query_offsets=*/position, keyScale, valueScale, op.getHeadsAttr(),
        kvHeads, op.getMaskAttr(),
        rewriter.getF32FloatAttr(op.getEffectiveScale()), op.getSoftcapAttr());
    SmallVector<Value, 2> results{
        buildLinear(rewriter, loc, sdpa.getResult(), op.getOutWeight(),
                    op.getOutBias(), layout, 0, op.getOutScales())};
    if (weights)
      results.push_back(sdpa.getWeights());
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct DecomposeAttention
    : attn::impl::AttnDecomposeAttentionPassBase<DecomposeAttention> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeSelfAttention>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
