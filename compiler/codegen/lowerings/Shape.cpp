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

/// table(d, ids(...)), the ids checked against the table's rows.
static LogicalResult lowerEmbedding(EmbeddingOp op, KernelBuilder &b) {
  const Tensor &ids = b.get(op.getIds());
  Func table = b.get(op.getTable()).func;
  int rows = int(op.getTable().getType().getDimSize(0));
  size_t rank = ids.extents.size() + 1;
  std::vector<Var> v = b.vars(rank);
  std::vector<Expr> at(v.begin() + 1, v.end());
  Expr id = ids.func(at);
  // The message names the id's batch (outermost dim) and position.
  Expr checked =
      at.size() >= 2
          ? require(id >= 0 && id < rows, id, "token id", id, "at batch",
                    at.back(), "position", at[0], "is outside 0 ..", rows - 1)
          : require(id >= 0 && id < rows, id, "token id", id, "at position",
                    at[0], "is outside 0 ..", rows - 1);
  Func out(b.name("embedding"));
  // The clamp bounds the table rows read; the check has failed by then.
  out(v) = table(v[0], clamp(checked, 0, rows - 1));
  std::vector<Expr> extents = {int(op.getTable().getType().getDimSize(1))};
  extents.insert(extents.end(), ids.extents.begin(), ids.extents.end());
  b.define(op.getResult(), {out, extents});
  return success();
}

void registerShapeLowerings(LoweringRegistry &registry) {
  registry.add<SliceOp>(lowerSlice);
  registry.add<EmbeddingOp>(lowerEmbedding);
}

} // namespace attnc::codegen
