//===- compiler/frontend/builtins/AttentionArgs.cpp - shared args ---------===//
//
// Part of attnc. The arguments the attention builtins share (AttentionArgs.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/builtins/AttentionArgs.h"

#include "llvm/ADT/StringExtras.h"

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

std::vector<NamedArg> attnc::ropeExtraArgs() {
  return {
      NamedArg::positiveInteger("rope_dims",
                                "16 (even, at most the head dim: the first "
                                "rope_dims features of each head rotate)"),
      NamedArg::choice(
          "rope_scaling",
          {{"linear", "frequencies / rope_factor"},
           {"llama3", "Llama 3.1's: rope_factor, rope_low_freq_factor, "
                      "rope_high_freq_factor, rope_original_max"}}),
      NamedArg::positiveNumber("rope_factor", "8"),
      NamedArg::positiveNumber("rope_low_freq_factor", "1"),
      NamedArg::positiveNumber("rope_high_freq_factor", "4"),
      NamedArg::positiveInteger("rope_original_max", "8192"),
  };
}

NamedArg attnc::headDimArg() {
  return NamedArg::positiveInteger("head_dim",
                                   "256 (the default is d_model / heads)");
}

NamedArg attnc::outArg() {
  return NamedArg::modulePrefix("out").requiredAs("the output projection");
}

NamedArg attnc::maskArg() { return NamedArg::mask("mask"); }

int64_t attnc::checkHeads(CheckContext &ctx, CallArgs &args, int64_t modelDim) {
  int64_t heads = args.integer("heads");
  // A default of 1 divides any d_model: the error is of a given `heads`.
  // With a head_dim of its own, heads * head_dim need not be d_model.
  if (modelDim > 0 && modelDim % heads != 0 && !args.get("head_dim")) {
    ctx.errorAt(*args.get("heads")->value,
                "d_model " + llvm::Twine(modelDim) +
                    " is not divisible by heads = " + llvm::Twine(heads) +
                    "; give 'head_dim = N' if each head has N features");
    return 0;
  }
  return heads;
}

int64_t attnc::checkHeadDim(CallArgs &args, BuiltinExpr &attn, int64_t modelDim,
                            int64_t heads) {
  if (args.get("head_dim")) {
    int64_t headDim = args.integer("head_dim");
    attn.attrs.push_back({"head_dim", BuiltinAttr::getInteger(headDim)});
    return headDim;
  }
  return modelDim > 0 && heads > 0 ? modelDim / heads : -1;
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
  if (style && headDim % 2 != 0 && !args.get("rope_dims")) {
    ctx.errorAt(*style->value, "rotary embeddings rotate pairs of features, "
                               "but the head dim is " +
                                   llvm::Twine(headDim) + " (odd)");
    ok = false;
  } else if (style) {
    attn.attrs.push_back(
        {"rope", BuiltinAttr::getEnum(args.choice("rope").str())});
  }
  const char *const parameters[] = {
      "rope_theta",           "rope_dims",
      "rope_scaling",         "rope_factor",
      "rope_low_freq_factor", "rope_high_freq_factor",
      "rope_original_max"};
  for (llvm::StringRef name : parameters)
    if (Argument *arg = args.get(name); arg && !style) {
      ctx.errorAt(*arg->value, "'" + name +
                                   "' needs 'rope = half' or 'rope = "
                                   "interleaved'");
      ok = false;
    }
  if (!style)
    return ok;
  if (theta)
    attn.attrs.push_back(
        {"rope_theta", BuiltinAttr::getReal(args.number("rope_theta"))});
  if (Argument *dims = args.get("rope_dims")) {
    int64_t n = args.integer("rope_dims");
    if (n % 2 != 0 || (headDim > 0 && n > headDim)) {
      ctx.errorAt(*dims->value,
                  "rope_dims = " + llvm::Twine(n) +
                      " must be even and at most the head dim " +
                      llvm::Twine(headDim) +
                      ": the first rope_dims features of each head rotate "
                      "in pairs");
      ok = false;
    } else {
      attn.attrs.push_back({"rope_dims", BuiltinAttr::getInteger(n)});
    }
  }
  // The scaling type, then the parameters it takes.
  Argument *scaling = args.get("rope_scaling");
  llvm::StringRef type = scaling ? args.choice("rope_scaling") : "";
  const char *const llama3Params[] = {"rope_factor", "rope_low_freq_factor",
                                      "rope_high_freq_factor",
                                      "rope_original_max"};
  std::vector<std::string> missing;
  for (llvm::StringRef name : llama3Params) {
    Argument *arg = args.get(name);
    bool takes =
        type == "llama3" || (type == "linear" && name == "rope_factor");
    if (arg && !scaling) {
      ctx.errorAt(*arg->value, "'" + name +
                                   "' needs 'rope_scaling = linear' or "
                                   "'rope_scaling = llama3'");
      ok = false;
    } else if (arg && !takes) {
      ctx.errorAt(*arg->value, "'" + name +
                                   "' belongs to 'rope_scaling = llama3'; "
                                   "linear scaling takes 'rope_factor' only");
      ok = false;
    } else if (!arg && takes) {
      missing.push_back(name.str());
    }
  }
  if (scaling && !missing.empty()) {
    ctx.errorAt(*scaling->value, "'rope_scaling = " + type + "' needs '" +
                                     llvm::join(missing, "', '") + "'");
    ok = false;
  }
  if (ok && type == "llama3" &&
      !(args.number("rope_high_freq_factor") >
        args.number("rope_low_freq_factor"))) {
    ctx.errorAt(*args.get("rope_high_freq_factor")->value,
                "rope_high_freq_factor must exceed rope_low_freq_factor: "
                "llama3 scaling interpolates between the two");
    ok = false;
  }
  if (ok && scaling) {
    attn.attrs.push_back({"rope_scaling", BuiltinAttr::getEnum(type.str())});
    for (llvm::StringRef name : llama3Params)
      if (args.get(name))
        attn.attrs.push_back(
            {name.str(), name == "rope_original_max"
                             ? BuiltinAttr::getInteger(args.integer(name))
                             : BuiltinAttr::getReal(args.number(name))});
  }
  return ok;
}

/// The scales of the i8 caches `found` (key, value) of `cache = P`: the f32
/// states `P.key_scale` and `P.value_scale`, the caches' `[B, L]` and one
/// scale per key/value head, as an i8 weight `N` has its `N_scale`. A
/// cross-attention's caches (`kvHeads` 0) stay f32, f16 or bf16.
static bool resolveCacheScales(CheckContext &ctx, Argument &arg,
                               const std::string &prefix,
                               const StateDecl *const found[2], int64_t kvHeads,
                               BuiltinExpr &attn) {
  if (kvHeads == 0) {
    ctx.errorAt(*arg.value, "the caches of cross-attention '" + prefix +
                                "' are i8, but a cross-attention's caches are "
                                "f32, f16 or bf16 (i8 caches are "
                                "self-attention's)");
    return false;
  }
  bool ok = true;
  for (int i = 0; i < 2; ++i) {
    const Shape &cache = found[i]->type.shape;
    std::string full = found[i]->name + "_scale";
    std::string expected =
        "f32" + shapeToString({cache[0], cache[1], Extent::fixed(kvHeads)});
    StateDecl *state = ctx.getState(full);
    if (!state) {
      ctx.errorAt(*arg.value, "the i8 cache '" + found[i]->name +
                                  "' needs its scales: declare 'state " + full +
                                  " : " + expected +
                                  "' (one per row and key/value head)");
      ok = false;
      continue;
    }
    state->used = true;
    const Shape &shape = state->type.shape;
    if (state->type.elementType != ElementType::f32 || shape.size() != 3 ||
        !(shape[0] == cache[0]) || !(shape[1] == cache[1]) ||
        !(shape[2] == Extent::fixed(kvHeads))) {
      ctx.errorAt(*arg.value, "the scales '" + full + "' of the i8 cache '" +
                                  found[i]->name + "' must be " + expected +
                                  " (one per row and key/value head), but "
                                  "they are " +
                                  getElementTypeName(state->type.elementType) +
                                  shapeToString(shape));
      ok = false;
      continue;
    }
    attn.states.push_back({i == 0 ? "key_scale" : "value_scale", state});
  }
  return ok;
}

bool attnc::resolveCache(CheckContext &ctx, Argument &arg, const Expr &x,
                         int64_t features, BuiltinExpr &attn, int64_t kvHeads,
                         const Expr *memory) {
  const auto *name = llvm::cast<NameExpr>(arg.value.get());
  bool ok = true;
  const Extent &batch = x.shape.front();
  const Extent &seq = x.shape[x.shape.size() - 2];
  auto extentName = [](const Extent &e) {
    return e.isSymbolic() ? e.name : std::to_string(e.size);
  };
  std::string batchName = extentName(batch);
  // A cross-attention's states hold the memory's keys: one row per memory
  // token, so their row dim is the memory's sequence dim.
  const Extent *rows =
      memory ? &memory->shape[memory->shape.size() - 2] : nullptr;
  std::string rowName = rows ? extentName(*rows) : "L";
  const StateDecl *found[2] = {};
  const char *const roles[] = {"key", "value"};
  for (auto [i, role] : llvm::enumerate(roles)) {
    std::string full = name->name + "." + role;
    std::string expected = "f32[" + batchName + ", " + rowName + ", " +
                           std::to_string(features) + "]";
    StateDecl *state = ctx.getState(full);
    if (!state) {
      ctx.errorAt(*arg.value,
                  "no state '" + full + "': declare the " +
                      (rows ? "cross-attention cache as 'state " + full +
                                  " : " + expected + "'"
                            : "KV cache as 'state " + full + " : " + expected +
                                  "' with 'dim L <= CAPACITY'"));
      ok = false;
      continue;
    }
    state->used = true;
    found[i] = state;
    const Shape &shape = state->type.shape;
    if (shape.size() != 3)
      continue; // reported at the declaration
    bool same = x.shape.size() == 3 && shape[0] == batch &&
                shape[2] == Extent::fixed(features) &&
                (rows ? shape[1] == *rows : !(shape[1] == seq));
    if (!same && rows) {
      ctx.errorAt(*arg.value,
                  "state '" + full + "' must be " + expected +
                      " for this cross-attention: the memory's batch dim, its "
                      "sequence dim '" +
                      rowName + "' (one row per memory token) and the keys' " +
                      llvm::Twine(features) + " features, but it is " +
                      shapeToString(shape));
      ok = false;
    } else if (!same) {
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
  // One precision per cache: what a sequence's rows cost and how they are
  // rounded is then one choice, as in Hugging Face's caches.
  if (ok && found[0]->type.elementType != found[1]->type.elementType) {
    ctx.errorAt(*arg.value, "the key and value caches of '" + name->name +
                                "' must have one dtype, but '" +
                                found[0]->name + "' is " +
                                getElementTypeName(found[0]->type.elementType) +
                                " and '" + found[1]->name + "' is " +
                                getElementTypeName(found[1]->type.elementType));
    ok = false;
  }
  if (ok) {
    attn.states.push_back({"key", found[0]});
    attn.states.push_back({"value", found[1]});
  }
  if (ok && found[0]->type.elementType == ElementType::i8)
    ok = resolveCacheScales(ctx, arg, name->name, found, kvHeads, attn);
  return ok;
}

mlir::IntegerAttr attnc::emitKvHeadsAttr(EmitContext &ctx,
                                         const BuiltinExpr &e) {
  const BuiltinAttr *kv = e.getAttr("kv_heads");
  return kv ? ctx.getBuilder().getI64IntegerAttr(kv->integer)
            : mlir::IntegerAttr();
}
