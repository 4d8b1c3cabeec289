//===- compiler/codegen/lowerings/Shape.cpp - views of activations --------===//
#include "compiler/codegen/Lowering.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

static LogicalResult lowerSlice(SliceOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  size_t rank = in.extents.size();
  size_t d = rank - 1 - op.getDim();
  std::vector<Var> v = b.vars(rank);
  Func out(b.name("slice"));
  out(v) = in.func(b.args(rank, d, v[d] + int(op.getOffset())));
  std::vector<Expr> extents = in.extents;
  extents[d] = int(op.getSize());
  b.define(op.getResult(), {out, extents});
  return success();
}

void registerShapeLowerings(LoweringRegistry &registry) {
  registry.add<SliceOp>(lowerSlice);
}

} // namespace attnc::codegen
