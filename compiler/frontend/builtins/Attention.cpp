//===- compiler/frontend/builtins/Attention.cpp - attentions --------------===//
//
// Part of attnc. `self_attention(x, ...)`, `cross_attention(x, memory,
// ...)` and `attention(q, k, v, ...)`, each with an optional second result,
// its attention weights. Their shared arguments are in AttentionArgs.h.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/builtins/AttentionArgs.h"

#include "compiler/passes/Builders.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace attnc;
using mlir::Value;
namespace attn = mlir::attn;

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

/// `attention(q, k, v, ...)` on tensors already projected: q [.., S, Dq],
/// k [.., T, Dk], v [.., T, Dv] (one batch), the result [.., S, Dv]. The
/// score of a query and a key is
///   dot       q . k, scaled by 1 / sqrt(Dq / heads) (Dk = Dq);
///   general   q . (W k + b) with `w = P`, P.weight [Dq, Dk] (Luong);
///   additive  w_s . tanh(Wq q + Wk k) with `w_query`, `w_key` [A, D] and
///             `w_score` an nn.Linear(A, 1) (Bahdanau; its bias shifts every
///             score alike, which softmax ignores).
/// General and additive scores are not scaled (scale 1) unless `scale = X`.
static ExprPtr checkAttention(CheckContext &ctx, CallExpr &call,
                              CallArgs &args) {
  ExprPtr q = ctx.checkActivationInput(*args.positional[0], "attention");
  ExprPtr k = ctx.checkActivationInput(*args.positional[1], "attention");
  ExprPtr v = ctx.checkActivationInput(*args.positional[2], "attention");
  int64_t dq = -1, dk = -1, dv = -1;
  if (q && !ctx.getFeatureDim(*q, "attention", dq))
    q = nullptr;
  if (k && !ctx.getFeatureDim(*k, "attention", dk))
    k = nullptr;
  if (v && !ctx.getFeatureDim(*v, "attention", dv))
    v = nullptr;
  if (!q || !k || !v)
    return nullptr;
  const Shape &qs = q->shape, &ks = k->shape, &vs = v->shape;
  bool sameBatch = qs.size() >= 2 && ks.size() == qs.size() &&
                   vs.size() == qs.size() &&
                   std::equal(qs.begin(), qs.end() - 2, ks.begin()) &&
                   std::equal(qs.begin(), qs.end() - 2, vs.begin()) &&
                   ks[ks.size() - 2] == vs[vs.size() - 2];
  if (!sameBatch) {
    ctx.errorAt(*k, "the queries, keys and values of 'attention' must share "
                    "their batch dims, and keys and values their sequence "
                    "dim, but they are " +
                        shapeToString(qs) + ", " + shapeToString(ks) + " and " +
                        shapeToString(vs));
    return nullptr;
  }
  auto attn = std::make_unique<BuiltinExpr>("attention", call.getRange());
  int64_t heads = checkHeads(ctx, args, dq);
  if (!heads)
    return nullptr;
  int64_t kvHeads = checkKvHeads(ctx, args, heads);
  if (!kvHeads)
    return nullptr;
  if (dv % kvHeads != 0) {
    ctx.errorAt(*v, "the values' " + llvm::Twine(dv) +
                        " features are not divisible by " +
                        (kvHeads == heads ? "heads = " : "kv_heads = ") +
                        llvm::Twine(kvHeads));
    return nullptr;
  }
  llvm::StringRef score = args.choice("score");
  bool ok = true;
  // Each score's weights, and only those.
  auto misplaced = [&](llvm::StringRef argName, llvm::StringRef owner) {
    if (Argument *arg = args.get(argName)) {
      ctx.errorAt(*arg->value, "'" + argName + "' belongs to 'score = " +
                                   owner + "', but the score is " + score);
      ok = false;
    }
  };
  auto needs = [&](llvm::StringRef argName, llvm::StringRef what) {
    Argument *arg = args.get(argName);
    if (!arg) {
      ctx.error(call.calleeLoc.Start,
                "'score = " + score + "' needs '" + argName + " = P' (" + what +
                    ")",
                call.getRange());
      ok = false;
    }
    return arg;
  };
  if (score != "general")
    misplaced("w", "general");
  if (score != "additive")
    for (llvm::StringRef name : {"w_query", "w_key", "w_score"})
      misplaced(name, "additive");
  if (kvHeads != heads && score != "dot") {
    ctx.errorAt(*args.get("kv_heads")->value,
                "grouped-query attention ('kv_heads') needs score = dot");
    ok = false;
  } else if (score == "dot" && kvHeads != heads &&
             dk != kvHeads * (dq / heads)) {
    ctx.errorAt(*k, "with kv_heads = " + llvm::Twine(kvHeads) + " heads of " +
                        llvm::Twine(dq / heads) + " features the keys need " +
                        llvm::Twine(kvHeads * (dq / heads)) +
                        " features, but they have " + llvm::Twine(dk));
    ok = false;
  } else if (score == "dot" && kvHeads == heads && dq != dk) {
    ctx.errorAt(*k, "dot-product scores need keys with the queries' " +
                        llvm::Twine(dq) + " features, but they have " +
                        llvm::Twine(dk) +
                        "; project them, or use score = general");
    ok = false;
  } else if (score == "general") {
    if (Argument *w = needs("w", "the [Dq, Dk] matrix of q . W k"))
      ok &= ctx.resolveProjection(*w, dk, dq, *attn, "the keys' features");
  } else if (score == "additive") {
    if (heads != 1) {
      ctx.errorAt(*args.get("heads")->value,
                  "an additive score is computed over whole vectors: use "
                  "heads = 1");
      ok = false;
    }
    Argument *wq = needs("w_query", "the [A, Dq] projection of the queries");
    Argument *wk = needs("w_key", "the [A, Dk] projection of the keys");
    Argument *ws = needs("w_score", "an nn.Linear(A, 1) reducing tanh(...) "
                                    "to a score");
    if (wq && wk && ws) {
      WeightDecl *qw = ctx.projectionWeight(*wq);
      int64_t a = qw && qw->type.shape.size() == 2 ? qw->getOutFeatures() : -1;
      ok &= ctx.resolveProjection(*wq, dq, a, *attn, "the queries' features");
      ok &= ctx.resolveProjection(*wk, dk, a, *attn, "the keys' features");
      ok &= ctx.resolveProjection(*ws, a, 1, *attn,
                                  "the additive score's features");
    }
  }
  if (Argument *mask = args.get("mask")) {
    ok &= resolveMask(ctx, mask->value, *attn, qs, ks[ks.size() - 2], heads);
    // Causal and window terms compare query and key positions, which only
    // means something when both run along one sequence dim.
    bool positional = attn->getAttr("causal") || attn->getAttr("window_left") ||
                      attn->getAttr("alibi");
    if (positional && qs[qs.size() - 2] != ks[ks.size() - 2]) {
      ctx.errorAt(*mask->value,
                  "'causal', 'window' and 'alibi' compare query and key "
                  "positions, but the "
                  "queries run along " +
                      extentToString(qs[qs.size() - 2]) +
                      " and the keys along " +
                      extentToString(ks[ks.size() - 2]) +
                      "; use padding(lengths) or an additive tensor");
      ok = false;
    }
  }
  recordScoreArgs(args, *attn);
  if (Argument *rope = args.get("rope")) {
    // Rotary embeddings turn queries and keys by their positions along one
    // sequence, as in the self-attention they come from.
    if (score != "dot") {
      ctx.errorAt(*rope->value, "'rope' rotates the queries and keys of "
                                "dot-product scores, but the score is " +
                                    score);
      ok = false;
    } else if (qs[qs.size() - 2] != ks[ks.size() - 2]) {
      ctx.errorAt(*rope->value,
                  "'rope' rotates queries and keys by their positions along "
                  "one sequence, but the queries run along " +
                      extentToString(qs[qs.size() - 2]) +
                      " and the keys along " +
                      extentToString(ks[ks.size() - 2]));
      ok = false;
    }
  }
  ok &= checkRope(ctx, args, *attn, dq / heads);
  if (!ok)
    return nullptr;
  attn->attrs.push_back({"score", BuiltinAttr::getEnum(score.str())});
  recordHeads(*attn, heads, kvHeads);
  attn->shape = qs;
  attn->shape.back() = Extent::fixed(heads * (dv / kvHeads));
  attn->operands.push_back(std::move(q));
  attn->operands.push_back(std::move(k));
  attn->operands.push_back(std::move(v));
  return attn;
}

/// `cross_attention(x, memory, ...)`: queries from x [.., S, D], keys and
/// values from memory [.., T, Dm] (same batch dims, its own sequence dim);
/// q and out are [D, D], k and v [D, Dm] (kv packed: [2D, Dm]).
static ExprPtr checkCrossAttention(CheckContext &ctx, CallExpr &call,
                                   CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "cross_attention");
  ExprPtr memory =
      ctx.checkActivationInput(*args.positional[1], "cross_attention");
  int64_t modelDim = -1, memoryDim = -1;
  if (x && !ctx.getFeatureDim(*x, "cross_attention", modelDim))
    x = nullptr;
  if (memory && !ctx.getFeatureDim(*memory, "cross_attention", memoryDim))
    memory = nullptr;
  if (x && memory) {
    const Shape &a = x->shape, &m = memory->shape;
    bool sameBatch =
        a.size() == m.size() && std::equal(a.begin(), a.end() - 2, m.begin());
    if (!sameBatch) {
      ctx.errorAt(*memory,
                  "the memory of 'cross_attention' must have the batch dims "
                  "of its queries and its own sequence dim, " +
                      shapeToString(Shape(a.begin(), a.end() - 2)) +
                      " then [T, features], but the queries are " +
                      shapeToString(a) + " and the memory " + shapeToString(m));
      memory = nullptr;
    }
  }
  int64_t heads = checkHeads(ctx, args, modelDim);
  bool ok = x && memory && heads > 0;

  auto attn = std::make_unique<BuiltinExpr>("cross_attention", call.getRange());
  // Queries, keys and values have heads * head_dim features (d_model
  // unless head_dim is given).
  int64_t headDim = checkHeadDim(args, *attn, modelDim, heads);
  int64_t qDim = ok ? heads * headDim : -1;
  Argument *q = args.get("q"), *kv = args.get("kv"), *k = args.get("k"),
           *v = args.get("v"), *qkv = args.get("qkv");
  if (qkv && (q || kv || k || v)) {
    ctx.error(qkv->nameLoc.Start,
              "give 'cross_attention' either 'qkv' (packed) or 'q' and 'kv' "
              "(or 'k' and 'v'), not both",
              qkv->nameLoc);
    ok = false;
  } else if (qkv) {
    // nn.MultiheadAttention's in_proj: rows [0, D) project the queries, rows
    // [D, 3D) the memory's keys and values, so both have D features.
    ok &=
        ctx.resolveProjection(*qkv, modelDim, qDim < 0 ? -1 : 3 * qDim, *attn);
    if (ok && memoryDim != modelDim) {
      ctx.errorAt(*qkv->value,
                  "a packed 'qkv' projects the queries and the memory with "
                  "one matrix, so both need d_model " +
                      llvm::Twine(modelDim) + " features, but the memory has " +
                      llvm::Twine(memoryDim) +
                      "; give 'q' and 'kv' (or 'k' and 'v')");
      ok = false;
    }
  } else if (q) {
    ok &= ctx.resolveProjection(*q, modelDim, qDim, *attn);
  } else {
    ctx.error(call.calleeLoc.Start,
              "'cross_attention' requires 'q = P' (the query projection), or "
              "'qkv = P' (packed, as nn.MultiheadAttention's in_proj)",
              call.getRange());
    ok = false;
  }
  int64_t kvOut = qDim < 0 ? -1 : 2 * qDim;
  if (qkv) {
    // The packed projection has them.
  } else if (kv && (k || v)) {
    ctx.error(kv->nameLoc.Start,
              "give either 'kv' or 'k' and 'v' to 'cross_attention', not both",
              kv->nameLoc);
    ok = false;
  } else if (kv) {
    ok &= ctx.resolveProjection(*kv, memoryDim, kvOut, *attn,
                                "the memory's features");
  } else if (k && v) {
    ok &= ctx.resolveProjection(*k, memoryDim, qDim, *attn,
                                "the memory's features");
    ok &= ctx.resolveProjection(*v, memoryDim, qDim, *attn,
                                "the memory's features");
  } else {
    ctx.error(call.calleeLoc.Start,
              "'cross_attention' needs its key and value projections: 'kv = "
              "P' (packed, K then V) or 'k = P, v = P'",
              call.getRange());
    ok = false;
  }
  ok &= ctx.resolveProjection(*args.get("out"), qDim, modelDim, *attn,
                              "the heads' joined features, heads * head_dim");
  recordScoreArgs(args, *attn);
  if (Argument *rope = args.get("rope")) {
    ctx.errorAt(*rope->value,
                "'cross_attention' takes no rotary embeddings: they rotate "
                "queries and keys by their positions, which are in different "
                "sequences here; rotate the memory's keys where they are "
                "computed");
    ok = false;
  }
  if (Argument *mask = args.get("mask"); mask && x && memory) {
    ok &= resolveMask(ctx, mask->value, *attn, x->shape,
                      memory->shape[memory->shape.size() - 2], heads);
    // Positions of the queries and of the memory are unrelated: a causal or
    // window term would compare them as if they were one sequence.
    for (llvm::StringRef term : {"causal", "window_left", "alibi"})
      if (attn->getAttr(term)) {
        ctx.errorAt(*mask->value,
                    "'cross_attention' masks only the memory: " +
                        llvm::StringRef(term == "causal"  ? "'causal'"
                                        : term == "alibi" ? "'alibi'"
                                                          : "'window'") +
                        " compares query and key positions, which are in "
                        "different sequences; use padding(lengths) or an "
                        "additive tensor");
        ok = false;
        break;
      }
  }
  // The memory's keys and values, projected once by a prefill and read by
  // every decode (the memory is not evaluated then). The mask terms still
  // apply: they mask the memory, whose tokens the cache's rows are.
  if (Argument *cache = args.get("cache"); cache && x && memory && qDim > 0)
    ok &=
        resolveCache(ctx, *cache, *x, qDim, *attn, /*kvHeads=*/0, memory.get());
  if (!ok)
    return nullptr;
  attn->shape = x->shape;
  attn->operands.push_back(std::move(x));
  attn->operands.push_back(std::move(memory));
  recordHeads(*attn, heads, heads);
  return attn;
}

/// The relative_bias call that `e` is, directly or through the names it is
/// assigned to; null for any other value.
static const BuiltinExpr *relativeBiasOf(const Expr &e) {
  if (auto *call = llvm::dyn_cast<BuiltinExpr>(&e))
    return call->builtin == "relative_bias" ? call : nullptr;
  auto *ref = llvm::dyn_cast<ValueRefExpr>(&e);
  if (!ref)
    return nullptr;
  if (auto *assign = llvm::dyn_cast<AssignStmt>(ref->decl))
    return relativeBiasOf(*assign->value);
  if (auto *output = llvm::dyn_cast<OutputStmt>(ref->decl))
    return relativeBiasOf(*output->value);
  return nullptr;
}

static ExprPtr checkSelfAttention(CheckContext &ctx, CallExpr &call,
                                  CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "self_attention");
  int64_t modelDim = -1;
  if (x && !ctx.getFeatureDim(*x, "self_attention", modelDim))
    x = nullptr;
  int64_t heads = checkHeads(ctx, args, modelDim);
  bool ok = x != nullptr && heads > 0;
  int64_t kvHeads = heads > 0 ? checkKvHeads(ctx, args, heads) : 0;
  ok &= kvHeads > 0;
  auto attn = std::make_unique<BuiltinExpr>("self_attention", call.getRange());
  // Queries: heads heads of head_dim features (d_model / heads unless
  // given); keys and values: kv_heads heads of the same head dim.
  int64_t headDim = checkHeadDim(args, *attn, modelDim, heads);
  int64_t qDim = ok ? heads * headDim : -1;
  int64_t kvDim = ok ? kvHeads * headDim : -1;
  std::string kvWhat = "d_model";
  if (ok && (kvHeads != heads || args.get("head_dim")))
    kvWhat = (kvHeads != heads ? "kv_heads = " : "heads = ") +
             std::to_string(kvHeads) + " heads of " + std::to_string(headDim) +
             " features from d_model";

  Argument *qkv = args.get("qkv");
  Argument *separate[] = {args.get("q"), args.get("k"), args.get("v")};
  unsigned numSeparate =
      llvm::count_if(separate, [](Argument *a) { return a != nullptr; });
  if (qkv && numSeparate) {
    ctx.error(qkv->nameLoc.Start,
              "give either 'qkv' or 'q', 'k' and 'v' to 'self_attention', "
              "not both",
              qkv->nameLoc);
    ok = false;
  } else if (qkv) {
    ok &= ctx.resolveProjection(
        *qkv, modelDim, kvDim < 0 ? -1 : qDim + 2 * kvDim, *attn, kvWhat);
    if (args.get("qkv_layout") && args.choice("qkv_layout") == "per_head") {
      if (kvHeads != heads) {
        ctx.errorAt(*args.get("qkv_layout")->value,
                    "'qkv_layout = per_head' groups each head's query, key "
                    "and value rows, so it needs kv_heads = heads");
        ok = false;
      }
      attn->attrs.push_back({"qkv_per_head", BuiltinAttr::getInteger(1)});
    }
  } else if (numSeparate == 3) {
    if (Argument *layout = args.get("qkv_layout")) {
      ctx.errorAt(*layout->value, "'qkv_layout' says how a packed 'qkv' "
                                  "projection is laid out; separate q, k "
                                  "and v have none");
      ok = false;
    }
    ok &= ctx.resolveProjection(*separate[0], modelDim, qDim, *attn);
    for (Argument *arg : {separate[1], separate[2]})
      ok &= ctx.resolveProjection(*arg, modelDim, kvDim, *attn, kvWhat);
  } else if (numSeparate) {
    const llvm::StringRef names[] = {"q", "k", "v"};
    std::vector<llvm::StringRef> missing;
    for (auto [arg, name] : llvm::zip(separate, names))
      if (!arg)
        missing.push_back(name);
    ctx.error(call.calleeLoc.Start,
              "'self_attention' is missing '" + llvm::join(missing, "', '") +
                  "'; separate projections need all of 'q', 'k' and 'v'",
              call.getRange());
    ok = false;
  } else {
    ctx.error(call.calleeLoc.Start,
              "'self_attention' needs its projections: 'qkv = P' (packed) or "
              "'q = P, k = P, v = P'",
              call.getRange());
    ok = false;
  }

  // The output projection reads the joined heads, [d_model, heads *
  // head_dim].
  ok &= ctx.resolveProjection(*args.get("out"), qDim, modelDim, *attn,
                              "the heads' joined features, heads * head_dim");

  if (Argument *mask = args.get("mask"); mask && x)
    ok &= resolveMask(ctx, mask->value, *attn, x->shape,
                      x->shape[x->shape.size() - 2], heads);
  recordScoreArgs(args, *attn);
  if (headDim > 0)
    ok &= checkRope(ctx, args, *attn, headDim);
  if (Argument *cache = args.get("cache"); cache && x) {
    // With kv_heads the cache rows hold kv_heads heads of keys.
    ok &= resolveCache(ctx, *cache, *x, kvDim > 0 ? kvDim : modelDim, *attn,
                       kvHeads);
    // A decode's keys are the cache's rows: a term computed from positions
    // is recomputed over them, a tensor [.., S, S] has no entries for them.
    const Expr *bias = attn->getNamedOperand("bias");
    if (attn->getNamedOperand("lengths") || (bias && !relativeBiasOf(*bias))) {
      ctx.error(cache->nameLoc.Start,
                "an attention with a KV cache takes the mask terms causal, "
                "window, alibi and relative_bias(...), but no padding or "
                "additive tensor (decoding attends over the cache's rows)",
                cache->nameLoc);
      ok = false;
    }
  }

  if (!ok)
    return nullptr;
  attn->shape = x->shape;
  attn->operands.push_back(std::move(x));
  recordHeads(*attn, heads, kvHeads);
  return attn;
}

/// `a, w = <attention>(...)`: `w` is the attention weights, [batch...,
/// heads, S, T] over the keys' sequence T (S for self-attention), which the
/// call then computes.
static bool checkWeightsResult(CheckContext &ctx, BuiltinExpr &call,
                               ResultDecl &result) {
  if (call.getState("key")) {
    ctx.error(result.nameLoc.Start,
              "an attention with a KV cache has no weights result: its keys "
              "are the cache's rows when decoding",
              result.nameLoc);
    return false;
  }
  call.attrs.push_back({"weights", BuiltinAttr::getInteger(1)});
  // The memory of a cross-attention, the keys of an attention.
  const Shape &x = call.shape;
  const Shape &keys =
      call.operands.size() > 1 ? call.operands[1]->shape : call.shape;
  result.elementType = ElementType::f32;
  result.shape.assign(x.begin(), x.end() - 2);
  result.shape.push_back(Extent::fixed(call.getAttr("heads")->integer));
  result.shape.push_back(x[x.size() - 2]);
  result.shape.push_back(keys[keys.size() - 2]);
  return true;
}

//===----------------------------------------------------------------------===//
// Emission
//===----------------------------------------------------------------------===//

/// A named operand of the call (`lengths`, `bias`), or null.
static Value namedOperand(EmitContext &ctx, const BuiltinExpr &e,
                          llvm::StringRef role) {
  const Expr *x = e.getNamedOperand(role);
  return x ? ctx.expr(*x) : Value();
}

static Value emitSelfAttention(EmitContext &ctx, const BuiltinExpr &e,
                               llvm::ArrayRef<Value> operands) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  Value input = operands[0];
  // Matrix, bias and (of an i8 or i4 matrix) scales.
  auto project = [&](llvm::StringRef role) -> std::tuple<Value, Value, Value> {
    const WeightDecl *w = e.getWeight((role + ".weight").str());
    if (!w)
      return {};
    Value matrix = ctx.outInWeight(w);
    Value bias = ctx.weight(e.getWeight((role + ".bias").str()));
    Value scales = ctx.weight(e.getWeight((role + ".scales").str()));
    // An i4 matrix's group scales are in its layout: [out, in / G] as it.
    auto type = scales ? mlir::cast<mlir::RankedTensorType>(scales.getType())
                       : mlir::RankedTensorType();
    if (type && type.getRank() == 2 && w->layout != WeightLayout::outIn)
      scales = builder.create<attn::TransposeOp>(
          scales.getLoc(),
          mlir::RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)},
                                      type.getElementType()),
          scales);
    return {matrix, bias, scales};
  };
  auto [wq, bq, sq] = project("q");
  auto [wk, bk, sk] = project("k");
  auto [wv, bv, sv] = project("v");
  auto [wqkv, bqkv, sqkv] = project("qkv");
  auto [wo, bo, so] = project("out");
  Value lengths = namedOperand(ctx, e, "lengths");
  Value bias = namedOperand(ctx, e, "bias");
  mlir::Type weights;
  if (e.getAttr("weights")) {
    // [batch..., heads, S, S]
    auto x = mlir::cast<mlir::RankedTensorType>(input.getType());
    llvm::SmallVector<int64_t> shape(x.getShape().drop_back(2));
    int64_t s = x.getDimSize(x.getRank() - 2);
    shape.append({e.getAttr("heads")->integer, s, s});
    weights = mlir::RankedTensorType::get(shape, x.getElementType());
  }
  attn::RopeStyleAttr rope;
  if (const BuiltinAttr *style = e.getAttr("rope"))
    rope = attn::RopeStyleAttr::get(
        builder.getContext(),
        *attn::symbolizeRopeStyle(llvm::StringRef(style->enumerator)));
  Value keyCache, valueCache, keyScale, valueScale, at;
  if (ctx.getEntry() != Entry::run && e.getState("key")) {
    keyCache = ctx.state(e.getState("key"));
    valueCache = ctx.state(e.getState("value"));
    if (const StateDecl *scales = e.getState("key_scale")) {
      keyScale = ctx.state(scales);
      valueScale = ctx.state(e.getState("value_scale"));
    }
    at = ctx.getPosition();
  }
  if (bias && at) {
    // Decoding, T5's bias (the only additive term a cache allows) is this
    // attention's own, over the cache's rows at the decode's positions: a
    // table lookup, computed in place by the attention it feeds.
    auto shared = mlir::cast<attn::RelativeBiasOp>(bias.getDefiningOp());
    auto type = mlir::cast<mlir::RankedTensorType>(bias.getType());
    auto cache = mlir::cast<mlir::RankedTensorType>(keyCache.getType());
    llvm::SmallVector<int64_t> shape(type.getShape());
    shape.back() = cache.getDimSize(cache.getRank() - 2);
    bias = builder.create<attn::RelativeBiasOp>(
        ctx.loc(e.getLoc()),
        mlir::RankedTensorType::get(shape, type.getElementType()), input,
        shared.getTable(), at, keyCache, shared.getMaxDistance(),
        shared.getBidirectional());
  }
  auto integer = [&](llvm::StringRef name) {
    const BuiltinAttr *given = e.getAttr(name);
    return given ? builder.getI64IntegerAttr(given->integer)
                 : mlir::IntegerAttr();
  };
  attn::RopeScalingAttr scaling;
  if (const BuiltinAttr *type = e.getAttr("rope_scaling"))
    scaling = attn::RopeScalingAttr::get(
        builder.getContext(),
        *attn::symbolizeRopeScaling(llvm::StringRef(type->enumerator)));
  auto op = builder.create<attn::SelfAttentionOp>(
      ctx.loc(e.getLoc()), input.getType(), weights, input, wq, bq, wk, bk, wv,
      bv, wqkv, bqkv, wo, bo, lengths, bias, keyCache, valueCache, at, keyScale,
      valueScale, sq, sk, sv, sqkv, so,
      builder.getI64IntegerAttr(e.getAttr("heads")->integer),
      emitMaskAttr(ctx, e), ctx.realAttr(e, "scale"), emitKvHeadsAttr(ctx, e),
      rope, ctx.realAttr(e, "rope_theta"), ctx.realAttr(e, "softcap"),
      integer("head_dim"), integer("rope_dims"), scaling,
      ctx.realAttr(e, "rope_factor"), ctx.realAttr(e, "rope_low_freq_factor"),
      ctx.realAttr(e, "rope_high_freq_factor"), integer("rope_original_max"),
      e.getAttr("qkv_per_head") ? builder.getUnitAttr() : mlir::UnitAttr());
  ctx.setResults(e, llvm::SmallVector<Value, 2>(op->getResults()));
  return op.getResult();
}

/// attn.sdpa of projected q, k, v with the call's heads, mask, key lengths,
/// additive bias and weights result; the scale is the call's `scale`, or
/// 1/sqrt(head dim) for dot-product scores and 1 for the others.
static attn::SdpaOp buildSdpa(EmitContext &ctx, const BuiltinExpr &e, Value q,
                              Value k, Value v, Value scoreVector,
                              bool dotScore) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  int64_t heads = e.getAttr("heads")->integer;
  auto queries = mlir::cast<mlir::RankedTensorType>(q.getType());
  auto values = mlir::cast<mlir::RankedTensorType>(v.getType());
  float scale = 1.0f;
  if (const BuiltinAttr *given = e.getAttr("scale"))
    scale = float(given->real);
  else if (dotScore)
    scale = 1.0f / std::sqrt(float(queries.getShape().back() / heads));
  mlir::Type weights;
  if (e.getAttr("weights")) {
    // [batch..., heads, S, T]
    llvm::SmallVector<int64_t> shape(queries.getShape().drop_back(2));
    shape.append({heads, queries.getDimSize(queries.getRank() - 2),
                  values.getDimSize(values.getRank() - 2)});
    weights = mlir::RankedTensorType::get(shape, queries.getElementType());
  }
  mlir::IntegerAttr kvHeads = emitKvHeadsAttr(ctx, e);
  int64_t valueHeads = kvHeads ? kvHeads.getInt() : heads;
  llvm::SmallVector<int64_t> result(queries.getShape());
  result.back() = heads * (values.getShape().back() / valueHeads);
  Value lengths = namedOperand(ctx, e, "lengths");
  Value bias = namedOperand(ctx, e, "bias");
  return builder.create<attn::SdpaOp>(
      ctx.loc(e.getLoc()),
      mlir::RankedTensorType::get(result, queries.getElementType()), weights, q,
      k, v, lengths, bias, scoreVector,
      /*query_offsets=*/Value(), /*key_scale=*/Value(),
      /*value_scale=*/Value(), builder.getI64IntegerAttr(heads), kvHeads,
      emitMaskAttr(ctx, e), builder.getF32FloatAttr(scale),
      ctx.realAttr(e, "softcap"));
}

/// Queries projected from `input`, keys and values from `memory`, then
/// attn.sdpa and the output projection: cross-attention has no op of its
/// own, its parts are those of a decomposed self-attention.
static Value emitCrossAttention(EmitContext &ctx, const BuiltinExpr &e,
                                llvm::ArrayRef<Value> operands) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  Value input = operands[0], memory = operands[1];
  mlir::Location where = ctx.loc(e.getLoc());
  // Queries, keys and values of heads * head_dim features.
  int64_t d = e.getAttr("heads")->integer *
              (e.getAttr("head_dim")
                   ? e.getAttr("head_dim")->integer
                   : mlir::cast<mlir::RankedTensorType>(input.getType())
                             .getShape()
                             .back() /
                         e.getAttr("heads")->integer);
  auto linear = [&](Value x, Value w, Value b) {
    return attn::buildLinear(builder, where, x, w, b,
                             attn::WeightLayout::out_in);
  };
  auto project = [&](Value x, llvm::StringRef role) -> Value {
    const WeightDecl *w = e.getWeight((role + ".weight").str());
    if (!w)
      return {};
    Value matrix = ctx.outInWeight(w);
    return linear(x, matrix, ctx.weight(e.getWeight((role + ".bias").str())));
  };
  // With a cache, a decode reads the keys and values a prefill wrote and
  // projects nothing from the memory, so the memory is dead there.
  const StateDecl *keyState = e.getState("key");
  bool fromCache = keyState && ctx.getEntry() == Entry::decode;
  Value q = project(input, "q");
  Value kv, k, v;
  if (!fromCache) {
    kv = project(memory, "kv");
    k = project(memory, "k");
    v = project(memory, "v");
  }
  if (const WeightDecl *w = e.getWeight("qkv.weight")) {
    // nn.MultiheadAttention's in_proj: rows [0, D) for the queries, [D, 3D)
    // for the memory's keys and values.
    Value packed = ctx.outInWeight(w),
          bias = ctx.weight(e.getWeight("qkv.bias"));
    auto rows = [&](Value t, int64_t offset, int64_t size) -> Value {
      return t ? attn::buildSlice(builder, where, t, 0, offset, size) : Value();
    };
    q = linear(input, rows(packed, 0, d), rows(bias, 0, d));
    if (!fromCache)
      kv = linear(memory, rows(packed, d, 2 * d), rows(bias, d, 2 * d));
  }
  if (kv) {
    // K then V, as PyTorch's packed in_proj rows after Q's.
    int64_t last =
        mlir::cast<mlir::RankedTensorType>(kv.getType()).getRank() - 1;
    k = attn::buildSlice(builder, where, kv, last, 0, d);
    v = attn::buildSlice(builder, where, kv, last, d, d);
  }
  if (fromCache) {
    k = ctx.state(keyState);
    v = ctx.state(e.getState("value"));
  } else if (keyState && ctx.getEntry() == Entry::prefill) {
    // Rows 0 .. T-1: the states' row dim is the memory's T, so they fill it.
    Value keys = ctx.state(keyState), values = ctx.state(e.getState("value"));
    for (auto [cache, rows] : {std::pair(keys, k), std::pair(values, v)})
      builder.create<attn::CacheWriteOp>(where, cache.getType(), cache, rows,
                                         Value(), mlir::IntegerAttr(),
                                         mlir::UnitAttr());
  }
  attn::SdpaOp sdpa = buildSdpa(ctx, e, q, k, v, Value(), /*dotScore=*/true);
  Value out = project(sdpa.getResult(), "out");
  ctx.setResults(e, {out, sdpa.getWeights()});
  return out;
}

/// `t` [batch..., S, heads * head_dim] rotated by attn.rope at positions
/// 0 .. S-1 with the call's rope arguments (`attention(q, k, v, rope =
/// ...)`, whose queries and keys share S).
static Value emitRope(EmitContext &ctx, const BuiltinExpr &e, Value t,
                      int64_t headDim) {
  mlir::OpBuilder &builder = ctx.getBuilder();
  mlir::Location where = ctx.loc(e.getLoc());
  auto type = mlir::cast<mlir::RankedTensorType>(t.getType());
  int64_t seq = type.getRank() - 2;
  Value positions = builder.create<attn::PositionsOp>(
      where,
      mlir::RankedTensorType::get({type.getDimSize(seq)}, builder.getI32Type()),
      t, builder.getI64IntegerAttr(seq), Value(), builder.getI64IntegerAttr(0));
  auto integer = [&](llvm::StringRef name) {
    const BuiltinAttr *given = e.getAttr(name);
    return given ? builder.getI64IntegerAttr(given->integer)
                 : mlir::IntegerAttr();
  };
  attn::RopeScalingAttr scaling;
  if (const BuiltinAttr *kind = e.getAttr("rope_scaling"))
    scaling = attn::RopeScalingAttr::get(
        builder.getContext(),
        *attn::symbolizeRopeScaling(llvm::StringRef(kind->enumerator)));
  const BuiltinAttr *theta = e.getAttr("rope_theta");
  return builder.create<attn::RopeOp>(
      where, type, t, positions, builder.getI64IntegerAttr(headDim),
      attn::RopeStyleAttr::get(builder.getContext(),
                               *attn::symbolizeRopeStyle(llvm::StringRef(
                                   e.getAttr("rope")->enumerator))),
      builder.getF32FloatAttr(theta ? float(theta->real)
                                    : attn::kDefaultRopeTheta),
      integer("rope_dims"), scaling, ctx.realAttr(e, "rope_factor"),
      ctx.realAttr(e, "rope_low_freq_factor"),
      ctx.realAttr(e, "rope_high_freq_factor"), integer("rope_original_max"));
}

/// attn.sdpa of tensors already projected, with Luong's general score as a
/// projection of the keys and Bahdanau's additive one as projections of both
/// and sdpa's score vector.
static Value emitAttention(EmitContext &ctx, const BuiltinExpr &e,
                           llvm::ArrayRef<Value> operands) {
  mlir::Location where = ctx.loc(e.getLoc());
  Value q = operands[0], k = operands[1], v = operands[2], scoreVector;
  auto project = [&](Value x, llvm::StringRef role) -> Value {
    const WeightDecl *w = e.getWeight((role + ".weight").str());
    Value matrix = ctx.outInWeight(w);
    return attn::buildLinear(ctx.getBuilder(), where, x, matrix,
                             ctx.weight(e.getWeight((role + ".bias").str())),
                             attn::WeightLayout::out_in);
  };
  if (e.getAttr("rope")) {
    int64_t headDim =
        mlir::cast<mlir::RankedTensorType>(q.getType()).getShape().back() /
        e.getAttr("heads")->integer;
    q = emitRope(ctx, e, q, headDim);
    k = emitRope(ctx, e, k, headDim);
  }
  llvm::StringRef score = e.getAttr("score")->enumerator;
  if (score == "general")
    k = project(k, "w");
  if (score == "additive") {
    q = project(q, "w_query");
    k = project(k, "w_key");
    // [1, A]; the nn.Linear's bias moves every score alike: no effect.
    scoreVector = ctx.outInWeight(e.getWeight("w_score.weight"));
  }
  attn::SdpaOp sdpa = buildSdpa(ctx, e, q, k, v, scoreVector, score == "dot");
  ctx.setResults(e, llvm::SmallVector<Value, 2>(sdpa->getResults()));
  return sdpa.getResult();
}

/// `args` and rope_dims, rope_scaling and its parameters.
static std::vector<NamedArg> withRopeExtras(std::vector<NamedArg> args) {
  for (NamedArg &arg : ropeExtraArgs())
    args.push_back(std::move(arg));
  return args;
}

void attnc::registerAttentionBuiltins(BuiltinRegistry &registry) {
  auto projection = NamedArg::modulePrefix;
  registry.add(
      {"self_attention", 1, 1, "self_attention(x)",
       withRopeExtras(
           {NamedArg::statePrefix("cache"), headsArg(), projection("q"),
            projection("k"), projection("v"), projection("qkv"), outArg(),
            maskArg(), scaleArg(), ropeArg(), ropeThetaArg(), softcapArg(),
            kvHeadsArg(), headDimArg(),
            NamedArg::choice("qkv_layout",
                             {{"stacked", "Q | K | V"},
                              {"per_head", "[heads, 3, head_dim], GPT-NeoX's "
                                           "query_key_value"}})}),
       checkSelfAttention, emitSelfAttention, checkWeightsResult});
  // `rope` is declared to explain why cross-attention has none.
  registry.add(
      {"cross_attention",
       2,
       2,
       "cross_attention(x, memory)",
       {NamedArg::statePrefix("cache"), headsArg(), projection("q"),
        projection("k"), projection("v"), projection("kv"), projection("qkv"),
        outArg(), maskArg(), scaleArg(), softcapArg(), ropeArg(), headDimArg()},
       checkCrossAttention,
       emitCrossAttention,
       checkWeightsResult});
  registry.add(
      {"attention", 3, 3, "attention(q, k, v)",
       withRopeExtras(
           {headsArg().byDefault(int64_t(1)), maskArg(), scaleArg(),
            NamedArg::choice("score",
                             {{"dot", "q . k"},
                              {"general", "Luong: q . W k"},
                              {"additive", "Bahdanau: v . tanh(Wq q + Wk k)"}})
                .byDefault("dot"),
            projection("w"), projection("w_query"), projection("w_key"),
            projection("w_score"), softcapArg(), kvHeadsArg(), ropeArg(),
            ropeThetaArg()}),
       checkAttention, emitAttention, checkWeightsResult});
}
