//===- compiler/frontend/builtins/AttentionArgs.cpp - shared args ---------===//
//
// Part of attnc. The arguments the attention builtins share (AttentionArgs.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/builtins/AttentionArgs.h"

using namespace attnc;

NamedArg attnc::headsArg() {
  return NamedArg::positiveInteger("heads", "12")
      .requiredAs("the number of heads");
}

NamedArg attnc::kvHeadsArg() {
  return NamedArg::positiveInteger("kv_heads", "2 (it must divide heads)");
}

NamedArg attnc::scaleArg() {
  return NamedArg::positiveNumber(
      "scale", "1 or 0.125 (the default is 1 / sqrt(head dim))");
}

NamedArg attnc::softcapArg() {
  return NamedArg::positiveNumber("softcap",
                                  "50 (Gemma 2's attn_logit_softcapping)");
}

NamedArg attnc::ropeArg() {
  return NamedArg::choice(
      "rope", {{"half", "rotate_half: Llama, Mistral, Qwen, GPT-NeoX"},
               {"interleaved", "GPT-J's pairs 2i, 2i+1"}});
}

NamedArg attnc::ropeThetaArg() {
  return NamedArg::positiveNumber("rope_theta", "10000 (the default) or 1e6");
}

NamedArg attnc::outArg() {
  return NamedArg::modulePrefix("out").requiredAs("the output projection");
}

NamedArg attnc::maskArg() { return NamedArg::mask("mask"); }

int64_t attnc::checkHeads(CheckContext &ctx, CallArgs &args, int64_t modelDim) {
  int64_t heads = args.integer("heads");
  // A default of 1 divides any d_model: the error is of a given `heads`.
  if (modelDim > 0 && modelDim % heads != 0) {
    ctx.errorAt(*args.get("heads")->value,
                "d_model " + llvm::Twine(modelDim) +
                    " is not divisible by heads = " + llvm::Twine(heads));
    return 0;
  }
  return heads;
}

int64_t attnc::checkKvHeads(CheckContext &ctx, CallArgs &args, int64_t heads) {
  Argument *arg = args.get("kv_heads");
  if (!arg)
    return heads;
  int64_t k = args.integer("kv_heads");
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

void attnc::recordScoreArgs(CallArgs &args, BuiltinExpr &attn) {
  for (llvm::StringRef name : {"scale", "softcap"})
    if (args.get(name))
      attn.attrs.push_back(
          {name.str(), BuiltinAttr::getReal(args.number(name))});
}

bool attnc::checkRope(CheckContext &ctx, CallArgs &args, BuiltinExpr &attn,
                      int64_t headDim) {
  Argument *style = args.get("rope"), *theta = args.get("rope_theta");
  bool ok = true;
  if (style && headDim % 2 != 0) {
    ctx.errorAt(*style->value, "rotary embeddings rotate pairs of features, "
                               "but the head dim is " +
                                   llvm::Twine(headDim) + " (odd)");
    ok = false;
  } else if (style) {
    attn.attrs.push_back(
        {"rope", BuiltinAttr::getEnum(args.choice("rope").str())});
  }
  if (theta && !style) {
    ctx.errorAt(*theta->value, "'rope_theta' needs 'rope = half' or 'rope = "
                               "interleaved'");
    ok = false;
  } else if (theta) {
    attn.attrs.push_back(
        {"rope_theta", BuiltinAttr::getReal(args.number("rope_theta"))});
  }
  return ok;
}

bool attnc::resolveCache(CheckContext &ctx, Argument &arg, const Expr &x,
                         int64_t features, BuiltinExpr &attn) {
  const auto *name = llvm::cast<NameExpr>(arg.value.get());
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
