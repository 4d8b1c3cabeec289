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

static ExprPtr checkLinear(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "linear");
  Expr &wArg = *args.positional[1]->value;
  WeightDecl *weight = nullptr, *bias = nullptr;
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
    ctx.errorAt(wArg, "the second argument of 'linear' must be a weight or a "
                      "module prefix");
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
  auto linear = std::make_unique<BuiltinExpr>("linear", call.getRange());
  linear->shape = x->shape;
  linear->shape.back() = Extent::fixed(out);
  linear->operands.push_back(std::move(x));
  linear->weights.push_back({"weight", weight});
  if (bias)
    linear->weights.push_back({"bias", bias});
  return linear;
}

static mlir::Value emitLinear(EmitContext &ctx, const BuiltinExpr &e,
                              llvm::ArrayRef<mlir::Value> operands) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  const WeightDecl *w = e.getWeight("weight");
  auto layout = w->layout == WeightLayout::outIn
                    ? mlir::attn::WeightLayout::out_in
                    : mlir::attn::WeightLayout::in_out;
  // Weights are created in the order they are read (function arguments are
  // evaluated in no set order): the library lists them so.
  mlir::Value matrix = ctx.weight(w);
  return builder.create<mlir::attn::LinearOp>(
      ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType), operands[0],
      matrix, ctx.weight(e.getWeight("bias")),
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
