//===- compiler/codegen/lowerings/Attention.cpp - attn.sdpa ---------------===//
#include "compiler/codegen/Lowering.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {
namespace {

/// Flash attention: per (query tile, head), keys are visited one tile at a
/// time; each key tile yields its own row maximum, row sum of exponentials and
/// unnormalised output, and a running (max, sum, output) state folds the
/// tiles in with an online softmax. No S x S matrix exists. The tiles are
/// part of the algorithm (not only the schedule) because causal attention
/// skips the key tiles wholly above a query tile's last row.
LogicalResult lowerSdpa(SdpaOp op, KernelBuilder &b) {
  using schedules::AttentionStage;
  const int tq = AttentionStage::kQueryTile, tk = AttentionStage::kKeyTile;
  const Tensor &q = b.get(op.getQuery());
  Func k = b.get(op.getKey()).func;
  Func vals = b.get(op.getValue()).func;
  size_t rank = q.extents.size();
  std::vector<Var> v = b.vars(rank);
  int64_t heads = op.getHeads();
  int dh = int(op.getType().getShape().back() / heads);
  std::vector<Var> batch(v.begin() + 2, v.end());
  auto at = [&](std::vector<Expr> front) {
    front.insert(front.end(), batch.begin(), batch.end());
    return front;
  };
  Var c("c"), e("e"), ii("ii"), jj("jj"), it("it"), kt("kt"), h("h");
  Expr seq = q.extents[1];
  Expr row = it * tq + ii, key = kt * tk + jj;
  // Tiles overhang the sequence: loads are clamped, overhanging keys masked.
  Expr visible = key < seq;
  if (op.getMask() == Mask::causal)
    visible = visible && key <= row;

  // The query tile with rows contiguous (for vectors over rows), pre-scaled.
  Func queries(b.name("queries"));
  Expr qv = q.func(at({h * dh + e, min(row, seq - 1)}));
  float scale = op.getScale().convertToFloat();
  queries(at({ii, e, it, h})) = scale == 1.0f ? qv : qv * scale;

  RDom r(0, dh, b.name("e"));
  Func dot(b.name("dot"));
  dot(at({ii, jj, kt, it, h})) = 0.0f;
  dot(at({ii, jj, kt, it, h})) +=
      queries(at({ii, r.x, it, h})) * k(at({h * dh + r.x, min(key, seq - 1)}));

  // A finite floor instead of -inf keeps exp() arguments finite when a row
  // sees no key of a tile (above the causal diagonal, past the sequence).
  const float lowest = -1e30f;
  RDom kr(0, tk, b.name("key"));
  auto inTile = [&](Func f, Expr j) { return f(at({ii, j, kt, it, h})); };
  Expr visibleAt = substitute(jj.name(), kr.x, visible);
  Func tileMax(b.name("tile_max")), probs(b.name("probs")),
      tileSum(b.name("tile_sum"));
  tileMax(at({ii, kt, it, h})) = lowest;
  tileMax(at({ii, kt, it, h})) =
      max(tileMax(at({ii, kt, it, h})),
          select(visibleAt, inTile(dot, kr.x), lowest));
  probs(at({ii, jj, kt, it, h})) = select(
      visible, exp(inTile(dot, jj) - tileMax(at({ii, kt, it, h}))), 0.0f);
  tileSum(at({ii, kt, it, h})) = 0.0f;
  tileSum(at({ii, kt, it, h})) += inTile(probs, kr.x);
  Func tileOut(b.name("tile_out"));
  tileOut(at({c, ii, kt, it, h})) = 0.0f;
  tileOut(at({c, ii, kt, it, h})) +=
      inTile(probs, kr.x) *
      vals(at({h * dh + c, min(kt * tk + kr.x, seq - 1)}));

  // Online softmax over the key tiles, in order.
  RDom tiles(0, (seq + tk - 1) / tk, b.name("tiles"));
  if (op.getMask() == Mask::causal)
    tiles.where(tiles.x * tk <= it * tq + tq - 1);
  Func state(b.name("state"));
  state(at({c, ii, it, h})) = Tuple(lowest, 0.0f, 0.0f);
  Tuple old = state(at({c, ii, it, h}));
  Expr m = tileMax(at({ii, tiles.x, it, h}));
  // One of the two sides keeps its scale: rescale the other by
  // exp(-|difference|), one exp per step. A difference against the -1e30
  // floor would overflow exp's range reduction, and anything below -88 is 0
  // in float anyway.
  Expr diff = old[0] - m;
  Expr shrink = exp(max(-abs(diff), -88.0f));
  Expr keep = select(diff >= 0.0f, 1.0f, shrink);
  Expr add = select(diff >= 0.0f, shrink, 1.0f);
  state(at({c, ii, it, h})) = Tuple(
      max(old[0], m), old[1] * keep + tileSum(at({ii, tiles.x, it, h})) * add,
      old[2] * keep + tileOut(at({c, ii, tiles.x, it, h})) * add);
  Tuple fin = state(at({v[0] % dh, v[1] % tq, v[1] / tq, v[0] / dh}));
  Func out(b.name("attention"));
  out(v) = fin[2] / fin[1];
  b.stages.stages.push_back(AttentionStage{out, k, vals, queries, dot, tileMax,
                                           probs, tileSum, tileOut, state,
                                           tiles, kr, r, heads, dh});
  b.define(op.getResult(), {out, q.extents});
  return success();
}

} // namespace

void registerAttentionLowerings(LoweringRegistry &registry) {
  registry.add<SdpaOp>(lowerSdpa);
}

} // namespace attnc::codegen
