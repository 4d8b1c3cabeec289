//===- compiler/codegen/lowerings/Shape.cpp - layout ops ------------------===//
//
// Slices, transposes, joins, reshapes, reductions and embedding lookups of
// activations; the same layout ops and panel packing of weights, which the
// "init" kernels compute at load.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Int4Bits.h"
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

/// out(..., i, ..., j, ...) = in(..., j, ..., i, ...) for the swapped dims.
static LogicalResult lowerTranspose(TransposeOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  size_t rank = in.extents.size();
  size_t h0 = rank - 1 - op.getDim0(), h1 = rank - 1 - op.getDim1();
  std::vector<Var> v = b.vars(rank);
  std::vector<Expr> at(v.begin(), v.end());
  std::swap(at[h0], at[h1]);
  Func out(b.name("transpose"));
  out(v) = in.func(at);
  std::vector<Expr> extents = in.extents;
  std::swap(extents[h0], extents[h1]);
  b.define(op.getResult(), {out, extents});
  return success();
}

/// Row-major reshape: within each run of static dims between dynamic ones
/// (ReshapeOp's verifier), the result's coordinates make a flat index that
/// the input's static dims take apart again; dynamic dims carry over.
static LogicalResult lowerReshape(ReshapeOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  ArrayRef<int64_t> inShape = op.getInput().getType().getShape();
  ArrayRef<int64_t> outShape = op.getType().getShape();
  size_t inRank = inShape.size(), outRank = outShape.size();
  std::vector<Var> v = b.vars(std::max(inRank, outRank));
  std::vector<Expr> at(inRank), extents(outRank);
  size_t i = 0, o = 0;
  while (i <= inRank && o <= outRank) {
    // The run of static dims from here to the next dynamic dim (or the end).
    Expr flat = 0;
    for (; o < outRank && !ShapedType::isDynamic(outShape[o]); ++o) {
      flat = flat * int(outShape[o]) + v[outRank - 1 - o];
      extents[outRank - 1 - o] = int(outShape[o]);
    }
    size_t runEnd = i;
    while (runEnd < inRank && !ShapedType::isDynamic(inShape[runEnd]))
      ++runEnd;
    int64_t stride = 1;
    for (size_t d = runEnd; d-- > i;) {
      at[inRank - 1 - d] = (flat / int(stride)) % int(inShape[d]);
      stride *= inShape[d];
    }
    i = runEnd;
    if (i == inRank || o == outRank)
      break;
    at[inRank - 1 - i] = v[outRank - 1 - o];
    extents[outRank - 1 - o] = in.extents[inRank - 1 - i];
    ++i;
    ++o;
  }
  for (Expr &e : at)
    e = simplify(e);
  Func out(b.name("reshape"));
  out(std::vector<Var>(v.begin(), v.begin() + outRank)) = in.func(at);
  b.define(op.getResult(), {out, extents});
  return success();
}

/// The sum (or mean) over one dim, in order.
static LogicalResult lowerReduce(ReduceOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  size_t rank = in.extents.size();
  size_t h = rank - 1 - op.getDim();
  std::vector<Var> v = b.vars(rank);
  RDom r(0, in.extents[h], b.name("r"));
  std::vector<Expr> at;
  for (size_t d = 0; d < rank; ++d)
    at.push_back(d < h ? Expr(v[d]) : d == h ? Expr(r.x) : Expr(v[d - 1]));
  Func total(b.name("sum"));
  std::vector<Var> outVars(v.begin(), v.begin() + rank - 1);
  total(outVars) = 0.0f;
  total(outVars) += in.func(at);
  Func out = total;
  if (op.getKind() == "mean") {
    out = Func(b.name("mean"));
    out(outVars) = total(outVars) / cast<float>(in.extents[h]);
  }
  std::vector<Expr> extents = in.extents;
  extents.erase(extents.begin() + h);
  b.define(op.getResult(), {out, extents});
  return success();
}

/// [in, out] -> g-tuples of inputs [ceil(out / width), in / g, width, g]:
/// out(t, j, q, p) = in(p * width + j, g q + t), 0 past `out`. bf16 pairs
/// (g = 2) are rounded to bf16 as the kernel stores them; i8 quads (g = 4)
/// keep their bytes.
static LogicalResult lowerPackTuples(PackPanelsOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  int width = int(op.getWidth());
  int features = int(op.getInput().getType().getDimSize(1));
  auto type = op.getResult().getType();
  int g = int(type.getDimSize(3));
  std::vector<Var> v = b.vars(4);
  Func out(b.name(g == 2 ? "pairs" : "quads"));
  Expr n = v[3] * width + v[1], k = g * v[2] + v[0];
  Expr value = in.func(min(n, features - 1), k);
  if (features % width != 0)
    value = select(n < features, value, cast(value.type(), 0));
  out(v) = value;
  b.define(op.getResult(),
           {out, {g, width, int(type.getDimSize(1)), int(type.getDimSize(0))}});
  return success();
}

/// [in, out] -> [ceil(out / width), in, width]: out(j, k, p) =
/// in(p * width + j, k), 0 past `out`.
static LogicalResult lowerPackPanels(PackPanelsOp op, KernelBuilder &b) {
  if (op.getType().getRank() == 4)
    return lowerPackTuples(op, b);
  const Tensor &in = b.get(op.getInput());
  int width = int(op.getWidth());
  int features = int(op.getInput().getType().getDimSize(1));
  std::vector<Var> v = b.vars(3);
  Func out(b.name("panels"));
  Expr n = v[2] * width + v[0];
  Expr value = in.func(n, v[1]);
  if (features % width != 0)
    value = select(n < features, in.func(min(n, features - 1), v[1]),
                   cast(value.type(), 0));
  out(v[0], v[1], v[2]) = value;
  auto type = op.getResult().getType();
  b.define(op.getResult(),
           {out, {width, in.extents[1], int(type.getDimSize(0))}});
  return success();
}

/// The parts side by side along one dim; each part's index is clamped into
/// it so bounds inference asks no part for more than it has. A part of
/// extent 1 in another dim where the result has more is read at 0 there
/// (repeated, as the CLS token of every image).
static LogicalResult lowerConcat(ConcatOp op, KernelBuilder &b) {
  auto type = cast<RankedTensorType>(op.getResult().getType());
  size_t rank = type.getRank();
  size_t d = rank - 1 - op.getDim();
  std::vector<Var> v = b.vars(rank);
  auto repeated = [&](Value part, size_t h) {
    int64_t dim = int64_t(rank - 1 - h);
    return cast<RankedTensorType>(part.getType()).getDimSize(dim) == 1 &&
           type.getDimSize(dim) != 1;
  };
  Expr value;
  int start = int(type.getDimSize(op.getDim()));
  for (Value part : llvm::reverse(op.getInputs())) {
    int size =
        int(cast<RankedTensorType>(part.getType()).getDimSize(op.getDim()));
    start -= size;
    std::vector<Expr> at = b.args(rank, d, clamp(v[d] - start, 0, size - 1));
    for (size_t h = 0; h < rank; ++h)
      if (h != d && repeated(part, h))
        at[h] = 0;
    Expr read = b.get(part).func(at);
    value = value.defined() ? select(v[d] < start + size, read, value) : read;
  }
  Func out(b.name("concat"));
  out(v) = value;
  std::vector<Expr> extents(rank);
  for (size_t h = 0; h < rank; ++h)
    for (Value part : op.getInputs())
      if (!repeated(part, h)) {
        extents[h] = b.get(part).extents[h];
        break;
      }
  extents[d] = int(type.getDimSize(op.getDim()));
  b.define(op.getResult(), {out, extents});
  return success();
}

/// out(.., n * i + t, ..) = input_t(.., i, ..) along one dim.
static LogicalResult lowerInterleave(InterleaveOp op, KernelBuilder &b) {
  auto type = cast<RankedTensorType>(op.getResult().getType());
  size_t rank = type.getRank();
  size_t d = rank - 1 - op.getDim();
  int n = int(op.getInputs().size());
  std::vector<Var> v = b.vars(rank);
  Expr value;
  for (int t = n - 1; t >= 0; --t) {
    Expr read = b.get(op.getInputs()[t]).func(b.args(rank, d, v[d] / n));
    value = value.defined() ? select(v[d] % n == t, read, value) : read;
  }
  Func out(b.name("interleave"));
  out(v) = value;
  std::vector<Expr> extents = b.get(op.getInputs()[0]).extents;
  extents[d] = int(type.getDimSize(op.getDim()));
  b.define(op.getResult(), {out, extents});
  return success();
}

/// table(d, ids(...)), the ids checked against the table's rows; a
/// quantized row dequantized as it is read (as attn.linear's weights).
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
  Func checkedIds(b.name("checked_ids"));
  checkedIds(at) = checked;
  b.stages.checks.push_back(checkedIds);
  Func out(b.name("embedding"));
  // The clamp bounds the table rows read; the check has failed by then.
  Expr row = clamp(checkedIds(at), 0, rows - 1);
  mlir::Type element = op.getTable().getType().getElementType();
  if (element.isUnsignedInteger(8)) {
    // Two 4-bit values per byte, the even feature in the low nibble: (q - 8)
    // times the scale of its group of G features ([V, D / G] reads s(g, row)).
    int64_t group =
        op.getFeatures() /
        cast<RankedTensorType>(op.getScales().getType()).getDimSize(1);
    out(v) = int4At(table(v[0] / 2, row), v[0]) *
             b.get(op.getScales()).func(v[0] / int(group), row);
  } else if (element.isInteger(8)) {
    out(v) =
        cast(Float(32), table(v[0], row)) * b.get(op.getScales()).func(row);
  } else {
    out(v) = table(v[0], row);
  }
  std::vector<Expr> extents = {int(op.getFeatures())};
  extents.insert(extents.end(), ids.extents.begin(), ids.extents.end());
  b.define(op.getResult(), {out, extents});
  return success();
}

void registerShapeLowerings(LoweringRegistry &registry) {
  registry.add<SliceOp>(lowerSlice);
  registry.add<TransposeOp>(lowerTranspose);
  registry.add<ReshapeOp>(lowerReshape);
  registry.add<ReduceOp>(lowerReduce);
  registry.add<PackPanelsOp>(lowerPackPanels);
  registry.add<ConcatOp>(lowerConcat);
  registry.add<InterleaveOp>(lowerInterleave);
  registry.add<EmbeddingOp>(lowerEmbedding);
}

} // namespace attnc::codegen
