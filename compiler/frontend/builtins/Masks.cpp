//===- compiler/frontend/builtins/Masks.cpp - attention masks -------------===//
//
// Part of attnc. The terms of an attention's `mask = ...` (AttentionArgs.h):
// checked into attributes and operands of the call, emitted as the
// dialect's MaskAttr.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/builtins/AttentionArgs.h"

#include <functional>

using namespace attnc;

bool attnc::resolveMask(CheckContext &ctx, ExprPtr &mask, BuiltinExpr &call,
                        const Shape &query, const Extent &keys, int64_t heads) {
  // The terms' owning slots, so a tensor term can be checked (and moved).
  std::vector<ExprPtr *> slots;
  std::function<void(ExprPtr &)> flatten = [&](ExprPtr &e) {
    if (auto *both = llvm::dyn_cast<BinaryExpr>(e.get());
        both && both->op == '&') {
      flatten(both->lhs);
      flatten(both->rhs);
    } else {
      slots.push_back(&e);
    }
  };
  flatten(mask);
  bool ok = true;
  auto once = [&](Expr &term, llvm::StringRef what) {
    if (!call.getAttr(what) && !call.getNamedOperand(what))
      return true;
    ctx.errorAt(term, "the mask has two '" + what + "' terms; give each once");
    return ok = false;
  };
  auto integer = [&](Argument &arg, int64_t min, int64_t &value) {
    auto *number = llvm::dyn_cast<NumberExpr>(arg.value.get());
    if (number && number->isInteger && number->intValue >= min) {
      value = number->intValue;
      return true;
    }
    ctx.errorAt(*arg.value,
                "a window size must be an integer >= " + llvm::Twine(min));
    return ok = false;
  };
  const Extent &seq = query[query.size() - 2];
  for (ExprPtr *slot : slots) {
    Expr *term = slot->get();
    auto *name = llvm::dyn_cast<NameExpr>(term);
    auto *fn = llvm::dyn_cast<CallExpr>(term);
    if (name && name->name == "none")
      continue;
    if (name && name->name == "causal") {
      if (once(*term, "causal"))
        call.attrs.push_back({"causal", BuiltinAttr::getInteger(1)});
      continue;
    }
    if (name && name->name == "alibi") {
      // ALiBi biases the scores by head-specific slopes times the distance.
      if (once(*term, "alibi"))
        call.attrs.push_back({"alibi", BuiltinAttr::getInteger(1)});
      continue;
    }
    if (fn && fn->callee == "window") {
      // window(W): the W keys up to the query's own position (Mistral's
      // sliding window); window(L, R): L keys before it to R after it.
      int64_t left = 0, right = 0;
      bool named =
          llvm::any_of(fn->args, [](const Argument &a) { return a.isNamed(); });
      if (named || fn->args.empty() || fn->args.size() > 2) {
        ctx.errorAt(*term, "write window(W) for the W keys up to each query, "
                           "or window(LEFT, RIGHT) for the keys from LEFT "
                           "before to RIGHT after it");
        ok = false;
        continue;
      }
      if (fn->args.size() == 1) {
        if (!integer(fn->args[0], 1, left))
          continue;
        left -= 1;
      } else if (!integer(fn->args[0], 0, left) ||
                 !integer(fn->args[1], 0, right)) {
        continue;
      }
      if (once(*term, "window_left")) {
        call.attrs.push_back({"window_left", BuiltinAttr::getInteger(left)});
        call.attrs.push_back({"window_right", BuiltinAttr::getInteger(right)});
      }
      continue;
    }
    if (fn && fn->callee == "padding") {
      if (fn->args.size() != 1 || fn->args[0].isNamed()) {
        ctx.errorAt(*term, "write padding(LENGTHS) with an i32[B] input of "
                           "the valid length of each sequence");
        ok = false;
        continue;
      }
      ExprPtr lengths = ctx.checkValue(std::move(fn->args[0].value));
      if (!lengths) {
        ok = false;
        continue;
      }
      if (query.size() < 3 || lengths->elementType != ElementType::i32 ||
          lengths->shape.size() != 1 || lengths->shape[0] != query[0]) {
        ctx.errorAt(*lengths,
                    "padding lengths must be i32[" +
                        (query.size() < 3 ? std::string("B")
                                          : extentToString(query[0])) +
                        "], one length per sequence of the batch, but this "
                        "is " +
                        getElementTypeName(lengths->elementType).str() +
                        shapeToString(lengths->shape));
        ok = false;
        continue;
      }
      if (once(*term, "lengths"))
        call.namedOperands.push_back({"lengths", std::move(lengths)});
      continue;
    }
    if (name && (name->name == "padding" || name->name == "window")) {
      ctx.errorAt(*term, "'" + name->name + "' needs its argument, e.g. " +
                             (name->name == "padding" ? "padding(lengths)"
                                                      : "window(256)"));
      ok = false;
      continue;
    }
    // Any other call must compute an additive mask (relative_bias(...)).
    if ((fn && !ctx.isCallable(fn->callee)) ||
        (name && !ctx.isValue(name->name))) {
      llvm::StringRef what = fn ? llvm::StringRef(fn->callee) : name->name;
      ctx.errorAt(*term,
                  "unknown mask '" + what +
                      "'; a mask is none, causal, padding(LENGTHS), "
                      "window(W), window(LEFT, RIGHT), alibi, an f32 tensor "
                      "added to the scores, or several joined with '&'");
      ok = false;
      continue;
    }
    // An additive mask: [S, T], [B, S, T] or [B, heads, S, T], a value or
    // a call computing one.
    ExprPtr bias = ctx.checkValue(std::move(*slot));
    if (!bias) {
      ok = false;
      continue;
    }
    const Shape &b = bias->shape;
    bool fits = bias->elementType == ElementType::f32 && b.size() >= 2 &&
                b.size() <= 4 && b[b.size() - 2] == seq &&
                b[b.size() - 1] == keys &&
                (b.size() < 3 || (query.size() >= 3 && b[0] == query[0])) &&
                (b.size() < 4 || (!b[1].isSymbolic() && b[1].size == heads));
    if (!fits) {
      std::string st = extentToString(seq) + ", " + extentToString(keys);
      std::string batch =
          query.size() >= 3 ? extentToString(query[0]) : std::string("B");
      ctx.errorAt(*bias, "an additive mask is f32[" + st + "], [" + batch +
                             ", " + st + "] or [" + batch + ", " +
                             std::to_string(heads) + ", " + st +
                             "], but this is " +
                             getElementTypeName(bias->elementType).str() +
                             shapeToString(b));
      ok = false;
      continue;
    }
    if (once(*bias, "bias"))
      call.namedOperands.push_back({"bias", std::move(bias)});
  }
  return ok;
}

mlir::attn::MaskAttr attnc::emitMaskAttr(EmitContext &ctx,
                                         const BuiltinExpr &e) {
  auto integer = [&](llvm::StringRef name, int64_t otherwise) {
    const BuiltinAttr *attr = e.getAttr(name);
    return attr ? attr->integer : otherwise;
  };
  return mlir::attn::MaskAttr::get(
      ctx.getBuilder().getContext(), integer("causal", 0) != 0,
      /*offset=*/0, integer("window_left", -1), integer("window_right", -1),
      integer("alibi", 0) != 0);
}
