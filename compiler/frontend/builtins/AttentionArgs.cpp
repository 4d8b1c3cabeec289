//===- compiler/frontend/builtins/AttentionArgs.cpp - shared args ---------===//
//
// Part of attnc. The arguments the attention builtins share (AttentionArgs.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/builtins/AttentionArgs.h"

#include <cmath>

using namespace attnc;

int64_t attnc::checkHeads(CheckContext &ctx, CallExpr &call, CallArgs &args,
                          int64_t modelDim) {
  Argument *arg = args.get("heads");
  if (!arg) {
    ctx.error(call.calleeLoc.Start,
              "'" + call.callee +
                  "' requires 'heads = N' (the number of heads)",
              call.getRange());
    return 0;
  }
  auto *number = llvm::dyn_cast<NumberExpr>(arg->value.get());
  if (!number || !number->isInteger || number->intValue <= 0) {
    ctx.errorAt(*arg->value, "'heads' must be a positive integer");
    return 0;
  }
  if (modelDim > 0 && modelDim % number->intValue != 0) {
    ctx.errorAt(*arg->value, "d_model " + llvm::Twine(modelDim) +
                                 " is not divisible by heads = " +
                                 llvm::Twine(number->intValue));
    return 0;
  }
  return number->intValue;
}

int64_t attnc::checkKvHeads(CheckContext &ctx, CallArgs &args, int64_t heads) {
  Argument *arg = args.get("kv_heads");
  if (!arg)
    return heads;
  auto *number = llvm::dyn_cast<NumberExpr>(arg->value.get());
  if (!number || !number->isInteger || number->intValue <= 0) {
    ctx.errorAt(*arg->value, "'kv_heads' must be a positive integer dividing "
                             "heads = " +
                                 llvm::Twine(heads));
    return 0;
  }
  int64_t k = number->intValue;
  if (k > heads || heads % k != 0) {
    ctx.errorAt(*arg->value,
                "kv_heads = " + llvm::Twine(k) +
                    (k > heads ? " is more than heads = "
                               : " does not divide heads = ") +
                    llvm::Twine(heads) +
                    "; each key/value head serves heads / kv_heads query "
                    "heads");
    return 0;
  }
  return k;
}

void attnc::recordHeads(BuiltinExpr &attn, int64_t heads, int64_t kvHeads) {
  attn.attrs.insert(attn.attrs.begin(),
                    {"heads", BuiltinAttr::getInteger(heads)});
  if (kvHeads != heads)
    attn.attrs.push_back({"kv_heads", BuiltinAttr::getInteger(kvHeads)});
}

/// The argument's value if it is a positive finite number, else null.
static const NumberExpr *positiveNumber(const Argument &arg) {
  auto *number = llvm::dyn_cast<NumberExpr>(arg.value.get());
  if (!number || !(number->value > 0) || !std::isfinite(number->value))
    return nullptr;
  return number;
}

/// `name = X` with X a positive number, recorded as the real attribute
/// `name`; `example` completes the error ("such as ...").
static bool checkPositiveAttr(CheckContext &ctx, CallArgs &args,
                              llvm::StringRef name, llvm::StringRef example,
                              BuiltinExpr &attn) {
  Argument *arg = args.get(name);
  if (!arg)
    return true;
  const NumberExpr *number = positiveNumber(*arg);
  if (!number) {
    ctx.errorAt(*arg->value,
                "'" + name + "' must be a positive number, such as " + example);
    return false;
  }
  attn.attrs.push_back({name.str(), BuiltinAttr::getReal(number->value)});
  return true;
}

bool attnc::checkScoreArgs(CheckContext &ctx, CallArgs &args,
                           BuiltinExpr &attn) {
  bool ok =
      checkPositiveAttr(ctx, args, "scale",
                        "1 or 0.125 (the default is 1 / sqrt(head dim))", attn);
  ok &= checkPositiveAttr(ctx, args, "softcap",
                          "50 (Gemma 2's attn_logit_softcapping)", attn);
  return ok;
}

bool attnc::checkRope(CheckContext &ctx, CallArgs &args, BuiltinExpr &attn,
                      int64_t headDim) {
  Argument *style = args.get("rope"), *theta = args.get("rope_theta");
  bool ok = true;
  if (style) {
    auto *name = llvm::dyn_cast<NameExpr>(style->value.get());
    if (!name || (name->name != "half" && name->name != "interleaved")) {
      ctx.errorAt(*style->value,
                  "'rope' is half (rotate_half: Llama, Mistral, Qwen, "
                  "GPT-NeoX) or interleaved (GPT-J's pairs 2i, 2i+1)");
      ok = false;
    } else if (headDim % 2 != 0) {
      ctx.errorAt(*style->value, "rotary embeddings rotate pairs of features, "
                                 "but the head dim is " +
                                     llvm::Twine(headDim) + " (odd)");
      ok = false;
    } else {
      attn.attrs.push_back({"rope", BuiltinAttr::getEnum(name->name)});
    }
  }
  if (theta) {
    const NumberExpr *number = positiveNumber(*theta);
    if (!style) {
      ctx.errorAt(*theta->value, "'rope_theta' needs 'rope = half' or 'rope = "
                                 "interleaved'");
      ok = false;
    } else if (!number) {
      ctx.errorAt(*theta->value, "'rope_theta' must be a positive number, "
                                 "such as 10000 (the default) or 1e6");
      ok = false;
    } else {
      attn.attrs.push_back({"rope_theta", BuiltinAttr::getReal(number->value)});
    }
  }
  return ok;
}

bool attnc::resolveOutProjection(CheckContext &ctx, CallExpr &call,
                                 CallArgs &args, int64_t modelDim,
                                 BuiltinExpr &attn) {
  if (Argument *out = args.get("out"))
    return ctx.resolveProjection(*out, modelDim, modelDim, attn);
  ctx.error(call.calleeLoc.Start,
            "'" + call.callee + "' requires 'out = P' (the output projection)",
            call.getRange());
  return false;
}

bool attnc::resolveCache(CheckContext &ctx, Argument &arg, const Expr &x,
                         int64_t features, BuiltinExpr &attn) {
  const auto *name = llvm::dyn_cast<NameExpr>(arg.value.get());
  if (!name) {
    ctx.errorAt(*arg.value, "'cache' takes a state prefix P, whose states "
                            "'P.key' and 'P.value' are the KV cache");
    return false;
  }
  bool ok = true;
  const Extent &batch = x.shape.front();
  const Extent &seq = x.shape[x.shape.size() - 2];
  std::string batchName =
      batch.isSymbolic() ? batch.name : std::to_string(batch.size);
  const StateDecl *found[2] = {};
  const char *const roles[] = {"key", "value"};
  for (auto [i, role] : llvm::enumerate(roles)) {
    std::string full = name->name + "." + role;
    StateDecl *state = ctx.getState(full);
    if (!state) {
      ctx.errorAt(*arg.value,
                  "no state '" + full + "': declare the KV cache as 'state " +
                      full + " : f32[" + batchName + ", L, " +
                      llvm::Twine(features) + "]' with 'dim L <= CAPACITY'");
      ok = false;
      continue;
    }
    state->used = true;
    found[i] = state;
    const Shape &shape = state->type.shape;
    if (shape.size() != 3)
      continue; // reported at the declaration
    bool same = x.shape.size() == 3 && shape[0] == batch &&
                shape[2] == Extent::fixed(features) && !(shape[1] == seq);
    if (!same) {
      ctx.errorAt(*arg.value,
                  "state '" + full + "' must be [" + batchName + ", L, " +
                      llvm::Twine(features) +
                      "] for this attention: its input's batch dim, a "
                      "capacity dim other than the sequence dim '" +
                      seq.name + "', and the keys' " + llvm::Twine(features) +
                      " features");
      ok = false;
    }
  }
  if (ok && found[0]->type.shape[1].name != found[1]->type.shape[1].name) {
    ctx.errorAt(*arg.value, "the key and value caches of '" + name->name +
                                "' must have one capacity dim");
    ok = false;
  }
  if (ok) {
    attn.states.push_back({"key", found[0]});
    attn.states.push_back({"value", found[1]});
  }
  return ok;
}

mlir::IntegerAttr attnc::emitKvHeadsAttr(EmitContext &ctx,
                                         const BuiltinExpr &e) {
  const BuiltinAttr *kv = e.getAttr("kv_heads");
  return kv ? ctx.getBuilder().getI64IntegerAttr(kv->integer)
            : mlir::IntegerAttr();
}
