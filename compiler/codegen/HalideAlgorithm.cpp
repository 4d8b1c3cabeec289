//===- compiler/codegen/HalideAlgorithm.cpp - kernel -> Halide ------------===//
#include "compiler/codegen/HalideAlgorithm.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {
namespace {

/// A value inside the kernel: its Func and its extents, innermost first.
struct Tensor {
  Func func;
  std::vector<Expr> extents;
};

/// erf(x) by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): Halide has no
/// erf, and GELU's exact form needs one.
Expr erfApprox(Expr x) {
  Expr ax = abs(x);
  Expr t = 1.0f / (1.0f + 0.3275911f * ax);
  Expr poly =
      t * (0.254829592f +
           t * (-0.284496736f +
                t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  Expr y = 1.0f - poly * exp(-ax * ax);
  return select(x < 0.0f, -y, y);
}

class AlgorithmBuilder {
public:
  AlgorithmBuilder(schedules::KernelStages &stages) : stages(stages) {}

  LogicalResult build(KernelOp kernel, std::vector<ImageParam> &params);

private:
  std::vector<Var> vars(size_t rank) {
    while (stages.vars.size() < rank)
      stages.vars.emplace_back("x" + std::to_string(stages.vars.size()));
    return {stages.vars.begin(), stages.vars.begin() + rank};
  }
  /// Vars as call arguments, with `index` replacing var `at`.
  std::vector<Expr> args(size_t rank, size_t at = ~size_t(0), Expr index = {}) {
    std::vector<Expr> result;
    for (size_t d = 0; d < rank; ++d)
      result.push_back(d == at ? index : Expr(stages.vars[d]));
    return result;
  }
  std::string name(StringRef base) {
    return base.str() + "_" + std::to_string(counter++);
  }

  Tensor linear(LinearOp op);
  Tensor layerNorm(LayerNormOp op);
  Tensor sdpa(SdpaOp op);
  Tensor slice(SliceOp op);
  Tensor elementwise(Operation *op);

  schedules::KernelStages &stages;
  llvm::DenseMap<Value, Tensor> values;
  unsigned counter = 0;
};

Tensor AlgorithmBuilder::linear(LinearOp op) {
  Tensor in = values.lookup(op.getInput());
  Func w = values.lookup(op.getWeight()).func;
  size_t rank = in.extents.size();
  int64_t k = op.getInFeatures(), n = op.getOutFeatures();
  std::vector<Var> v = vars(rank);
  RDom r(0, int(k), name("k"));
  // Halide's dim 0 is the innermost: [in, out] storage reads w(n, k), and
  // panels [out / p, in, p] read w(n % p, k, n / p).
  auto weight = [&](Expr nn, Expr kk) -> Expr {
    switch (op.getLayout()) {
    case WeightLayout::out_in:
      return w(kk, nn);
    case WeightLayout::in_out:
      return w(nn, kk);
    case WeightLayout::panels: {
      int p = int(op.getWeight().getType().getDimSize(2));
      return w(nn % p, kk, nn / p);
    }
    }
    llvm_unreachable("unknown weight layout");
  };
  // Rows are clamped to the last one so a schedule may compute whole row
  // tiles past it (constant-size register blocks); those rows are never
  // stored.
  std::vector<Expr> row = args(rank, 0, r.x);
  row[1] = min(v[1], in.extents[1] - 1);
  Func gemm(name("gemm"));
  gemm(v) = op.getBias() ? values.lookup(op.getBias()).func(v[0]) : Expr(0.0f);
  gemm(v) += in.func(row) * weight(v[0], r.x);
  stages.gemm = schedules::GemmStage{gemm, r, k, n};
  std::vector<Expr> extents = in.extents;
  extents[0] = int(n);
  return {gemm, extents};
}

Tensor AlgorithmBuilder::layerNorm(LayerNormOp op) {
  Tensor in = values.lookup(op.getInput());
  Func gamma = values.lookup(op.getGamma()).func;
  Func beta = values.lookup(op.getBeta()).func;
  size_t rank = in.extents.size();
  std::vector<Var> v = vars(rank);
  std::vector<Var> rows(v.begin() + 1, v.end());
  int64_t d = op.getType().getShape().back();
  RDom r(0, int(d), name("d"));
  // Two passes (mean, then centred variance) as PyTorch: one-pass E[x^2] -
  // E[x]^2 loses digits when |mean| >> std.
  Func rowSum(name("row_sum")), rowSquares(name("row_squares"));
  rowSum(rows) = 0.0f;
  rowSum(rows) += in.func(args(rank, 0, r.x));
  Expr mean = rowSum(rows) / float(d);
  Expr centred = in.func(args(rank, 0, r.x)) - mean;
  rowSquares(rows) = 0.0f;
  rowSquares(rows) += centred * centred;
  Expr invStd = 1.0f / sqrt(rowSquares(rows) / float(d) +
                            op.getEpsilon().convertToFloat());
  Func out(name("layer_norm"));
  out(v) = (in.func(v) - mean) * invStd * gamma(v[0]) + beta(v[0]);
  stages.norm = schedules::NormStage{rowSum, rowSquares, r, d};
  return {out, in.extents};
}

/// Flash attention: per (query tile, head), keys are visited one tile at a
/// time; each key tile yields its own row maximum, row sum of exponentials and
/// unnormalised output, and a running (max, sum, output) state folds the
/// tiles in with an online softmax. No S x S matrix exists. The tiles are
/// part of the algorithm (not only the schedule) because causal attention
/// skips the key tiles wholly above a query tile's last row.
Tensor AlgorithmBuilder::sdpa(SdpaOp op) {
  using schedules::AttentionStage;
  const int tq = AttentionStage::kQueryTile, tk = AttentionStage::kKeyTile;
  Tensor q = values.lookup(op.getQuery());
  Func k = values.lookup(op.getKey()).func;
  Func vals = values.lookup(op.getValue()).func;
  size_t rank = q.extents.size();
  std::vector<Var> v = vars(rank);
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
  Func queries(name("queries"));
  Expr qv = q.func(at({h * dh + e, min(row, seq - 1)}));
  float scale = op.getScale().convertToFloat();
  queries(at({ii, e, it, h})) = scale == 1.0f ? qv : qv * scale;

  RDom r(0, dh, name("e"));
  Func dot(name("dot"));
  dot(at({ii, jj, kt, it, h})) = 0.0f;
  dot(at({ii, jj, kt, it, h})) +=
      queries(at({ii, r.x, it, h})) * k(at({h * dh + r.x, min(key, seq - 1)}));

  // A finite floor instead of -inf keeps exp() arguments finite when a row
  // sees no key of a tile (above the causal diagonal, past the sequence).
  const float lowest = -1e30f;
  RDom kr(0, tk, name("key"));
  auto inTile = [&](Func f, Expr j) { return f(at({ii, j, kt, it, h})); };
  Expr visibleAt = substitute(jj.name(), kr.x, visible);
  Func tileMax(name("tile_max")), probs(name("probs")),
      tileSum(name("tile_sum"));
  tileMax(at({ii, kt, it, h})) = lowest;
  tileMax(at({ii, kt, it, h})) =
      max(tileMax(at({ii, kt, it, h})),
          select(visibleAt, inTile(dot, kr.x), lowest));
  probs(at({ii, jj, kt, it, h})) = select(
      visible, exp(inTile(dot, jj) - tileMax(at({ii, kt, it, h}))), 0.0f);
  tileSum(at({ii, kt, it, h})) = 0.0f;
  tileSum(at({ii, kt, it, h})) += inTile(probs, kr.x);
  Func tileOut(name("tile_out"));
  tileOut(at({c, ii, kt, it, h})) = 0.0f;
  tileOut(at({c, ii, kt, it, h})) +=
      inTile(probs, kr.x) *
      vals(at({h * dh + c, min(kt * tk + kr.x, seq - 1)}));

  // Online softmax over the key tiles, in order.
  RDom tiles(0, (seq + tk - 1) / tk, name("tiles"));
  if (op.getMask() == Mask::causal)
    tiles.where(tiles.x * tk <= it * tq + tq - 1);
  Func state(name("state"));
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
  Func out(name("attention"));
  out(v) = fin[2] / fin[1];
  stages.attention =
      AttentionStage{k,       vals,  queries, dot, tileMax, probs, tileSum,
                     tileOut, state, tiles,   kr,  r,       heads, dh};
  return {out, q.extents};
}

Tensor AlgorithmBuilder::slice(SliceOp op) {
  Tensor in = values.lookup(op.getInput());
  size_t rank = in.extents.size();
  size_t d = rank - 1 - op.getDim();
  std::vector<Var> v = vars(rank);
  Func out(name("slice"));
  out(v) = in.func(args(rank, d, v[d] + int(op.getOffset())));
  std::vector<Expr> extents = in.extents;
  extents[d] = int(op.getSize());
  return {out, extents};
}

Tensor AlgorithmBuilder::elementwise(Operation *op) {
  Tensor in = values.lookup(op->getOperand(0));
  std::vector<Var> v = vars(in.extents.size());
  Expr x = in.func(v);
  Expr y =
      llvm::TypeSwitch<Operation *, Expr>(op)
          .Case([&](AddOp) {
            return x + values.lookup(op->getOperand(1)).func(v);
          })
          .Case([&](ReluOp) { return max(x, 0.0f); })
          .Case([&](GeluOp) {
            return 0.5f * x * (1.0f + erfApprox(x * float(M_SQRT1_2)));
          })
          .Case([&](ScaleOp s) { return x * s.getFactor().convertToFloat(); });
  Func out(name(op->getName().stripDialect()));
  out(v) = y;
  return {out, in.extents};
}

LogicalResult AlgorithmBuilder::build(KernelOp kernel,
                                      std::vector<ImageParam> &params) {
  Block &body = kernel.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    size_t rank = type.getRank();
    ImageParam param(Float(32), int(rank),
                     "in" + std::to_string(params.size()));
    std::vector<Expr> extents;
    for (size_t d = 0; d < rank; ++d) {
      int64_t size = type.getDimSize(rank - 1 - d);
      // Static extents are promised to Halide (and checked on entry), which
      // lets it vectorise and unroll without remainder tests.
      if (!ShapedType::isDynamic(size))
        param.dim(int(d)).set_bounds(0, int(size));
      extents.push_back(param.dim(int(d)).extent());
    }
    params.push_back(param);
    Func wrapped(name("input"));
    std::vector<Var> v = vars(rank);
    wrapped(v) = param(v);
    values[arg] = {wrapped, extents};
  }
  for (Operation &op : body.without_terminator()) {
    std::optional<Tensor> result =
        llvm::TypeSwitch<Operation *, std::optional<Tensor>>(&op)
            .Case([&](LinearOp o) { return linear(o); })
            .Case([&](LayerNormOp o) { return layerNorm(o); })
            .Case([&](SdpaOp o) { return sdpa(o); })
            .Case([&](SliceOp o) { return slice(o); })
            .Case<AddOp, ReluOp, GeluOp, ScaleOp>(
                [&](Operation *o) { return elementwise(o); })
            .Default([](Operation *) { return std::nullopt; });
    if (!result)
      return op.emitOpError("has no Halide lowering: run the attn pipeline "
                            "(attn-pipeline) before codegen");
    values[op.getResult(0)] = *result;
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  for (Value v : yield.getValues()) {
    Tensor t = values.lookup(v);
    std::vector<Var> vs = vars(t.extents.size());
    Func out(name("output"));
    out(vs) = t.func(vs);
    // As for inputs: static extents are promised (and checked on entry).
    auto type = cast<RankedTensorType>(v.getType());
    for (size_t d = 0; d < vs.size(); ++d) {
      int64_t size = type.getDimSize(vs.size() - 1 - d);
      if (!ShapedType::isDynamic(size))
        out.output_buffer().dim(int(d)).set_bounds(0, int(size));
    }
    stages.outputs.push_back(out);
  }
  if (stages.outputs.empty())
    return kernel.emitOpError("yields nothing");
  stages.final = stages.outputs.back();
  stages.features = cast<RankedTensorType>(yield.getValues().back().getType())
                        .getShape()
                        .back();
  return success();
}

} // namespace

LogicalResult buildAlgorithm(KernelOp kernel, std::vector<ImageParam> &params,
                             schedules::KernelStages &stages) {
  return AlgorithmBuilder(stages).build(kernel, params);
}

} // namespace attnc::codegen
