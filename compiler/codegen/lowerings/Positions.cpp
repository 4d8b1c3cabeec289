//===- compiler/codegen/lowerings/Positions.cpp - position encodings ------===//
#include "compiler/codegen/Lowering.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

/// 0, 1, ... over the extent of one dim of the input (never read), from
/// the offset's first entry when there is one.
static LogicalResult lowerPositions(PositionsOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  size_t d = in.extents.size() - 1 - op.getDim();
  Var j = b.vars(1)[0];
  Func out(b.name("positions"));
  if (Value offset = op.getOffset())
    out(j) = j + b.get(offset).func(0);
  else
    out(j) = j;
  b.define(op.getResult(), {out, {in.extents[d]}});
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

void registerPositionLowerings(LoweringRegistry &registry) {
  registry.add<PositionsOp>(lowerPositions);
  registry.add<SinusoidalOp>(lowerSinusoidal);
}

} // namespace attnc::codegen
