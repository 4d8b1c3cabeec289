//===- compiler/codegen/lowerings/LayerNorm.cpp - row-wise normalisations -===//
#include "compiler/codegen/Lowering.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

static LogicalResult lowerLayerNorm(LayerNormOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  Func gamma = b.get(op.getGamma()).func;
  Func beta = b.get(op.getBeta()).func;
  size_t rank = in.extents.size();
  std::vector<Var> v = b.vars(rank);
  std::vector<Var> rows(v.begin() + 1, v.end());
  int64_t d = op.getType().getShape().back();
  RDom r(0, int(d), b.name("d"));
  // Two passes (mean, then centred variance) as PyTorch: one-pass E[x^2] -
  // E[x]^2 loses digits when |mean| >> std.
  Func rowSum(b.name("row_sum")), rowSquares(b.name("row_squares"));
  rowSum(rows) = 0.0f;
  rowSum(rows) += in.func(b.args(rank, 0, r.x));
  Expr mean = rowSum(rows) / float(d);
  Expr centred = in.func(b.args(rank, 0, r.x)) - mean;
  rowSquares(rows) = 0.0f;
  rowSquares(rows) += centred * centred;
  Expr invStd = 1.0f / sqrt(rowSquares(rows) / float(d) +
                            op.getEpsilon().convertToFloat());
  Func out(b.name("layer_norm"));
  out(v) = (in.func(v) - mean) * invStd * gamma(v[0]) + beta(v[0]);
  b.stages.stages.push_back(
      schedules::NormStage{out, {rowSum, rowSquares}, r, d});
  b.define(op.getResult(), {out, in.extents});
  return success();
}

/// x / sqrt(mean(x^2) + eps) * (offset + gamma), as Hugging Face's
/// LlamaRMSNorm (offset 0) and GemmaRMSNorm (offset 1): one row statistic.
static LogicalResult lowerRmsNorm(RmsNormOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  Func gamma = b.get(op.getGamma()).func;
  size_t rank = in.extents.size();
  std::vector<Var> v = b.vars(rank);
  std::vector<Var> rows(v.begin() + 1, v.end());
  int64_t d = op.getType().getShape().back();
  RDom r(0, int(d), b.name("d"));
  Func rowSquares(b.name("row_squares"));
  Expr x = in.func(b.args(rank, 0, r.x));
  rowSquares(rows) = 0.0f;
  rowSquares(rows) += x * x;
  Expr invRms = 1.0f / sqrt(rowSquares(rows) / float(d) +
                            op.getEpsilon().convertToFloat());
  float offset = op.getOffset().convertToFloat();
  Expr scale = gamma(v[0]);
  if (offset != 0.0f)
    scale = offset + scale;
  Func out(b.name("rms_norm"));
  out(v) = in.func(v) * invRms * scale;
  b.stages.stages.push_back(schedules::NormStage{out, {rowSquares}, r, d});
  b.define(op.getResult(), {out, in.extents});
  return success();
}

/// exp(x - max) / sum(exp(x - max)) over the last dim, as torch.softmax.
static LogicalResult lowerSoftmax(SoftmaxOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  size_t rank = in.extents.size();
  std::vector<Var> v = b.vars(rank);
  std::vector<Var> rows(v.begin() + 1, v.end());
  int64_t d = op.getType().getShape().back();
  RDom r(0, int(d), b.name("d"));
  Func rowMax(b.name("row_max")), rowSum(b.name("row_sum"));
  rowMax(rows) = Float(32).min();
  rowMax(rows) = max(rowMax(rows), in.func(b.args(rank, 0, r.x)));
  rowSum(rows) = 0.0f;
  rowSum(rows) += expNonPositive(in.func(b.args(rank, 0, r.x)) - rowMax(rows));
  Func out(b.name("softmax"));
  out(v) = expNonPositive(in.func(v) - rowMax(rows)) / rowSum(rows);
  b.stages.stages.push_back(schedules::NormStage{out, {rowMax, rowSum}, r, d});
  b.define(op.getResult(), {out, in.extents});
  return success();
}

void registerNormLowerings(LoweringRegistry &registry) {
  registry.add<LayerNormOp>(lowerLayerNorm);
  registry.add<SoftmaxOp>(lowerSoftmax);
  registry.add<RmsNormOp>(lowerRmsNorm);
}

} // namespace attnc::codegen
