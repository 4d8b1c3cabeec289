//===- compiler/codegen/HalideAlgorithm.cpp - kernel -> Halide ------------===//
#include "compiler/codegen/HalideAlgorithm.h"

#include "compiler/codegen/Lowering.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {
namespace {

Halide::Type halideType(RankedTensorType type) {
  return type.getElementType().isF32() ? Float(32) : Int(32);
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

} // namespace

LogicalResult buildAlgorithm(KernelOp kernel, std::vector<ImageParam> &params,
                             schedules::KernelStages &stages) {
  KernelBuilder b(stages);
  Block &body = kernel.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    size_t rank = type.getRank();
    ImageParam param(halideType(type), int(rank),
                     "in" + std::to_string(params.size()));
    promiseStaticExtents([&](int d) { return param.dim(d); }, type);
    std::vector<Expr> extents;
    for (size_t d = 0; d < rank; ++d)
      extents.push_back(param.dim(int(d)).extent());
    params.push_back(param);
    Func wrapped(b.name("input"));
    std::vector<Var> v = b.vars(rank);
    wrapped(v) = param(v);
    b.define(arg, {wrapped, extents});
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
    if (!t.inPlace)
      out(vs) = t.func(vs);
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
