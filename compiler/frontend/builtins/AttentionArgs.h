//===- compiler/frontend/builtins/AttentionArgs.h - shared args -*- C++ -*-===//
//
// Part of attnc. The arguments the attention builtins share, checked once
// here (AttentionArgs.cpp) and in Masks.cpp: heads and kv_heads, scale and
// softcap, rotary embeddings, the output projection, a KV cache and the mask
// terms; and their emission as attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_BUILTINS_ATTENTIONARGS_H
#define ATTNC_COMPILER_FRONTEND_BUILTINS_ATTENTIONARGS_H

#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/EmitContext.h"

#include "dialects/attn/IR/AttnOps.h"

namespace attnc {

/// The `heads = H` of an attention: a positive divisor of d_model (when that
/// is known, >= 0), or 0 after reporting an error.
int64_t checkHeads(CheckContext &ctx, CallExpr &call, CallArgs &args,
                   int64_t modelDim);
/// `kv_heads = K` (grouped-query attention): K key/value heads shared by
/// heads / K query heads each. Returns K (`heads` when not given), or 0
/// after reporting an error.
int64_t checkKvHeads(CheckContext &ctx, CallArgs &args, int64_t heads);
/// Records `heads` as the call's first attribute, and `kvHeads` last when
/// it differs (grouped-query attention).
void recordHeads(BuiltinExpr &attn, int64_t heads, int64_t kvHeads);
/// `scale = X` (the factor of the scores in place of the default) and
/// `softcap = C` (scores become C * tanh(score / C), Gemma 2's
/// attn_logit_softcapping), recorded as the real attributes "scale" and
/// "softcap".
bool checkScoreArgs(CheckContext &ctx, CallArgs &args, BuiltinExpr &attn);
/// `rope = half | interleaved` and `rope_theta = X` (default 10000):
/// rotary embeddings of the queries and keys, recorded as the attributes
/// "rope" (an enumerator) and "rope_theta".
bool checkRope(CheckContext &ctx, CallArgs &args, BuiltinExpr &attn,
               int64_t headDim);
/// The required `out = P` of an attention, [d_model, d_model].
bool resolveOutProjection(CheckContext &ctx, CallExpr &call, CallArgs &args,
                          int64_t modelDim, BuiltinExpr &attn);
/// `cache = P`: the states `P.key` and `P.value`, `[B, L, features]` with the
/// input's batch dim and a capacity dim of their own.
bool resolveCache(CheckContext &ctx, Argument &arg, const Expr &x,
                  int64_t features, BuiltinExpr &attn);

/// `mask = TERM & TERM ...` of an attention of `query` [.., S, D] over keys
/// of the sequence extent `keys` (S for self-attention, the memory's T):
/// none, causal, padding(LENGTHS), window(W), window(LEFT, RIGHT), alibi,
/// or an f32 tensor added to the scores. Records the terms on `call` as
/// attributes (causal, window_left, window_right, alibi) and operands
/// (lengths, bias). In Masks.cpp.
bool resolveMask(CheckContext &ctx, ExprPtr &mask, BuiltinExpr &call,
                 const Shape &query, const Extent &keys, int64_t heads);
/// The mask terms resolveMask recorded on an attention.
mlir::attn::MaskAttr emitMaskAttr(EmitContext &ctx, const BuiltinExpr &e);

/// The call's `kv_heads`, or null when every head has its keys.
mlir::IntegerAttr emitKvHeadsAttr(EmitContext &ctx, const BuiltinExpr &e);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_BUILTINS_ATTENTIONARGS_H
