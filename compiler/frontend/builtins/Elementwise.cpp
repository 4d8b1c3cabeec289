//===- compiler/frontend/builtins/Elementwise.cpp - functions, operators --===//
//
// Part of attnc. Elementwise builtins: `gelu`, `softcap`, `dropout`, the
// dialect's functions of one tensor (`tanh(x)`, ...) and the ops Sema makes
// of the operators `+ - *` (`add`, `sub`, `mul`, `scale`). Each is the op of
// its name with its constant arguments as attributes.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/EmitContext.h"

#include <cmath>

using namespace attnc;

/// A dialect function of one tensor (BuiltinFunctionOpInterface).
static ExprPtr checkFunction(CheckContext &ctx, CallExpr &call,
                             CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], call.callee);
  if (!x)
    return nullptr;
  auto fn = std::make_unique<BuiltinExpr>(call.callee, call.getRange());
  fn->shape = x->shape;
  fn->operands.push_back(std::move(x));
  return fn;
}

/// `gelu(x)` (erf form) or `gelu(x, approximate = tanh)`, the function
/// `gelu_tanh` (GPT-2's "gelu_new"), as PyTorch spells the choice.
static ExprPtr checkGelu(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "gelu");
  if (!x)
    return nullptr;
  auto fn = std::make_unique<BuiltinExpr>(
      args.choice("approximate") == "tanh" ? "gelu_tanh" : "gelu",
      call.getRange());
  fn->shape = x->shape;
  fn->operands.push_back(std::move(x));
  return fn;
}

/// `softcap(x, C)`: C * tanh(x / C), Gemma-2's logit soft capping.
static ExprPtr checkSoftcap(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "softcap");
  Expr &c = *args.positional[1]->value;
  auto *number = llvm::dyn_cast<NumberExpr>(&c);
  if (!number || !(float(number->value) > 0) ||
      !std::isfinite(float(number->value))) {
    ctx.errorAt(c, "the cap of 'softcap' must be a positive number, such as "
                   "30 (Gemma-2's final_logit_softcapping)");
    return nullptr;
  }
  if (!x)
    return nullptr;
  auto fn = std::make_unique<BuiltinExpr>("softcap", call.getRange());
  fn->shape = x->shape;
  fn->operands.push_back(std::move(x));
  fn->attrs.push_back({"cap", BuiltinAttr::getReal(number->value)});
  return fn;
}

/// `dropout(x, p)` is the identity at inference, as in PyTorch's eval mode;
/// `p` must still be a probability.
static ExprPtr checkDropout(CheckContext &ctx, CallExpr &call, CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "dropout");
  Expr &p = *args.positional[1]->value;
  auto *number = llvm::dyn_cast<NumberExpr>(&p);
  if (!number || number->value < 0 || number->value >= 1) {
    ctx.errorAt(p, "the dropout probability must be a number in [0, 1), "
                   "such as 0.1");
    return nullptr;
  }
  return x;
}

void attnc::registerElementwiseBuiltins(BuiltinRegistry &registry) {
  registry.add({"gelu",
                1,
                1,
                "gelu(x)",
                {NamedArg::choice("approximate",
                                  {{"none", "the erf form"}, {"tanh", ""}})
                     .byDefault("none")},
                checkGelu,
                emitNamedOp});
  registry.add({"softcap",
                2,
                2,
                "softcap(x, C) with C > 0, such as softcap(x, 30)",
                {},
                checkSoftcap,
                emitNamedOp});
  // Its check returns its input: it is never emitted.
  registry.add({"dropout", 2, 2, "dropout(x, P)", {}, checkDropout});
  // Sema's own forms of `a + b`, `a - b`, `a * b` and `x * 0.5`.
  for (const char *op : {"add", "sub", "mul", "scale"}) {
    Builtin builtin;
    builtin.name = op;
    builtin.emit = emitNamedOp;
    registry.add(std::move(builtin));
  }
}

void attnc::registerFunctionBuiltins(BuiltinRegistry &registry,
                                     llvm::ArrayRef<std::string> functions) {
  for (const std::string &name : functions)
    if (!registry.lookup(name))
      registry.add({name, 1, 1, name + "(x)", {}, checkFunction, emitNamedOp});
}
