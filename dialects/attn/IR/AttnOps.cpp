//===- dialects/attn/IR/AttnOps.cpp - attn op verifiers and folds ---------===//
#include "dialects/attn/IR/AttnOps.h"

#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;

bool mlir::attn::isWeightExpressionOp(Operation *op) {
  return isa<WeightOp, WeightExprOpInterface>(op);
}

/// Two extents agree when both are static and equal, or either is dynamic
/// (symbolic dims are checked by the attn-check-shapes pass).
static bool extentsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static std::string extentStr(int64_t e) {
  return ShapedType::isDynamic(e) ? "?" : std::to_string(e);
}

//===----------------------------------------------------------------------===//
// Weight expressions
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty weight name");
  if (!getType().hasStaticShape())
    return emitOpError("weight '") << getName() << "' must have a static shape";
  std::optional<WeightLayout> layout = getLayout();
  if (!layout)
    return success();
  Type element = getType().getElementType();
  if (getType().getRank() != 2 || !element.isInteger(8))
    return emitOpError("weight '")
           << getName()
           << "' has a layout, which only a quantized matrix (i8 or ui8, "
              "rank 2) has";
  if (*layout == WeightLayout::panels)
    return emitOpError("weight '")
           << getName() << "' is stored out_in or in_out, not in panels";
  return success();
}

LogicalResult TransposeOp::verify() {
  auto in = getInput().getType();
  auto out = getType();
  int64_t rank = in.getRank();
  int64_t dim0 = getDim0Attr().getInt(), dim1 = getDim1Attr().getInt();
  if (dim0 < 0 || dim0 >= rank || dim1 < 0 || dim1 >= rank || dim0 == dim1)
    return emitOpError("needs two different dims in 0 .. ")
           << rank - 1 << ", got " << dim0 << " and " << dim1;
  if (out.getRank() != rank)
    return emitOpError("result rank must equal the input's");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t from = d == dim0 ? dim1 : d == dim1 ? dim0 : d;
    if (out.getDimSize(d) != in.getDimSize(from))
      return emitOpError("result shape must be the input's with dims ")
             << dim0 << " and " << dim1 << " swapped";
  }
  return success();
}

/// Result dim d is input dim d, or the other of the swapped pair.
void TransposeOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t dim0 = getDim0(), dim1 = getDim1();
  for (int64_t d = 0; d < getType().getRank(); ++d)
    groups.push_back({{getResult(), d},
                      {getInput(), d == dim0   ? dim1
                                   : d == dim1 ? dim0
                                               : d}});
}

LogicalResult PackPanelsOp::verify() {
  auto in = getInput().getType();
  auto out = getType();
  int64_t width = getWidth();
  if (width <= 0)
    return emitOpError("width ") << width << " must be positive";
  int64_t panels = (in.getDimSize(1) + width - 1) / width;
  if (out.getRank() == 4) {
    // Groups of inputs a dot product takes at once: quads of i8 bytes
    // (vpdpbusd), or of 4-bit (ui8) bytes, two inputs each, or bf16 pairs
    // (vdpbf16ps).
    Type element = in.getElementType();
    bool quads = out.getElementType().isInteger(8);
    if (quads && element != out.getElementType())
      return emitOpError("quads of bytes (a rank-4 ")
             << out.getElementType() << " result) are packed from "
             << out.getElementType() << ", not " << element;
    if (!quads && (!out.getElementType().isBF16() ||
                   !(element.isF32() || element.isBF16())))
      return emitOpError("bf16 pairs of inputs (a rank-4 result) are bf16, "
                         "packed from f32 or bf16, not ")
             << element << " to " << out.getElementType();
    int64_t group = quads ? 4 : 2, inputs = in.getDimSize(0);
    if (inputs % group != 0 || out.getDimSize(0) != panels ||
        out.getDimSize(1) != inputs / group || out.getDimSize(2) != width ||
        out.getDimSize(3) != group)
      return emitOpError(quads ? "quads of bytes" : "bf16 pairs")
             << " must be [ceil(out / width), in / " << group << ", width, "
             << group << "] = [" << panels << ", " << inputs / group << ", "
             << width << ", " << group << "] of "
             << (quads ? "a multiple of 4 bytes" : "an even number of inputs")
             << ", got " << out;
    return success();
  }
  if (out.getElementType() != in.getElementType())
    return emitOpError("panels keep the element type ")
           << in.getElementType() << ", got " << out.getElementType();
  if (out.getDimSize(0) != panels || out.getDimSize(1) != in.getDimSize(0) ||
      out.getDimSize(2) != width)
    return emitOpError("result must be [ceil(out / width), in, width] = [")
           << panels << ", " << in.getDimSize(0) << ", " << width << "]";
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  auto inner = getInput().getDefiningOp<TransposeOp>();
  bool sameSwap =
      inner &&
      ((inner.getDim0() == getDim0() && inner.getDim1() == getDim1()) ||
       (inner.getDim0() == getDim1() && inner.getDim1() == getDim0()));
  if (sameSwap)
    return inner.getInput();
  return {};
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto resultType = getType();
  int64_t rank = resultType.getRank();
  int64_t dim = getDimAttr().getInt();
  if (dim < 0 || dim >= rank)
    return emitOpError("dim ") << dim << " is out of range for rank " << rank;
  int64_t total = 0;
  bool dynamic = false;
  for (Value in : getInputs()) {
    auto type = cast<RankedTensorType>(in.getType());
    if (type.getRank() != rank)
      return emitOpError("inputs must all have rank ") << rank;
    // An input of extent 1 is repeated along the result's dim.
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && type.getDimSize(d) != 1 &&
          !extentsAgree(type.getDimSize(d), resultType.getDimSize(d)))
        return emitOpError("inputs differ from the result in dim ") << d;
    if (type.isDynamicDim(dim))
      dynamic = true;
    else
      total += type.getDimSize(dim);
  }
  if (!dynamic && !resultType.isDynamicDim(dim) &&
      total != resultType.getDimSize(dim))
    return emitOpError("result dim ")
           << dim << " is " << resultType.getDimSize(dim)
           << " but the inputs add up to " << total;
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front().getType() == getType() ? getInputs().front()
                                                      : OpFoldResult();
  // concat(slice(x, 0..a), slice(x, a..b), ...) covering all of x is x.
  Value source;
  int64_t next = 0;
  for (Value in : getInputs()) {
    auto slice = in.getDefiningOp<SliceOp>();
    if (!slice || slice.getDim() != getDim() || slice.getOffset() != next ||
        (source && slice.getInput() != source))
      return {};
    source = slice.getInput();
    next += slice.getSize();
  }
  if (source.getType() != getType())
    return {};
  return source;
}

/// Every dim but the joined one is shared by the inputs and the result,
/// less the inputs repeated along it (extent 1).
void ConcatOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t dim = getDim();
  for (int64_t d = 0; d < getType().getRank(); ++d) {
    if (d == dim)
      continue;
    DimGroup group{{getResult(), d}};
    for (Value in : getInputs())
      if (cast<RankedTensorType>(in.getType()).getDimSize(d) != 1 ||
          getType().getDimSize(d) == 1)
        group.push_back({in, d});
    groups.push_back(std::move(group));
  }
}

LogicalResult SliceOp::verify() {
  auto in = getInput().getType();
  int64_t dim = getDimAttr().getInt();
  if (dim < 0 || dim >= in.getRank())
    return emitOpError("dim ")
           << dim << " is out of range for rank " << in.getRank();
  // The generated getters return uint64_t; read the attributes signed.
  int64_t offset = getOffsetAttr().getInt(), size = getSizeAttr().getInt();
  if (offset < 0 || size <= 0)
    return emitOpError("needs offset >= 0 and size > 0");
  if (!in.isDynamicDim(dim) && offset + size > in.getDimSize(dim))
    return emitOpError("range [")
           << offset << ", " << offset + size << ") exceeds dim " << dim
           << " of extent " << in.getDimSize(dim);
  auto out = getType();
  if (out.getRank() != in.getRank())
    return emitOpError("result rank must equal the input's");
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t want = d == dim ? size : in.getDimSize(d);
    if (out.getDimSize(d) != want)
      return emitOpError("result dim ")
             << d << " must be " << extentStr(want) << ", got "
             << extentStr(out.getDimSize(d));
  }
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getOffset() == 0 && getInput().getType() == getType())
    return getInput();
  return {};
}

/// Every dim but the sliced one carries over.
void SliceOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t dim = getDim();
  for (int64_t d = 0; d < getType().getRank(); ++d)
    if (d != dim)
      groups.push_back({{getResult(), d}, {getInput(), d}});
}

/// The shape as runs of static dims between dynamic ones: for each run
/// (before the first dynamic dim, between two, after the last) the product
/// of its extents, and the positions of the dynamic dims.
static void reshapeRuns(ArrayRef<int64_t> shape, SmallVectorImpl<int64_t> &runs,
                        SmallVectorImpl<int64_t> &dynamicDims) {
  runs.assign(1, 1);
  for (auto [d, extent] : llvm::enumerate(shape)) {
    if (ShapedType::isDynamic(extent)) {
      dynamicDims.push_back(d);
      runs.push_back(1);
    } else {
      runs.back() *= extent;
    }
  }
}

LogicalResult ReshapeOp::verify() {
  SmallVector<int64_t> inRuns, outRuns, inDynamic, outDynamic;
  reshapeRuns(getInput().getType().getShape(), inRuns, inDynamic);
  reshapeRuns(getType().getShape(), outRuns, outDynamic);
  if (inDynamic.size() != outDynamic.size())
    return emitOpError("must keep the input's ")
           << inDynamic.size() << " dynamic dims, the result has "
           << outDynamic.size();
  if (inRuns != outRuns)
    return emitOpError("changes the element count between dynamic dims: "
                       "the static extents must multiply to the same "
                       "numbers before, between and after them");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

/// The dynamic dims pair up in order.
void ReshapeOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  SmallVector<int64_t> runs, inDynamic, outDynamic;
  reshapeRuns(getInput().getType().getShape(), runs, inDynamic);
  reshapeRuns(getType().getShape(), runs, outDynamic);
  for (auto [in, out] : llvm::zip(inDynamic, outDynamic))
    groups.push_back({{getResult(), out}, {getInput(), in}});
}

LogicalResult ReduceOp::verify() {
  if (getKind() != "sum" && getKind() != "mean")
    return emitOpError("kind must be \"sum\" or \"mean\", got \"")
           << getKind() << "\"";
  auto in = getInput().getType();
  int64_t dim = getDimAttr().getInt();
  if (dim < 0 || dim >= in.getRank())
    return emitOpError("dim ")
           << dim << " is out of range for rank " << in.getRank();
  SmallVector<int64_t> expected(in.getShape());
  expected.erase(expected.begin() + dim);
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result must be the input's shape without dim ") << dim;
  return success();
}

/// The result is the input without `dim`.
void ReduceOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t dim = getDim();
  for (int64_t d = 0; d < getType().getRank(); ++d)
    groups.push_back({{getResult(), d}, {getInput(), d < dim ? d : d + 1}});
}

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  if (getFactor().convertToFloat() == 1.0f)
    return getInput();
  return {};
}

namespace {
/// scale(scale(x, a), b) -> scale(x, a * b).
struct CombineScales : OpRewritePattern<ScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ScaleOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a scale");
    float factor =
        inner.getFactor().convertToFloat() * op.getFactor().convertToFloat();
    rewriter.replaceOpWithNewOp<ScaleOp>(op, inner.getInput(),
                                         rewriter.getF32FloatAttr(factor));
    return success();
  }
};
} // namespace

void ScaleOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                          MLIRContext *context) {
  results.add<CombineScales>(context);
}

//===----------------------------------------------------------------------===//
// Model-level ops
//===----------------------------------------------------------------------===//

/// A ui8 weight is 4-bit values two per byte along the input features.
static bool isPackedFourBit(Type element) {
  return element.isUnsignedInteger(8);
}

int64_t LinearOp::getInFeatures() {
  auto w = getWeight().getType();
  int64_t perByte = isPackedFourBit(w.getElementType()) ? 2 : 1;
  switch (getLayout()) {
  case WeightLayout::out_in:
    return perByte * w.getDimSize(1);
  case WeightLayout::in_out:
    return perByte * w.getDimSize(0);
  case WeightLayout::panels:
    // bf16 pairs or quads of bytes: [panels, in / g, width, g].
    if (w.getRank() == 4)
      return perByte * w.getDimSize(3) * w.getDimSize(1);
    return w.getRank() == 3 ? perByte * w.getDimSize(1) : ShapedType::kDynamic;
  }
  llvm_unreachable("unknown weight layout");
}

/// Checks the scales of a ui8 (4-bit) weight: one per group of G inputs of
/// each output, `[out, in / G]` (`outIn`) or `[in / G, out]`, G dividing
/// `in`.
static LogicalResult
verifyGroupScales(llvm::function_ref<InFlightDiagnostic()> error, Value scales,
                  int64_t out, int64_t in, bool outIn) {
  if (!scales)
    return error() << "is ui8 (4-bit) and needs its per-group scales";
  auto type = cast<RankedTensorType>(scales.getType());
  int64_t groups =
      type.getRank() == 2 ? type.getDimSize(outIn ? 1 : 0) : int64_t(0);
  if (type.getRank() != 2 || type.getDimSize(outIn ? 0 : 1) != out ||
      groups <= 0 || ShapedType::isDynamic(in) || in % groups != 0)
    return error() << "scales must be "
                   << (outIn ? "[out, in / G]" : "[in / G, out]") << " with "
                   << out << " outputs and G dividing the " << in
                   << " inputs, got " << type;
  return success();
}

/// A 4-bit matrix packed into quads of bytes, `[panels, in / 8, width, 4]`:
/// its group scales packed as its bytes are, `[panels, in / G, width]`.
struct QuadPanels {
  int64_t panels, width;
};

static LogicalResult verifyQuadGroupScales(Operation *op, Value scales,
                                           QuadPanels quads, int64_t in) {
  auto type =
      scales ? cast<RankedTensorType>(scales.getType()) : RankedTensorType();
  int64_t groups = type && type.getRank() == 3 ? type.getDimSize(1) : 0;
  if (type && type.getRank() == 3 && type.getDimSize(0) == quads.panels &&
      type.getDimSize(2) == quads.width && groups > 0 &&
      !ShapedType::isDynamic(in) && in % groups == 0)
    return success();
  InFlightDiagnostic diag =
      op->emitOpError("a 4-bit weight in quads needs its group scales packed "
                      "as its bytes, [")
      << quads.panels << ", in / G, " << quads.width << "] with G dividing the "
      << in << " inputs, got ";
  if (type)
    diag << type;
  else
    diag << "none";
  return diag;
}

/// Checks the scales of a weight `what` of element type `element` read as a
/// matrix of `out` outputs (an `output` each) and `in` inputs, `[out, in]`
/// (`outIn`) or `[in, out]`, or as 4-bit quads (`quads`): a ui8 (4-bit)
/// one's per group, an i8 one's one per output, and none for any other type.
static LogicalResult verifyScales(Operation *op, llvm::StringRef what,
                                  llvm::StringRef output, Type element,
                                  Value scales, int64_t out, int64_t in,
                                  bool outIn,
                                  std::optional<QuadPanels> quads = {}) {
  if (isPackedFourBit(element) && quads)
    return verifyQuadGroupScales(op, scales, *quads, in);
  if (isPackedFourBit(element))
    return verifyGroupScales(
        [&] {
          InFlightDiagnostic diag = op->emitOpError();
          diag << what << " ";
          return diag;
        },
        scales, out, in, outIn);
  bool quantized = element.isInteger(8);
  if (quantized && !scales)
    return op->emitOpError("an i8 ")
           << what << " needs its per-" << output << " scales";
  if (!quantized && scales)
    return op->emitOpError("scales apply only to an i8 or ui8 ")
           << what << ", not " << element;
  auto type =
      scales ? cast<RankedTensorType>(scales.getType()) : RankedTensorType();
  if (type && (type.getRank() != 1 || type.getDimSize(0) != out))
    return op->emitOpError("scales have ")
           << type.getDimSize(0) << " entries, expected " << out;
  return success();
}

int64_t LinearOp::getOutFeatures() {
  auto w = getWeight().getType();
  switch (getLayout()) {
  case WeightLayout::out_in:
    return w.getDimSize(0);
  case WeightLayout::in_out:
    return w.getDimSize(1);
  case WeightLayout::panels:
    // The last panel may be padded: the result says how many are real.
    return getType().getShape().back();
  }
  llvm_unreachable("unknown weight layout");
}

/// Checks that `result` is `input` with its last dim replaced by `last`.
static LogicalResult verifyFeatureMap(Operation *op, RankedTensorType input,
                                      RankedTensorType result, int64_t last) {
  if (input.getRank() != result.getRank())
    return op->emitOpError("result rank ")
           << result.getRank() << " differs from the input's "
           << input.getRank();
  for (int64_t d = 0; d + 1 < input.getRank(); ++d)
    if (input.getDimSize(d) != result.getDimSize(d))
      return op->emitOpError("result dim ")
             << d << " (" << extentStr(result.getDimSize(d))
             << ") differs from the input's (" << extentStr(input.getDimSize(d))
             << ")";
  if (result.getDimSize(input.getRank() - 1) != last)
    return op->emitOpError("result feature dim must be ")
           << last << ", got "
           << extentStr(result.getDimSize(input.getRank() - 1));
  return success();
}

LogicalResult LinearOp::verify() {
  int64_t weightRank = getLayout() == WeightLayout::panels ? 3 : 2;
  auto wtype = getWeight().getType();
  bool pairs = getLayout() == WeightLayout::panels && wtype.getRank() == 4;
  if (wtype.getRank() != weightRank && !pairs)
    return emitOpError("layout ") << stringifyWeightLayout(getLayout())
                                  << " needs a rank-" << weightRank << " weight"
                                  << (getLayout() == WeightLayout::panels
                                          ? " (or rank 4: bf16 pairs or i8 "
                                            "quads of inputs)"
                                          : "");
  Type element = wtype.getElementType();
  if (pairs && !(element.isBF16() && wtype.getDimSize(3) == 2) &&
      !(element.isInteger(8) && wtype.getDimSize(3) == 4))
    return emitOpError("a rank-4 panels weight is bf16 pairs of inputs, "
                       "[panels, in / 2, width, 2] of bf16, or quads of "
                       "bytes, [panels, in / 4, width, 4] of i8 or "
                       "[panels, in / 8, width, 4] of ui8 (4-bit), got ")
           << wtype;
  auto input = getInput().getType();
  if (input.getRank() < 1)
    return emitOpError("input must have at least one dim");
  int64_t in = input.getDimSize(input.getRank() - 1);
  if (!extentsAgree(in, getInFeatures()))
    return emitOpError("weight expects ")
           << getInFeatures() << " input features (layout "
           << stringifyWeightLayout(getLayout()) << "), but the input has "
           << in;
  auto w = getWeight().getType();
  if (getLayout() == WeightLayout::panels &&
      !ShapedType::isDynamic(getOutFeatures()) &&
      w.getDimSize(0) !=
          (getOutFeatures() + w.getDimSize(2) - 1) / w.getDimSize(2))
    return emitOpError("weight has ")
           << w.getDimSize(0) << " panels of " << w.getDimSize(2)
           << " outputs, but the result has " << getOutFeatures()
           << " features";
  if (getBias() && getBias().getType().getDimSize(0) != getOutFeatures())
    return emitOpError("bias has ")
           << getBias().getType().getDimSize(0) << " entries, expected "
           << getOutFeatures();
  std::optional<QuadPanels> quads;
  if (pairs)
    quads = QuadPanels{w.getDimSize(0), w.getDimSize(2)};
  if (failed(verifyScales(*this, "weight", "output", w.getElementType(),
                          getScales(), getOutFeatures(), getInFeatures(),
                          getLayout() == WeightLayout::out_in, quads)))
    return failure();
  return verifyFeatureMap(*this, input, getType(), getOutFeatures());
}

/// The input's leading dims carry over; the feature dim is the weight's.
void LinearOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t rank = getType().getRank();
  for (int64_t d = 0; d + 1 < rank; ++d)
    groups.push_back({{getResult(), d}, {getInput(), d}});
}

/// 2 * in * out per row (the bias add is not counted).
double
LinearOp::getFlopCount(SmallVectorImpl<std::pair<Value, unsigned>> &dims) {
  auto input = cast<RankedTensorType>(getInput().getType());
  for (int64_t d = 0; d + 1 < input.getRank(); ++d)
    dims.push_back({getInput(), unsigned(d)});
  return 2.0 * double(input.getShape().back()) * double(getOutFeatures());
}

int64_t EmbeddingOp::getFeatures() {
  auto table = getTable().getType();
  return (isPackedFourBit(table.getElementType()) ? 2 : 1) *
         table.getDimSize(1);
}

LogicalResult EmbeddingOp::verify() {
  auto ids = getIds().getType();
  auto table = getTable().getType();
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(getFeatures());
  if (getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result must be the ids' shape with the table's ")
           << getFeatures() << " features";
  // A quantized table is an [out, in] matrix of a row per id, scaled as
  // attn.linear's.
  return verifyScales(*this, "table", "row", table.getElementType(),
                      getScales(), table.getDimSize(0), getFeatures(),
                      /*outIn=*/true);
}

/// The result has the ids' dims, then the table's feature dim (a ui8
/// table's dim counts bytes, two features each: the same extent only
/// otherwise).
void EmbeddingOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t rank = getIds().getType().getRank();
  for (int64_t d = 0; d < rank; ++d)
    groups.push_back({{getResult(), d}, {getIds(), d}});
  if (!isPackedFourBit(getTable().getType().getElementType()))
    groups.push_back({{getResult(), rank}, {getTable(), 1}});
}

LogicalResult PositionsOp::verify() {
  auto input = getInput().getType();
  int64_t dim = getDim();
  if (dim < 0 || dim >= input.getRank())
    return emitOpError("dim ")
           << dim << " is outside the input's rank " << input.getRank();
  // I64Attr reads back unsigned: the start as written.
  int64_t start = static_cast<int64_t>(getStart());
  if (start < 0 || start > std::numeric_limits<int32_t>::max())
    return emitOpError("start ") << start << " is not an i32 position";
  auto result = getType();
  if (result.getRank() != 1 && result.getRank() != dim + 1)
    return emitOpError("result must be [n] or the input's dims 0 .. ") << dim;
  if (getOffset() && (dim == 0 || result.getRank() == 1))
    return emitOpError("an offset per sequence needs the [B, n] result, the "
                       "input's dims 0 .. ")
           << dim;
  ArrayRef<int64_t> dims =
      input.getShape().take_front(dim + 1).take_back(result.getRank());
  if (result.getShape() != dims) {
    if (result.getRank() == 1)
      return emitOpError("result must have the extent of input dim ") << dim;
    return emitOpError("result must have the extents of input dims 0 .. ")
           << dim;
  }
  if (getOffset() &&
      !extentsAgree(getOffset().getType().getDimSize(0), result.getDimSize(0)))
    return emitOpError("the offset must have one entry per sequence");
  return success();
}

void PositionsOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t rank = getType().getRank(), dim = getDim();
  for (int64_t r = 0; r < rank; ++r)
    groups.push_back({{getResult(), r}, {getInput(), dim - (rank - 1 - r)}});
  if (getOffset())
    groups.push_back({{getResult(), 0}, {getOffset(), 0}});
}

/// The scales of an i8 KV cache `cache`: f32 `[batch..., rows, groups]`
/// with the cache's batch and row dims (one scale per row and key/value
/// head).
static LogicalResult verifyCacheScales(Operation *op, StringRef what,
                                       Type cacheType, Value scales,
                                       int64_t groups) {
  auto cache = cast<RankedTensorType>(cacheType);
  if (!scales)
    return op->emitOpError("an i8 KV cache needs its ") << what;
  auto type = cast<RankedTensorType>(scales.getType());
  int64_t rank = cache.getRank();
  bool same = type.getRank() == rank && type.getShape().back() == groups;
  for (int64_t d = 0; same && d + 1 < rank; ++d)
    same = extentsAgree(type.getDimSize(d), cache.getDimSize(d));
  if (!same)
    return op->emitOpError()
           << what << " must be f32 with the cache's batch and row dims and "
           << groups << " scales a row (one per key/value head), got " << type;
  return success();
}

LogicalResult CacheWriteOp::verify() {
  auto cache = getCache().getType(), update = getRows().getType();
  int64_t rank = cache.getRank();
  if (rank < 2 || update.getRank() != rank)
    return emitOpError("cache and new rows must have one rank, at least 2");
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (!extentsAgree(cache.getDimSize(d), update.getDimSize(d)))
      return emitOpError("cache and new rows differ in batch dim ") << d;
  int64_t features = update.getShape().back();
  bool quantized = cache.getElementType().isSignlessInteger(8);
  std::optional<uint64_t> groups = getGroups();
  if ((quantized || getScales()) && !groups)
    return emitOpError("an i8 cache and its scales need 'groups'");
  if (!quantized && !getScales() && groups)
    return emitOpError("'groups' is for an i8 cache and its scales");
  if (groups && (ShapedType::isDynamic(features) || features % *groups != 0))
    return emitOpError("'groups' = ")
           << *groups << " must divide the rows' " << features << " features";
  if (getScales()) {
    if (!cache.getElementType().isF32() ||
        cache.getShape().back() != int64_t(*groups))
      return emitOpError("the scales of an i8 cache must be f32 with ")
             << *groups << " ('groups') scales a row, got " << cache;
  } else if (cache.getShape().back() != features ||
             ShapedType::isDynamic(cache.getShape().back())) {
    return emitOpError("cache and new rows must have one static feature dim");
  }
  if (getPosition() && rank < 3)
    return emitOpError("a position needs a batch dim");
  return success();
}

void CacheWriteOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t rank = getCache().getType().getRank();
  for (int64_t d = 0; d + 2 < rank; ++d) {
    DimGroup group{{getResult(), d}, {getCache(), d}, {getRows(), d}};
    if (d == 0 && getPosition())
      group.push_back({getPosition(), 0});
    groups.push_back(std::move(group));
  }
  groups.push_back({{getResult(), rank - 2}, {getCache(), rank - 2}});
  if (getScales()) {
    // One scale per group of the rows' features.
    groups.push_back({{getResult(), rank - 1}, {getCache(), rank - 1}});
    groups.push_back({{getRows(), rank - 1}});
    return;
  }
  groups.push_back(
      {{getResult(), rank - 1}, {getCache(), rank - 1}, {getRows(), rank - 1}});
}

LogicalResult SinusoidalOp::verify() {
  auto positions = getPositions().getType();
  auto result = getType();
  if (result.getRank() != positions.getRank() + 1 ||
      result.getShape().drop_back() != positions.getShape())
    return emitOpError("result must be the positions' shape with one more "
                       "(feature) dim");
  int64_t features = result.getDimSize(result.getRank() - 1);
  if (ShapedType::isDynamic(features) || features <= 0 || features % 2)
    return emitOpError("the feature dim must be a static even size, got ")
           << features;
  return success();
}

void SinusoidalOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t rank = getPositions().getType().getRank();
  for (int64_t d = 0; d < rank; ++d)
    groups.push_back({{getResult(), d}, {getPositions(), d}});
}

int64_t RelativeBiasOp::getBucketsPerDirection() {
  int64_t buckets = getTable().getType().getDimSize(0);
  return getBidirectional() ? buckets / 2 : buckets;
}

LogicalResult RelativeBiasOp::verify() {
  auto input = getInput().getType();
  auto table = getTable().getType();
  if (input.getRank() != 3)
    return emitOpError("input must be [B, S, features], got rank ")
           << input.getRank();
  if (!table.hasStaticShape())
    return emitOpError("table must have a static shape");
  int64_t buckets = table.getDimSize(0), heads = table.getDimSize(1);
  if (getBidirectional() && buckets % 2)
    return emitOpError("bidirectional buckets come in pairs, got ") << buckets;
  int64_t maxExact = getBucketsPerDirection() / 2;
  if (maxExact < 1)
    return emitOpError("needs at least 2 buckets per direction, got ")
           << getBucketsPerDirection();
  if (getMaxDistance() <= maxExact)
    return emitOpError("max_distance ")
           << getMaxDistance() << " must exceed the " << maxExact
           << " distances held exactly";
  auto result = getType();
  int64_t b = input.getDimSize(0), s = input.getDimSize(1), keys = s;
  if (bool(getQueryOffsets()) != bool(getKeys()))
    return emitOpError("takes query offsets and a key cache together, or "
                       "neither");
  if (Value cache = getKeys()) {
    auto type = cast<RankedTensorType>(cache.getType());
    auto offsets = getQueryOffsets().getType();
    if (type.getRank() != 3 || !extentsAgree(type.getDimSize(0), b) ||
        !extentsAgree(offsets.getDimSize(0), b))
      return emitOpError("the key cache must be [B, L, features] and the "
                         "query offsets [B] of the input's batch");
    keys = type.getDimSize(1);
  }
  if (result.getRank() != 4 || !extentsAgree(result.getDimSize(0), b) ||
      result.getDimSize(1) != heads || !extentsAgree(result.getDimSize(2), s) ||
      !extentsAgree(result.getDimSize(3), keys))
    return emitOpError("result must be [B, heads, S, S] of the input's B "
                       "and S and the table's ")
           << heads << " heads ([B, heads, S, L] over a key cache)";
  return success();
}

SmallVector<int32_t> RelativeBiasOp::getDistanceBuckets() {
  // T5Attention._relative_position_bucket in f32, as PyTorch evaluates it:
  // max_exact + long(log(float(n) / max_exact) / log(max_distance /
  // max_exact) * (buckets - max_exact)), the Python float divisor rounded
  // to f32 first.
  int64_t buckets = getBucketsPerDirection(), maxExact = buckets / 2;
  int64_t maxDistance = getMaxDistance();
  float divisor = float(std::log(double(maxDistance) / double(maxExact)));
  SmallVector<int32_t> result;
  for (int64_t n = 0; n < maxDistance; ++n) {
    if (n < maxExact) {
      result.push_back(int32_t(n));
      continue;
    }
    float ratio = float(n) / float(maxExact);
    float scaled = std::log(ratio) / divisor * float(buckets - maxExact);
    int64_t large = maxExact + int64_t(scaled);
    result.push_back(int32_t(std::min(large, buckets - 1)));
  }
  return result;
}

/// [B, heads, S, S]: B and both S from the input, heads from the table;
/// over a key cache the keys' dim is the cache's L.
void RelativeBiasOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  DimGroup batch{{getResult(), 0}, {getInput(), 0}};
  if (Value keys = getKeys())
    batch.append({{getQueryOffsets(), 0}, {keys, 0}});
  groups.push_back(std::move(batch));
  groups.push_back({{getResult(), 1}, {getTable(), 1}});
  groups.push_back({{getResult(), 2}, {getInput(), 1}});
  if (Value keys = getKeys())
    groups.push_back({{getResult(), 3}, {keys, 1}});
  else
    groups.push_back({{getResult(), 3}, {getInput(), 1}});
}

LogicalResult SoftmaxOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1))
    return emitOpError("input needs a static last dim");
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1))
    return emitOpError("input needs a static feature (last) dim");
  int64_t d = input.getDimSize(input.getRank() - 1);
  if (getGamma().getType().getDimSize(0) != d ||
      getBeta().getType().getDimSize(0) != d)
    return emitOpError("gamma and beta must have ")
           << d << " entries, the input's feature dim";
  if (!(getEpsilon().convertToFloat() > 0.0f))
    return emitOpError("epsilon must be positive");
  if (getType() != input)
    return emitOpError("result type must equal the input type");
  return success();
}

LogicalResult InterleaveOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto type = cast<RankedTensorType>(getInputs()[0].getType());
  int64_t rank = type.getRank(), dim = getDim();
  if (dim < 0 || dim >= rank)
    return emitOpError("dim ") << dim << " is out of range for rank " << rank;
  for (Value in : getInputs())
    if (in.getType() != type)
      return emitOpError("inputs must all have one type");
  if (type.isDynamicDim(dim))
    return emitOpError("needs a static dim ") << dim;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] *= int64_t(getInputs().size());
  if (getType() != RankedTensorType::get(shape, type.getElementType()))
    return emitOpError("result type must be ")
           << RankedTensorType::get(shape, type.getElementType());
  return success();
}

LogicalResult GluOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1) ||
      input.getDimSize(input.getRank() - 1) % 2 != 0)
    return emitOpError("input needs an even static feature (last) dim");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() /= 2;
  if (getType() != RankedTensorType::get(shape, input.getElementType()))
    return emitOpError("result must have half the input's features");
  std::optional<RegisteredOperationName> act = RegisteredOperationName::lookup(
      ("attn." + getActivation()).str(), getContext());
  auto *fusion = act ? act->getInterface<FusionOpInterface>() : nullptr;
  if (!act || !act->hasInterface<BuiltinFunctionOpInterface>() || !fusion ||
      fusion->getFusionRole() != FusionRole::Epilogue)
    return emitOpError("activation '")
           << getActivation()
           << "' is not an elementwise function of one tensor";
  return success();
}

LogicalResult RmsNormOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 1 || input.isDynamicDim(input.getRank() - 1))
    return emitOpError("input needs a static feature (last) dim");
  int64_t d = input.getDimSize(input.getRank() - 1);
  if (getGamma().getType().getDimSize(0) != d)
    return emitOpError("gamma must have ")
           << d << " entries, the input's feature dim";
  if (!(getEpsilon().convertToFloat() > 0.0f))
    return emitOpError("epsilon must be positive");
  if (!std::isfinite(getOffset().convertToFloat()))
    return emitOpError("offset must be finite");
  if (getType() != input)
    return emitOpError("result type must equal the input type");
  return success();
}

LogicalResult SoftcapOp::verify() {
  float cap = getCap().convertToFloat();
  if (!(cap > 0.0f) || !std::isfinite(cap))
    return emitOpError("cap must be positive and finite");
  return success();
}

/// Checks an `[out, in]` projection weight and its optional bias.
static LogicalResult verifyProjection(Operation *op, StringRef what, Value w,
                                      Value b, int64_t out, int64_t in,
                                      Value scales = {}) {
  auto wt = cast<RankedTensorType>(w.getType());
  // A ui8 (4-bit) matrix's bytes hold two inputs each.
  int64_t bytes = isPackedFourBit(wt.getElementType()) ? in / 2 : in;
  if (wt.getDimSize(0) != out || wt.getDimSize(1) != bytes)
    return op->emitOpError()
           << what << " weight must be [" << out << ", " << bytes
           << "] ([out, in]" << (bytes != in ? ", two inputs per byte" : "")
           << "), got [" << wt.getDimSize(0) << ", " << wt.getDimSize(1) << "]";
  if (b && cast<RankedTensorType>(b.getType()).getDimSize(0) != out)
    return op->emitOpError() << what << " bias must have " << out << " entries";
  if (bytes != in)
    return verifyGroupScales(
        [&] { return op->emitOpError() << what << " weight "; }, scales, out,
        in, /*outIn=*/true);
  bool quantized = wt.getElementType().isInteger(8);
  if (quantized != bool(scales))
    return op->emitOpError()
           << what
           << (quantized ? " weight is i8 and needs its per-output scales"
                         : " scales apply only to an i8 or ui8 weight");
  auto stype =
      scales ? cast<RankedTensorType>(scales.getType()) : RankedTensorType();
  if (stype && (stype.getRank() != 1 || stype.getDimSize(0) != out))
    return op->emitOpError()
           << what << " scales must have " << out << " entries";
  return success();
}

static LogicalResult verifyAttentionExtras(Operation *op, RankedTensorType q,
                                           RankedTensorType k, int64_t heads,
                                           Value lengths, Value bias,
                                           Value weights);

LogicalResult SelfAttentionOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 2)
    return emitOpError("input must be at least [S, D]");
  int64_t d = input.getDimSize(input.getRank() - 1);
  if (ShapedType::isDynamic(d))
    return emitOpError("the feature dim must be static");
  if (!getHeadDim() && d % getHeads() != 0)
    return emitOpError("d_model ")
           << d << " is not divisible by heads = " << getHeads();
  int64_t kvHeads = getNumKvHeads(), headDim = getHeadDimension();
  if (kvHeads > getHeads() || getHeads() % kvHeads != 0)
    return emitOpError("kv_heads = ")
           << kvHeads << " does not divide heads = " << getHeads();
  // Queries have heads, keys and values kv_heads heads of head_dim.
  int64_t qd = getHeads() * headDim, kvd = kvHeads * headDim;
  bool ropeParams = getRopeTheta() || getRopeDims() || getRopeScaling() ||
                    getRopeFactor() || getRopeLowFreqFactor() ||
                    getRopeHighFreqFactor() || getRopeOriginalMax();
  if (ropeParams && !getRope())
    return emitOpError("rope_theta, rope_dims and rope scaling need rope");
  if (getRope()) {
    float theta =
        getRopeTheta() ? getRopeTheta()->convertToFloat() : kDefaultRopeTheta;
    std::string why =
        checkRope(headDim, getRopeDims() ? *getRopeDims() : headDim, theta,
                  getRopeScalingParams());
    if (!why.empty())
      return emitOpError(why);
  }
  if (auto cap = getSoftcap(); cap && !(cap->convertToFloat() > 0))
    return emitOpError("softcap must be > 0");
  if (getQkvPerHead() && (!getQkvWeight() || kvHeads != getHeads()))
    return emitOpError("qkv_per_head needs a packed qkv projection and as "
                       "many key/value heads as heads");
  bool separate = getQWeight() || getKWeight() || getVWeight();
  if (separate == bool(getQkvWeight()))
    return emitOpError("needs either q, k and v projections or one packed qkv "
                       "projection");
  if (separate) {
    if (!getQWeight() || !getKWeight() || !getVWeight())
      return emitOpError("needs all three of q, k and v projections");
    if (failed(verifyProjection(*this, "q", getQWeight(), getQBias(), qd, d,
                                getQScales())) ||
        failed(verifyProjection(*this, "k", getKWeight(), getKBias(), kvd, d,
                                getKScales())) ||
        failed(verifyProjection(*this, "v", getVWeight(), getVBias(), kvd, d,
                                getVScales())))
      return failure();
  } else if (failed(verifyProjection(*this, "qkv", getQkvWeight(), getQkvBias(),
                                     qd + 2 * kvd, d, getQkvScales()))) {
    return failure();
  }
  if (getQkvScales() && !getQkvWeight())
    return emitOpError("qkv scales without a packed qkv projection");
  if ((getQScales() || getKScales() || getVScales()) && !separate)
    return emitOpError("q, k or v scales without separate projections");
  if (failed(verifyProjection(*this, "out", getOutWeight(), getOutBias(), d, qd,
                              getOutScales())))
    return failure();
  if (getResult().getType() != input)
    return emitOpError("result type must equal the input type");
  if (failed(verifyCaches()))
    return failure();
  // A decode's keys are the cache's rows.
  auto keys =
      getPosition() ? cast<RankedTensorType>(getKeyCache().getType()) : input;
  return verifyAttentionExtras(*this, input, keys, getHeads(), getKeyLengths(),
                               getBias(), getWeights());
}

/// Key (and value) features: the k projection's outputs, or the packed
/// projection's after the queries' `d_model`, split between K and V.
int64_t SelfAttentionOp::getKeyFeatures() {
  if (Value k = getKWeight())
    return cast<RankedTensorType>(k.getType()).getDimSize(0);
  int64_t qd = getHeads() * getHeadDimension();
  return (cast<RankedTensorType>(getQkvWeight().getType()).getDimSize(0) - qd) /
         2;
}

int64_t SelfAttentionOp::getHeadDimension() {
  if (std::optional<uint64_t> headDim = getHeadDim())
    return int64_t(*headDim);
  return getInput().getType().getShape().back() / getHeads();
}

/// An optional f32 attribute as an optional float.
static std::optional<float> optionalFloat(std::optional<APFloat> value) {
  if (!value)
    return std::nullopt;
  return value->convertToFloat();
}

static std::optional<int64_t> optionalInt(std::optional<uint64_t> value) {
  if (!value)
    return std::nullopt;
  return int64_t(*value);
}

RopeScalingParams SelfAttentionOp::getRopeScalingParams() {
  return {getRopeScaling(), optionalFloat(getRopeFactor()),
          optionalFloat(getRopeLowFreqFactor()),
          optionalFloat(getRopeHighFreqFactor()),
          optionalInt(getRopeOriginalMax())};
}

RopeScalingParams RopeOp::getScalingParams() {
  return {getScaling(), optionalFloat(getFactor()),
          optionalFloat(getLowFreqFactor()), optionalFloat(getHighFreqFactor()),
          optionalInt(getOriginalMax())};
}

/// Caches: both or neither, `[batch..., L, key features]`; a position only
/// with them; no weights result when decoding (its [S, S] shape has no
/// place for the cached keys; an additive bias is [B, heads, S, L]).
LogicalResult SelfAttentionOp::verifyCaches() {
  Value k = getKeyCache(), v = getValueCache();
  if (bool(k) != bool(v))
    return emitOpError("needs both a key and a value cache, or neither");
  if (!k) {
    if (getPosition())
      return emitOpError("has a position but no caches");
    return success();
  }
  auto input = getInput().getType();
  int64_t rank = input.getRank();
  for (Value cache : {k, v}) {
    auto type = cast<RankedTensorType>(cache.getType());
    if (type.getRank() != rank)
      return emitOpError("caches must have the input's rank ") << rank;
    for (int64_t d = 0; d + 2 < rank; ++d)
      if (!extentsAgree(type.getDimSize(d), input.getDimSize(d)))
        return emitOpError("cache batch dim ")
               << d << " differs from the input's";
    if (type.getShape().back() != getKeyFeatures())
      return emitOpError("caches must have ")
             << getKeyFeatures() << " features (the keys'), got "
             << type.getShape().back();
  }
  bool quantized =
      cast<RankedTensorType>(k.getType()).getElementType().isSignlessInteger(8);
  if (quantized !=
      cast<RankedTensorType>(v.getType()).getElementType().isSignlessInteger(8))
    return emitOpError("the key and value caches must both be i8, or neither");
  if (quantized) {
    if (failed(verifyCacheScales(*this, "key_cache_scale", k.getType(),
                                 getKeyCacheScale(), getNumKvHeads())) ||
        failed(verifyCacheScales(*this, "value_cache_scale", v.getType(),
                                 getValueCacheScale(), getNumKvHeads())))
      return failure();
  } else if (getKeyCacheScale() || getValueCacheScale()) {
    return emitOpError("cache scales are for i8 caches");
  }
  if (getPosition() && getWeights())
    return emitOpError("cannot decode with a weights result");
  return success();
}

ParseResult mlir::attn::parseBinaryOp(OpAsmParser &parser,
                                      OperationState &result) {
  OpAsmParser::UnresolvedOperand lhs, rhs;
  Type lhsType, rhsType, resultType;
  if (parser.parseOperand(lhs) || parser.parseComma() ||
      parser.parseOperand(rhs) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(lhsType))
    return failure();
  rhsType = resultType = lhsType;
  if (succeeded(parser.parseOptionalComma()) &&
      (parser.parseType(rhsType) || parser.parseArrow() ||
       parser.parseType(resultType)))
    return failure();
  result.addTypes(resultType);
  return parser.resolveOperands({lhs, rhs}, {lhsType, rhsType},
                                parser.getNameLoc(), result.operands);
}

void mlir::attn::printBinaryOp(OpAsmPrinter &printer, Operation *op) {
  printer << ' ' << op->getOperand(0) << ", " << op->getOperand(1);
  printer.printOptionalAttrDict(op->getAttrs());
  Type lhs = op->getOperand(0).getType(), rhs = op->getOperand(1).getType();
  Type result = op->getResult(0).getType();
  printer << " : " << lhs;
  if (lhs != rhs || lhs != result)
    printer << ", " << rhs << " -> " << result;
}

LogicalResult mlir::attn::verifyBinaryOp(Operation *op) {
  auto lhs = cast<RankedTensorType>(op->getOperand(0).getType());
  auto rhs = cast<RankedTensorType>(op->getOperand(1).getType());
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  RankedTensorType longer = lhs.getRank() >= rhs.getRank() ? lhs : rhs;
  RankedTensorType shorter = lhs.getRank() >= rhs.getRank() ? rhs : lhs;
  if (result != longer)
    return op->emitOpError("result type ")
           << result << " must be the longer operand's type " << longer;
  int64_t offset = longer.getRank() - shorter.getRank();
  for (int64_t d = 0; d < shorter.getRank(); ++d)
    if (!extentsAgree(shorter.getDimSize(d), longer.getDimSize(offset + d)))
      return op->emitOpError("operands do not broadcast: dim ")
             << d << " of " << shorter << " differs from dim " << offset + d
             << " of " << longer;
  return success();
}

/// The result has the input's dims; lengths, bias and weights follow the
/// batch and the sequence (queries and keys are one sequence).
void SelfAttentionOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  Value x = getInput(), out = getResult(), bias = getBias(),
        weights = getWeights();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  int64_t br = bias ? cast<RankedTensorType>(bias.getType()).getRank() : 0;
  for (int64_t d = 0; d < rank; ++d) {
    DimGroup group{{out, d}, {x, d}};
    if (weights && d + 2 < rank)
      group.push_back({weights, d});
    if (d == 0 && rank > 2 && getKeyLengths())
      group.push_back({getKeyLengths(), 0});
    if (d == 0 && rank > 2 && br > 2)
      group.push_back({bias, 0});
    if (d == 0 && rank > 2 && getPosition())
      group.push_back({getPosition(), 0});
    for (Value cache : {getKeyCache(), getValueCache(), getKeyCacheScale(),
                        getValueCacheScale()})
      if (cache && d + 2 < rank)
        group.push_back({cache, d});
    if (d == rank - 2) {
      if (weights)
        group.append({{weights, rank - 1}, {weights, rank}});
      if (bias)
        group.push_back({bias, br - 2});
      // A decode's bias runs over the cache's rows.
      if (bias && !getPosition())
        group.push_back({bias, br - 1});
    }
    groups.push_back(std::move(group));
  }
  if (getKeyCache()) {
    DimGroup rows{{getKeyCache(), rank - 2}, {getValueCache(), rank - 2}};
    if (bias && getPosition())
      rows.push_back({bias, br - 1});
    if (getKeyCacheScale()) {
      rows.append(
          {{getKeyCacheScale(), rank - 2}, {getValueCacheScale(), rank - 2}});
      groups.push_back(
          {{getKeyCacheScale(), rank - 1}, {getValueCacheScale(), rank - 1}});
    }
    groups.push_back(std::move(rows));
  }
}

float SelfAttentionOp::getEffectiveScale() {
  if (auto scale = getScaleAttr())
    return scale.getValueAsDouble();
  return 1.0f / std::sqrt(float(getHeadDimension()));
}

LogicalResult RopeOp::verify() {
  auto x = getInput().getType();
  auto p = cast<RankedTensorType>(getPositions().getType());
  int64_t rank = x.getRank(), pr = p.getRank();
  if (rank < 2)
    return emitOpError("input must be at least [S, features]");
  if (getResult().getType() != x)
    return emitOpError("result type must equal the input type");
  int64_t features = x.getShape().back(), headDim = getHeadDim();
  if (ShapedType::isDynamic(features) || features % headDim != 0)
    return emitOpError("the features (")
           << extentStr(features)
           << ") are not a multiple of head_dim = " << headDim;
  std::string why = checkRope(headDim, getNumRotaryDims(),
                              getTheta().convertToFloat(), getScalingParams());
  if (!why.empty())
    return emitOpError(why);
  // Positions run along the sequence dim and, when [B, S], the batch dims.
  if (pr < 1 || pr > rank - 1)
    return emitOpError("positions must be [S] or [batch..., S] of the input's "
                       "leading dims, got ")
           << p;
  for (int64_t d = 0; d < pr; ++d)
    if (!extentsAgree(p.getDimSize(d), x.getDimSize(rank - 1 - pr + d)))
      return emitOpError("positions ")
             << p << " do not match the leading dims of the input " << x;
  return success();
}

/// The result has the input's dims; positions align with the dims before
/// the features.
void RopeOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  Value x = getInput(), out = getResult(), p = getPositions();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  int64_t pr = cast<RankedTensorType>(p.getType()).getRank();
  for (int64_t d = 0; d < rank; ++d) {
    DimGroup group{{out, d}, {x, d}};
    int64_t at = d - (rank - 1 - pr);
    if (at >= 0 && at < pr)
      group.push_back({p, at});
    groups.push_back(std::move(group));
  }
}

//===----------------------------------------------------------------------===//
// Core ops
//===----------------------------------------------------------------------===//

int64_t SdpaOp::getKeyHeadDim() {
  return getQuery().getType().getShape().back() / getHeads();
}

int64_t SdpaOp::getValueHeadDim() {
  return getValue().getType().getShape().back() / getNumKvHeads();
}

/// Checks the key lengths ([B] of the batch dim 0), the additive bias
/// ([Sq, Sk], [B, Sq, Sk] or [B, heads, Sq, Sk]) and the weights result
/// ([batch..., heads, Sq, Sk]) of an attention with query `q` and key `k`.
static LogicalResult verifyAttentionExtras(Operation *op, RankedTensorType q,
                                           RankedTensorType k, int64_t heads,
                                           Value lengths, Value bias,
                                           Value weights) {
  int64_t rank = q.getRank();
  int64_t sq = q.getDimSize(rank - 2), sk = k.getDimSize(rank - 2);
  if (lengths) {
    if (rank < 3)
      return op->emitOpError("key lengths need a batch dim: the query is ")
             << q;
    auto lt = cast<RankedTensorType>(lengths.getType());
    if (!extentsAgree(lt.getDimSize(0), q.getDimSize(0)))
      return op->emitOpError("key lengths have ")
             << extentStr(lt.getDimSize(0)) << " entries for a batch of "
             << extentStr(q.getDimSize(0));
  }
  if (bias) {
    auto bt = cast<RankedTensorType>(bias.getType());
    int64_t br = bt.getRank();
    if (br < 2 || br > 4 || (br > 2 && rank < 3))
      return op->emitOpError("bias must be [Sq, Sk], [B, Sq, Sk] or "
                             "[B, heads, Sq, Sk], got ")
             << bt;
    bool ok = extentsAgree(bt.getDimSize(br - 2), sq) &&
              extentsAgree(bt.getDimSize(br - 1), sk) &&
              (br < 3 || extentsAgree(bt.getDimSize(0), q.getDimSize(0))) &&
              (br < 4 || bt.getDimSize(1) == heads);
    if (!ok)
      return op->emitOpError("bias ")
             << bt << " does not fit [B, " << heads << ", Sq, Sk] of query "
             << q << " and key " << k;
  }
  if (weights) {
    auto wt = cast<RankedTensorType>(weights.getType());
    bool ok = wt.getRank() == rank + 1;
    for (int64_t d = 0; ok && d + 2 < rank; ++d)
      ok = extentsAgree(wt.getDimSize(d), q.getDimSize(d));
    ok = ok && wt.getDimSize(rank - 2) == heads &&
         extentsAgree(wt.getDimSize(rank - 1), sq) &&
         extentsAgree(wt.getDimSize(rank), sk);
    if (!ok)
      return op->emitOpError("weights must be [batch..., ")
             << heads << ", Sq, Sk] for query " << q << " and key " << k
             << ", got " << wt;
  }
  return success();
}

LogicalResult SdpaOp::verify() {
  auto q = getQuery().getType(), k = getKey().getType(),
       v = getValue().getType();
  int64_t rank = q.getRank();
  if (rank < 2)
    return emitOpError("query must be at least [S, D]");
  if (k.getRank() != rank || v.getRank() != rank)
    return emitOpError("query, key and value must have one rank");
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (!extentsAgree(k.getDimSize(d), q.getDimSize(d)) ||
        !extentsAgree(v.getDimSize(d), q.getDimSize(d)))
      return emitOpError("query, key and value differ in batch dim ") << d;
  if (!extentsAgree(k.getDimSize(rank - 2), v.getDimSize(rank - 2)))
    return emitOpError("keys and values differ in length");
  int64_t heads = getHeads(), kvHeads = getNumKvHeads();
  if (heads % kvHeads != 0)
    return emitOpError("kv_heads = ")
           << kvHeads << " does not divide heads = " << heads;
  int64_t dq = q.getShape().back(), dk = k.getShape().back(),
          dv = v.getShape().back();
  if (ShapedType::isDynamic(dq) || ShapedType::isDynamic(dk) ||
      ShapedType::isDynamic(dv))
    return emitOpError("feature dims must be static");
  if (dq % heads != 0)
    return emitOpError("feature dim ")
           << dq << " is not divisible by heads = " << heads;
  if (dk != kvHeads * (dq / heads))
    return emitOpError("keys have ")
           << dk << " features; kv_heads = " << kvHeads << " heads of "
           << dq / heads << " need " << kvHeads * (dq / heads);
  if (dv % kvHeads != 0)
    return emitOpError("value features ")
           << dv << " are not divisible by kv_heads = " << kvHeads;
  auto result = getResult().getType();
  SmallVector<int64_t> expected(q.getShape());
  expected.back() = heads * (dv / kvHeads);
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result must be the query's shape with ")
           << expected.back() << " features (heads x value head dim)";
  if (auto cap = getSoftcap(); cap && !(cap->convertToFloat() > 0))
    return emitOpError("softcap must be > 0");
  if (Value score = getScore()) {
    auto w = cast<RankedTensorType>(score.getType());
    bool row = w.getRank() == 1 || (w.getRank() == 2 && w.getDimSize(0) == 1);
    if (!row || w.getShape().back() != dq / heads)
      return emitOpError("the additive score vector must be [")
             << dq / heads << "] or [1, " << dq / heads << "] (the head dim)";
  }
  if (getQueryOffsets() && (getMask().getOffset() != 0 || rank < 3))
    return emitOpError("query offsets need a batch dim and a mask without "
                       "an offset");
  bool quantized = k.getElementType().isSignlessInteger(8);
  if (quantized != v.getElementType().isSignlessInteger(8))
    return emitOpError("keys and values must both be i8, or neither");
  if (quantized) {
    if (getScore())
      return emitOpError("an i8 KV cache takes dot-product scores only");
    if (failed(
            verifyCacheScales(*this, "key_scale", k, getKeyScale(), kvHeads)) ||
        failed(verifyCacheScales(*this, "value_scale", v, getValueScale(),
                                 kvHeads)))
      return failure();
  } else if (getKeyScale() || getValueScale()) {
    return emitOpError("key and value scales are for i8 keys and values");
  }
  return verifyAttentionExtras(*this, q, k, heads, getKeyLengths(), getBias(),
                               getWeights());
}

/// Scores and the weighted sum of values: 2 * (query features + value
/// features) per query and key, dense (masked pairs are counted too).
double SdpaOp::getFlopCount(SmallVectorImpl<std::pair<Value, unsigned>> &dims) {
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto v = cast<RankedTensorType>(getValue().getType());
  int64_t rank = q.getRank();
  for (int64_t d = 0; d + 1 < rank; ++d)
    dims.push_back({getQuery(), unsigned(d)});
  dims.push_back({getKey(), unsigned(rank - 2)});
  return 2.0 * double(q.getShape().back() + v.getShape().back());
}

/// Batch dims are shared by all; the result has the query's length and
/// the keys and values share theirs; lengths, bias and weights follow.
void SdpaOp::getDimGroups(SmallVectorImpl<DimGroup> &groups) {
  int64_t rank = getResult().getType().getRank();
  Value q = getQuery(), k = getKey(), v = getValue(), out = getResult();
  Value bias = getBias(), weights = getWeights();
  int64_t br = bias ? cast<RankedTensorType>(bias.getType()).getRank() : 0;
  for (int64_t d = 0; d + 2 < rank; ++d) {
    DimGroup group{{out, d}, {q, d}, {k, d}, {v, d}};
    if (weights)
      group.push_back({weights, d});
    if (d == 0 && br > 2)
      group.push_back({bias, 0});
    if (d == 0 && getKeyLengths())
      group.push_back({getKeyLengths(), 0});
    if (d == 0 && getQueryOffsets())
      group.push_back({getQueryOffsets(), 0});
    for (Value scales : {getKeyScale(), getValueScale()})
      if (scales)
        group.push_back({scales, d});
    groups.push_back(std::move(group));
  }
  DimGroup queries{{out, rank - 2}, {q, rank - 2}};
  DimGroup keys{{k, rank - 2}, {v, rank - 2}};
  if (getKeyScale()) {
    keys.append({{getKeyScale(), rank - 2}, {getValueScale(), rank - 2}});
    groups.push_back({{getKeyScale(), rank - 1}, {getValueScale(), rank - 1}});
  }
  if (weights) {
    queries.push_back({weights, rank - 1});
    keys.push_back({weights, rank});
  }
  if (bias) {
    queries.push_back({bias, br - 2});
    keys.push_back({bias, br - 1});
  }
  groups.push_back(std::move(queries));
  groups.push_back(std::move(keys));
  groups.push_back({{out, rank - 1}, {q, rank - 1}});
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments for " << getInputs().size()
           << " inputs";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("body argument types must match the inputs");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types must match the results");
  return success();
}

std::string KernelOp::getStructuralKey() {
  std::string key;
  llvm::raw_string_ostream os(key);
  (*this)->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  std::string name = "\"" + getSymName().str() + "\"";
  if (size_t at = key.find(name); at != std::string::npos)
    key.erase(at, name.size());
  return key;
}

#define GET_OP_CLASSES
#include "dialects/attn/IR/AttnOps.cpp.inc"
