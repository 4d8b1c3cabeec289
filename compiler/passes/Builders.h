//===- compiler/passes/Builders.h - building attn ops -----------*- C++ -*-===//
//
// Shorthands for the ops passes create, which all derive their result types
// from their operands.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_PASSES_BUILDERS_H
#define ATTNC_COMPILER_PASSES_BUILDERS_H

#include "dialects/attn/IR/AttnOps.h"

namespace mlir::attn {

/// `size` entries of `input` from `offset` along `dim`.
inline Value buildSlice(OpBuilder &b, Location loc, Value input, int64_t dim,
                        int64_t offset, int64_t size) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return b.create<SliceOp>(loc, RankedTensorType::get(shape, type.getElementType()),
                           input, b.getI64IntegerAttr(dim),
                           b.getI64IntegerAttr(offset), b.getI64IntegerAttr(size));
}

/// `input` projected by `weight` (and `bias`, may be null) stored in `layout`;
/// weights in panels give `panelOutputs` outputs (their last panel may be
/// padded), or whole panels if 0. An i8 weight takes its per-output
/// `scales`; other weights none (null).
inline Value buildLinear(OpBuilder &b, Location loc, Value input, Value weight,
                         Value bias, WeightLayout layout,
                         int64_t panelOutputs = 0, Value scales = {}) {
  auto type = cast<RankedTensorType>(input.getType());
  auto wtype = cast<RankedTensorType>(weight.getType());
  SmallVector<int64_t> shape(type.getShape());
  switch (layout) {
  case WeightLayout::out_in:
    shape.back() = wtype.getDimSize(0);
    break;
  case WeightLayout::in_out:
    shape.back() = wtype.getDimSize(1);
    break;
  case WeightLayout::panels:
    shape.back() = panelOutputs > 0 ? panelOutputs
                                    : wtype.getDimSize(0) * wtype.getDimSize(2);
    break;
  }
  return b.create<LinearOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), input, weight,
      bias, scales, WeightLayoutAttr::get(b.getContext(), layout));
}

} // namespace mlir::attn

#endif // ATTNC_COMPILER_PASSES_BUILDERS_H
