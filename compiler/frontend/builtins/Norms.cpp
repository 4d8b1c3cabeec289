//===- compiler/frontend/builtins/Norms.cpp - layer_norm, rms_norm --------===//
//
// Part of attnc. Norms over the last dim with a per-feature scale:
// `layer_norm(x, P, eps = E)` (scale and shift) and `rms_norm(x, P, eps = E,
// offset = O)` (scale only).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/EmitContext.h"

#include "dialects/attn/IR/AttnOps.h"

using namespace attnc;

static ExprPtr checkLayerNorm(CheckContext &ctx, CallExpr &call,
                              CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "layer_norm");
  Expr &pArg = *args.positional[1]->value;
  WeightDecl *gamma = nullptr, *beta = nullptr;
  const Expr *betaAt = &pArg;
  bool ok = true;
  if (args.positional.size() == 3) {
    betaAt = args.positional[2]->value.get();
    gamma = ctx.lookupWeightArg(pArg, "the scale (gamma) of 'layer_norm'");
    beta = ctx.lookupWeightArg(*betaAt, "the shift (beta) of 'layer_norm'");
  } else if (auto *name = llvm::dyn_cast<NameExpr>(&pArg)) {
    if ((gamma = ctx.getWeight(name->name + ".weight"))) {
      gamma->used = true;
      if ((beta = ctx.getWeight(name->name + ".bias"))) {
        beta->used = true;
      } else {
        ctx.errorAt(pArg, "'layer_norm' needs the shift '" + name->name +
                              ".bias'; declare it as 'weight " + name->name +
                              ".bias : f32[D]'");
        ok = false;
      }
    } else if (ctx.getWeight(name->name)) {
      ctx.errorAt(pArg, "'layer_norm' with one weight argument takes a module "
                        "prefix (e.g. 'ln_1' for 'ln_1.weight' and "
                        "'ln_1.bias'); or write layer_norm(x, gamma, beta)");
      ok = false;
    } else {
      ctx.reportUnknownWeight(*name, "'layer_norm'", /*prefixOnly=*/true);
      ok = false;
    }
  } else {
    ctx.errorAt(pArg, "the second argument of 'layer_norm' must be a module "
                      "prefix or a weight");
    ok = false;
  }
  int64_t d;
  if (!ok || !x || !gamma || !beta || !ctx.getFeatureDim(*x, "layer_norm", d))
    return nullptr;
  std::string what = "the input's last dim " + std::to_string(d);
  bool gammaOk = ctx.checkVector(*gamma, pArg, "layer_norm scale", d, what);
  bool betaOk = ctx.checkVector(*beta, *betaAt, "layer_norm shift", d, what);
  if (!gammaOk || !betaOk)
    return nullptr;
  auto norm = std::make_unique<BuiltinExpr>("layer_norm", call.getRange());
  norm->shape = x->shape;
  norm->operands.push_back(std::move(x));
  norm->weights = {{"gamma", gamma}, {"beta", beta}};
  norm->attrs.push_back({"eps", BuiltinAttr::getReal(args.number("eps"))});
  return norm;
}

static mlir::Value emitLayerNorm(EmitContext &ctx, const BuiltinExpr &e,
                                 llvm::ArrayRef<mlir::Value> operands) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  mlir::Value gamma = ctx.weight(e.getWeight("gamma"));
  return builder.create<mlir::attn::LayerNormOp>(
      ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType), operands[0],
      gamma, ctx.weight(e.getWeight("beta")),
      builder.getF32FloatAttr(e.getAttr("eps")->real));
}

/// `rms_norm(x, P)` (`P.weight`) or `rms_norm(x, W)`: Hugging Face's
/// LlamaRMSNorm, or GemmaRMSNorm's `1 + weight` with `offset = 1`.
static ExprPtr checkRmsNorm(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "rms_norm");
  Expr &pArg = *args.positional[1]->value;
  WeightDecl *gamma = nullptr;
  bool ok = true;
  if (auto *name = llvm::dyn_cast<NameExpr>(&pArg)) {
    if ((gamma = ctx.getWeight(name->name))) {
      gamma->used = true;
    } else if ((gamma = ctx.getWeight(name->name + ".weight"))) {
      gamma->used = true;
      // RMSNorm has no shift: a declared bias would be silently unused.
      if (WeightDecl *bias = ctx.getWeight(name->name + ".bias")) {
        bias->used = true;
        ctx.errorAt(pArg, "'rms_norm' has no shift, but '" + bias->name +
                              "' is declared; remove that declaration, or use "
                              "layer_norm(x, " +
                              name->name + ") for a norm with a shift");
        ctx.note(bias->loc.Start, "'" + bias->name + "' is declared here");
        ok = false;
      }
    } else {
      ctx.reportUnknownWeight(*name, "'rms_norm'", /*prefixOnly=*/false);
      ok = false;
    }
  } else {
    ctx.errorAt(pArg, "the second argument of 'rms_norm' must be a module "
                      "prefix or a weight");
    ok = false;
  }
  int64_t d;
  if (!ok || !x || !gamma || !ctx.getFeatureDim(*x, "rms_norm", d))
    return nullptr;
  if (!ctx.checkVector(*gamma, pArg, "rms_norm scale", d,
                       "the input's last dim " + std::to_string(d)))
    return nullptr;
  auto norm = std::make_unique<BuiltinExpr>("rms_norm", call.getRange());
  norm->shape = x->shape;
  norm->operands.push_back(std::move(x));
  norm->weights = {{"gamma", gamma}};
  norm->attrs.push_back({"eps", BuiltinAttr::getReal(args.number("eps"))});
  norm->attrs.push_back(
      {"offset", BuiltinAttr::getReal(args.number("offset"))});
  return norm;
}

static mlir::Value emitRmsNorm(EmitContext &ctx, const BuiltinExpr &e,
                               llvm::ArrayRef<mlir::Value> operands) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  return builder.create<mlir::attn::RmsNormOp>(
      ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType), operands[0],
      ctx.weight(e.getWeight("gamma")),
      builder.getF32FloatAttr(e.getAttr("eps")->real),
      builder.getF32FloatAttr(e.getAttr("offset")->real));
}

void attnc::registerNormBuiltins(BuiltinRegistry &registry) {
  registry.add({"layer_norm",
                2,
                3,
                "layer_norm(x, P) or layer_norm(x, gamma, beta)",
                {NamedArg::positiveNumber("eps", "1e-5").byDefault(1e-5)},
                checkLayerNorm,
                emitLayerNorm});
  // LlamaRMSNorm's defaults.
  registry.add(
      {"rms_norm",
       2,
       2,
       "rms_norm(x, P) or rms_norm(x, W)",
       {NamedArg::positiveNumber("eps", "1e-6").byDefault(1e-6),
        NamedArg::number("offset", "0 (scaling by the weight, as Llama) or 1 "
                                   "(by 1 + weight, as Gemma)")
            .byDefault(0.0)},
       checkRmsNorm,
       emitRmsNorm});
}
