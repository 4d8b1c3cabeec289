//===- compiler/codegen/lowerings/Positions.cpp - position encodings ------===//
#include "compiler/codegen/Lowering.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

/// 0, 1, ... over the extent of one dim of the input (never read), [n] or
/// along its dims 0 .. dim, plus `start`; from each sequence's offset when
/// there is one.
static LogicalResult lowerPositions(PositionsOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  size_t d = in.extents.size() - 1 - op.getDim();
  size_t rank = op.getType().getRank();
  std::vector<Var> v = b.vars(rank);
  Expr position = v[0] + int(op.getStart());
  if (Value offset = op.getOffset())
    position += b.get(offset).func(v[rank - 1]);
  Func out(b.name("positions"));
  out(v) = position;
  std::vector<Expr> extents(in.extents.begin() + d,
                            in.extents.begin() + d + rank);
  b.define(op.getResult(), {out, extents});
  return success();
}

/// sin / cos of p * 10000^(-2i/D), the frequencies computed in double and
/// rounded once (PyTorch's tutorial computes them in float: a difference of
/// at most an ulp of each frequency).
static LogicalResult lowerSinusoidal(SinusoidalOp op, KernelBuilder &b) {
  const Tensor &positions = b.get(op.getPositions());
  int features = int(op.getType().getShape().back());
  Buffer<float> frequency(std::vector<int>{features / 2}, b.name("frequency"));
  for (int i = 0; i < features / 2; ++i)
    frequency(i) = float(std::exp(-2.0 * i * std::log(10000.0) / features));
  size_t rank = positions.extents.size() + 1;
  std::vector<Var> v = b.vars(rank);
  std::vector<Expr> at(v.begin() + 1, v.end());
  Expr angle = Halide::cast<float>(positions.func(at)) * frequency(v[0] / 2);
  Func out(b.name("sinusoidal"));
  out(v) = select(v[0] % 2 == 0, sin(angle), cos(angle));
  std::vector<Expr> extents = {features};
  extents.insert(extents.end(), positions.extents.begin(),
                 positions.extents.end());
  b.define(op.getResult(), {out, extents});
  return success();
}

/// Rotary embeddings of every head: out = x cos + rotate(x) sin, with
/// inv_freq, the angle, cos and sin in f32 as Hugging Face's
/// LlamaRotaryEmbedding and apply_rotary_pos_emb compute them (inv_freq from
/// computeRopeInvFreq, scaled as the op says). With rotary_dims = N < head
/// dim (partial rotary) the features N .. head_dim-1 of each head pass
/// through, as GPT-NeoX's cat((rotated, pass), -1).
static LogicalResult lowerRope(RopeOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  const Tensor &positions = b.get(op.getPositions());
  int headDim = int(op.getHeadDim());
  int rotary = int(op.getNumRotaryDims()), half = rotary / 2;
  int features = int(op.getType().getShape().back());
  llvm::SmallVector<float> frequencies = computeRopeInvFreq(
      op.getTheta().convertToFloat(), rotary, op.getScalingParams());
  Buffer<float> invFreq(std::vector<int>{half}, b.name("inv_freq"));
  for (int i = 0; i < half; ++i)
    invFreq(i) = frequencies[i];
  size_t rank = in.extents.size();
  std::vector<Var> v = b.vars(rank);
  // Positions are [S] or [batch..., S]: the vars after the features.
  size_t pr = positions.extents.size();
  std::vector<Expr> at(v.begin() + 1, v.begin() + 1 + pr);
  Expr d = v[0] % headDim;
  Expr pair, partner, sign;
  if (op.getStyle() == RopeStyle::half) {
    // rotate_half: (-x[i + half], x[i - half]); feature i uses frequency
    // i mod half (cos and sin are cat(freqs, freqs)).
    Expr first = d < half;
    pair = select(first, d, d - half);
    partner = v[0] + select(first, half, -half);
    sign = select(first, -1.0f, 1.0f);
  } else {
    // GPT-J's rotate_every_two: (-x[2i + 1], x[2i]), frequencies repeated
    // per pair.
    Expr even = d % 2 == 0;
    pair = d / 2;
    partner = v[0] + select(even, 1, -1);
    sign = select(even, -1.0f, 1.0f);
  }
  // cos and sin per frequency and position: a table the schedule computes
  // once, rather than per head and element.
  std::vector<Var> t = b.vars(1 + pr);
  std::vector<Expr> tableAt(t.begin() + 1, t.end());
  Expr angle = Halide::cast<float>(positions.func(tableAt)) * invFreq(t[0]);
  Func table(b.name("rope_table"));
  table(t) = Tuple(cos(angle), sin(angle));
  b.stages.tables.push_back(table);
  at.insert(at.begin(), clamp(pair, 0, half - 1));
  Tuple cs = table(at);
  Expr x = in.func(v);
  Expr other = in.func(b.args(rank, 0, clamp(partner, 0, features - 1)));
  Expr rotated = x * cs[0] + (sign * other) * cs[1];
  Func out(b.name("rope"));
  out(v) = rotary == headDim ? rotated : select(d < rotary, rotated, x);
  b.define(op.getResult(), {out, in.extents});
  return success();
}

/// T5's relative position bias, [B, heads, S, S]: the table's entry of the
/// bucket of key - query. The buckets of distances below max_distance are a
/// table computed at compile time (RelativeBiasOp::getDistanceBuckets);
/// farther ones share their direction's last bucket. Over a key cache
/// (decoding) the queries are at their sequence's offset + i and the keys
/// are the cache's L rows.
static LogicalResult lowerRelativeBias(RelativeBiasOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  Func table = b.get(op.getTable()).func;
  SmallVector<int32_t> distances = op.getDistanceBuckets();
  int far = int(distances.size());
  Buffer<int32_t> bucketOf(std::vector<int>{far}, b.name("distance_bucket"));
  for (int n = 0; n < far; ++n)
    bucketOf(n) = distances[n];
  int perDirection = int(op.getBucketsPerDirection());
  std::vector<Var> v = b.vars(4); // key, query, head, batch
  Expr query = v[1];
  Expr keys = in.extents[1];
  if (Value offsets = op.getQueryOffsets()) {
    query += b.get(offsets).func(v[3]);
    keys = b.get(op.getKeys()).extents[1];
  }
  Expr relative = v[0] - query;
  Expr base = 0, distance;
  if (op.getBidirectional()) {
    base = select(relative > 0, perDirection, 0);
    distance = select(relative < 0, -relative, relative);
  } else {
    distance = max(-relative, 0);
  }
  Expr bucket =
      base + select(distance < far, bucketOf(clamp(distance, 0, far - 1)),
                    perDirection - 1);
  // The clamp bounds the table rows Halide sees read (the buckets are
  // within them by construction).
  int buckets = int(op.getTable().getType().getDimSize(0));
  Func out(b.name("relative_bias"));
  out(v) = table(v[2], clamp(bucket, 0, buckets - 1));
  int heads = int(op.getTable().getType().getDimSize(1));
  b.define(op.getResult(), {out, {keys, in.extents[1], heads, in.extents[2]}});
  return success();
}

void registerPositionLowerings(LoweringRegistry &registry) {
  registry.add<PositionsOp>(lowerPositions);
  registry.add<SinusoidalOp>(lowerSinusoidal);
  registry.add<RelativeBiasOp>(lowerRelativeBias);
  registry.add<RopeOp>(lowerRope);
}

} // namespace attnc::codegen
