//===- dialects/attn/IR/WeightExprs.cpp - ops evaluated on weights --------===//
//
// WeightExprOpInterface::evaluate of each op that can compute on weights
// alone: what the driver runs on the weight data at link time.
//
//===----------------------------------------------------------------------===//
#include "dialects/attn/IR/AttnOps.h"

using namespace mlir;
using namespace mlir::attn;

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

bool mlir::attn::isWeightExpressionOp(Operation *op) {
  return isa<WeightOp, WeightExprOpInterface>(op);
}

void TransposeOp::evaluate(ArrayRef<const HostTensor *> in, HostTensor &out) {
  int64_t rows = in[0]->shape[0], cols = in[0]->shape[1];
  out.data.resize(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out.data[c * rows + r] = in[0]->data[r * cols + c];
}

void PackPanelsOp::evaluate(ArrayRef<const HostTensor *> in, HostTensor &out) {
  // [in, out] -> [ceil(out / width), in, width], zeros past out.
  int64_t rows = in[0]->shape[0], cols = in[0]->shape[1];
  int64_t width = getWidth();
  int64_t panels = (cols + width - 1) / width;
  out.data.assign(panels * rows * width, 0.0f);
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < width && p * width + j < cols; ++j)
        out.data[(p * rows + r) * width + j] =
            in[0]->data[r * cols + p * width + j];
}

void ScaleOp::evaluate(ArrayRef<const HostTensor *> in, HostTensor &out) {
  float factor = getFactor().convertToFloat();
  out.data = in[0]->data;
  for (float &x : out.data)
    x *= factor;
}

void SliceOp::evaluate(ArrayRef<const HostTensor *> in, HostTensor &out) {
  ArrayRef<int64_t> shape = in[0]->shape;
  int64_t dim = getDim();
  int64_t outer = product(shape.take_front(dim));
  int64_t inner = product(shape.drop_front(dim + 1));
  int64_t run = getSize() * inner;
  out.data.reserve(outer * run);
  for (int64_t o = 0; o < outer; ++o) {
    auto from = in[0]->data.begin() + (o * shape[dim] + getOffset()) * inner;
    out.data.insert(out.data.end(), from, from + run);
  }
}

void InterleaveOp::evaluate(ArrayRef<const HostTensor *> in, HostTensor &out) {
  int64_t dim = getDim();
  int64_t outer = product(ArrayRef(out.shape).take_front(dim));
  int64_t inner = product(ArrayRef(out.shape).drop_front(dim + 1));
  int64_t rows = in[0]->shape[dim];
  out.data.reserve(product(out.shape));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < rows; ++i)
      for (const HostTensor *part : in) {
        auto from = part->data.begin() + (o * rows + i) * inner;
        out.data.insert(out.data.end(), from, from + inner);
      }
}

void ConcatOp::evaluate(ArrayRef<const HostTensor *> in, HostTensor &out) {
  int64_t dim = getDim();
  int64_t outer = product(ArrayRef(out.shape).take_front(dim));
  int64_t inner = product(ArrayRef(out.shape).drop_front(dim + 1));
  out.data.reserve(product(out.shape));
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor *part : in) {
      int64_t run = part->shape[dim] * inner;
      auto from = part->data.begin() + o * run;
      out.data.insert(out.data.end(), from, from + run);
    }
}
