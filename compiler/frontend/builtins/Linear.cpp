//===- compiler/frontend/builtins/Linear.cpp - linear ---------------------===//
//
// Part of attnc. `linear(x, P)`, `linear(x, W)` or `linear(x, W, b)`:
// x @ W^T + b, as attn.linear in the weight's declared layout.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/EmitContext.h"

#include "dialects/attn/IR/AttnOps.h"

using namespace attnc;

/// `linear(x, E)` with E a tensor builtin of weights alone, an [out, in]
/// matrix.
static ExprPtr checkLinearOfWeightExpression(CheckContext &ctx, CallExpr &call,
                                             CallArgs &args, ExprPtr x,
                                             WeightDecl *bias) {
  ExprPtr w = ctx.checkValue(std::move(args.positional[1]->value));
  int64_t in;
  if (!x || !w || !ctx.getFeatureDim(*x, "linear", in))
    return nullptr;
  if (!isWeightExpression(*w)) {
    ctx.errorAt(*w, "the weight of 'linear' must be computed from weights "
                    "alone, such as 'reshape(W, [out, in])'");
    return nullptr;
  }
  if (w->shape.size() != 2 || w->shape[1] != Extent::fixed(in)) {
    ctx.errorAt(*w, "the weight of 'linear' is [out, in] with in = the "
                    "input's " +
                        llvm::Twine(in) + " features, but this is " +
                        shapeToString(w->shape));
    return nullptr;
  }
  int64_t out = w->shape[0].size;
  if (bias && !ctx.checkVector(
                  *bias, *args.positional[2]->value, "linear bias", out,
                  "the weight's " + std::to_string(out) + " output features"))
    return nullptr;
  auto linear = std::make_unique<BuiltinExpr>("linear", call.getRange());
  linear->shape = x->shape;
  linear->shape.back() = w->shape[0];
  linear->operands.push_back(std::move(x));
  linear->operands.push_back(std::move(w));
  if (bias)
    linear->weights.push_back({"bias", bias});
  return linear;
}

static ExprPtr checkLinear(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "linear");
  Expr &wArg = *args.positional[1]->value;
  WeightDecl *weight = nullptr, *bias = nullptr;
  if (llvm::isa<CallExpr>(wArg)) {
    // A matrix computed from weights at load: `reshape(conv.weight, ...)`.
    WeightDecl *bias = nullptr;
    if (args.positional.size() == 3 &&
        !(bias = ctx.lookupWeightArg(*args.positional[2]->value,
                                     "the bias of 'linear'")))
      return nullptr;
    return checkLinearOfWeightExpression(ctx, call, args, std::move(x), bias);
  }
  if (args.positional.size() == 3) {
    weight = ctx.lookupWeightArg(wArg, "the weight of 'linear'");
    bias =
        ctx.lookupWeightArg(*args.positional[2]->value, "the bias of 'linear'");
    if (auto *name = llvm::dyn_cast<NameExpr>(&wArg);
        !weight && name && ctx.getWeight(name->name + ".weight")) {
      ctx.note(wArg.getLoc(), "with a module prefix the bias is found as '" +
                                  name->name +
                                  ".bias'; drop the third argument");
    }
  } else if (auto *name = llvm::dyn_cast<NameExpr>(&wArg)) {
    if ((weight = ctx.getWeight(name->name))) {
      weight->used = true;
    } else if ((weight = ctx.getWeight(name->name + ".weight"))) {
      weight->used = true;
      if ((bias = ctx.getWeight(name->name + ".bias")))
        bias->used = true;
    } else {
      ctx.reportUnknownWeight(*name, "'linear'", /*prefixOnly=*/false);
    }
  } else {
    ctx.errorAt(wArg, "the second argument of 'linear' must be a weight, a "
                      "module prefix or a weight expression such as "
                      "'reshape(W, [out, in])'");
  }
  int64_t in;
  if (!x || !weight || (args.positional.size() == 3 && !bias) ||
      !ctx.getFeatureDim(*x, "linear", in))
    return nullptr;
  if (!ctx.checkMatrix(*weight, wArg, "linear weight", in, -1,
                       "the input's feature size"))
    return nullptr;
  int64_t out = weight->getOutFeatures();
  const Expr &biasAt =
      args.positional.size() == 3 ? *args.positional[2]->value : wArg;
  if (bias && !ctx.checkVector(*bias, biasAt, "linear bias", out,
                               "the weight's " + std::to_string(out) +
                                   " output features"))
    return nullptr;
  WeightDecl *scales = nullptr;
  if ((weight->type.elementType == ElementType::i8 ||
       weight->type.elementType == ElementType::i4) &&
      !(scales = ctx.quantizationScales(*weight, wArg, out)))
    return nullptr;
  auto linear = std::make_unique<BuiltinExpr>("linear", call.getRange());
  linear->shape = x->shape;
  linear->shape.back() = Extent::fixed(out);
  linear->operands.push_back(std::move(x));
  linear->weights.push_back({"weight", weight});
  if (bias)
    linear->weights.push_back({"bias", bias});
  if (scales)
    linear->weights.push_back({"scales", scales});
  return linear;
}

static mlir::Value emitLinear(EmitContext &ctx, const BuiltinExpr &e,
                              llvm::ArrayRef<mlir::Value> operands) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  if (operands.size() == 2)
    return builder.create<mlir::attn::LinearOp>(
        ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType),
        operands[0], operands[1], ctx.weight(e.getWeight("bias")),
        mlir::Value(),
        mlir::attn::WeightLayoutAttr::get(builder.getContext(),
                                          mlir::attn::WeightLayout::out_in));
  const WeightDecl *w = e.getWeight("weight");
  auto layout = w->layout == WeightLayout::outIn
                    ? mlir::attn::WeightLayout::out_in
                    : mlir::attn::WeightLayout::in_out;
  // Weights are created in the order they are read (function arguments are
  // evaluated in no set order): the library lists them so.
  mlir::Value matrix = ctx.weight(w);
  mlir::Value bias = ctx.weight(e.getWeight("bias"));
  mlir::Value scales = ctx.weight(e.getWeight("scales"));
  return builder.create<mlir::attn::LinearOp>(
      ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType), operands[0],
      matrix, bias, scales,
      mlir::attn::WeightLayoutAttr::get(builder.getContext(), layout));
}

void attnc::registerLinearBuiltins(BuiltinRegistry &registry) {
  registry.add({"linear",
                2,
                3,
                "linear(x, P), linear(x, W) or linear(x, W, b)",
                {},
                checkLinear,
                emitLinear});
}
