//===- compiler/codegen/HalideAlgorithm.cpp - kernel -> Halide ------------===//
#include "compiler/codegen/HalideAlgorithm.h"
#include "dialects/attn/Analysis/DimSymbols.h"

#include "compiler/codegen/HalfBits.h"
#include "compiler/codegen/Lowering.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

Halide::Type storedType(RankedTensorType type,
                        const schedules::TargetDesc &target) {
  mlir::Type element = type.getElementType();
  if (element.isUnsignedInteger(8))
    return UInt(8);
  if (element.isSignlessInteger(8))
    return Int(8);
  if ((element.isBF16() || element.isF16()) && target.storesHalfAsBits())
    return UInt(16);
  if (element.isBF16())
    return BFloat(16);
  if (element.isF16())
    return Float(16);
  return element.isF32() ? Float(32) : Int(32);
}

Expr narrowToStored(Expr value, RankedTensorType type,
                    const schedules::TargetDesc &target) {
  Halide::Type stored = storedType(type, target);
  mlir::Type element = type.getElementType();
  if (element.isBF16() || element.isF16())
    return narrowToHalf(value, stored, element.isBF16());
  return cast(stored, value);
}

namespace {

/// `stored`, of tensor type `type`, as the algorithm computes: f32 for
/// every float (a bf16 or f16 weight is widened as it is loaded, so every
/// op accumulates in f32) and for an i8 matrix (exact: its integers, which
/// `attn.linear` scales per output after the sum). The bytes of a 4-bit
/// matrix stay bytes: `attn.linear` takes their nibbles apart.
Expr widen(Expr stored, RankedTensorType type) {
  if (stored.type() == UInt(16))
    return widenHalfBits(stored, type.getElementType().isBF16());
  if (stored.type().is_float() || stored.type().is_bfloat() ||
      stored.type() == Int(8))
    return cast(Float(32), stored);
  return stored;
}

/// Static extents are promised to Halide (and checked on entry), which lets
/// it vectorise and unroll without remainder tests.
template <typename Dims>
void promiseStaticExtents(Dims dims, RankedTensorType type) {
  size_t rank = type.getRank();
  for (size_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(rank - 1 - d);
    if (!ShapedType::isDynamic(size))
      dims(int(d)).set_bounds(0, int(size));
  }
}

/// bf16 pairs and quads of i8 or 4-bit bytes ([panels, in / g, width, g],
/// attn.pack_panels) are promised dense, as the runtime passes every weight:
/// a vector of outputs' tuples is then one load (a bf16 or int8 dot
/// product's operand), not a gather.
void promiseDensePairs(ImageParam param, RankedTensorType type) {
  if (type.getRank() != 4 || !type.hasStaticShape() ||
      !((type.getElementType().isBF16() && type.getDimSize(3) == 2) ||
        (type.getElementType().isInteger(8) && type.getDimSize(3) == 4)))
    return;
  int stride = 1;
  for (int d = 0; d < 4; ++d) {
    param.dim(d).set_stride(stride);
    stride *= int(type.getDimSize(3 - d));
  }
}

} // namespace

LogicalResult buildAlgorithm(KernelOp kernel,
                             const schedules::TargetDesc &target,
                             schedules::Precision precision,
                             std::vector<ImageParam> &params,
                             schedules::KernelStages &stages) {
  KernelBuilder b(stages, target, precision);
  // Before the lowerings, which build a decode's GEMMs as GEMVs.
  stages.fewRows = kernel->hasAttr(attn::kDecodeKernelAttr);
  Block &body = kernel.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    size_t rank = type.getRank();
    ImageParam param(storedType(type, target), int(rank),
                     "in" + std::to_string(params.size()));
    promiseStaticExtents([&](int d) { return param.dim(d); }, type);
    promiseDensePairs(param, type);
    std::vector<Expr> extents;
    for (size_t d = 0; d < rank; ++d)
      extents.push_back(param.dim(int(d)).extent());
    params.push_back(param);
    Func wrapped(b.name("input"));
    std::vector<Var> v = b.vars(rank);
    // Inlined into every reader: the widening is in registers, per load.
    wrapped(v) = widen(param(v), type);
    b.define(arg, {wrapped, extents, false, param});
  }
  const LoweringRegistry &lowerings = getLoweringRegistry();
  for (Operation &op : body.without_terminator()) {
    const LowerFn *lower = lowerings.lookup(&op);
    if (!lower)
      return op.emitOpError("has no Halide lowering: run the attn pipeline "
                            "(attn-pipeline) before codegen");
    if (failed((*lower)(&op, b)))
      return failure();
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  for (Value v : yield.getValues()) {
    const Tensor &t = b.get(v);
    std::vector<Var> vs = b.vars(t.extents.size());
    Func out = t.inPlace ? t.func : Func(b.name("output"));
    // An init kernel's constant keeps its weights' precision; the narrowing
    // is exact, since weight expressions only move bf16 / f16 / i8 values.
    if (!t.inPlace)
      out(vs) = narrowToStored(t.func(vs), cast<RankedTensorType>(v.getType()),
                               target);
    promiseStaticExtents([&](int d) { return out.output_buffer().dim(d); },
                         cast<RankedTensorType>(v.getType()));
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

} // namespace attnc::codegen
