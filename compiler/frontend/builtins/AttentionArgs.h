//===- compiler/frontend/builtins/AttentionArgs.h - shared args -*- C++ -*-===//
//
// Part of attnc. The arguments the attention builtins share, declared and
// checked once here (AttentionArgs.cpp) and in Masks.cpp: heads and
// kv_heads, scale and softcap, rotary embeddings, the output projection, a
// KV cache and the mask terms; and their emission as attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_BUILTINS_ATTENTIONARGS_H
#define ATTNC_COMPILER_FRONTEND_BUILTINS_ATTENTIONARGS_H

#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/EmitContext.h"

#include "dialects/attn/IR/AttnOps.h"

namespace attnc {

/// The declarations of the arguments below, for the builtins' signatures.
/// `heads = N`, required.
NamedArg headsArg();
/// `kv_heads = N`; left out, every query head has its own keys.
NamedArg kvHeadsArg();
/// `scale = X` (the factor of the scores in place of the default) and
/// `softcap = X` (scores become X * tanh(score / X), Gemma 2's
/// attn_logit_softcapping).
NamedArg scaleArg();
NamedArg softcapArg();
/// `rope = half | interleaved` and `rope_theta = X` (left out, the op's
/// default 10000): rotary embeddings of the queries and keys.
NamedArg ropeArg();
NamedArg ropeThetaArg();
/// `rope_dims = N` (partial rotary) and the scaling of the frequencies:
/// `rope_scaling = linear | llama3`, `rope_factor`, `rope_low_freq_factor`,
/// `rope_high_freq_factor`, `rope_original_max` (Hugging Face's
/// rope_parameters), in that order.
std::vector<NamedArg> ropeExtraArgs();
/// `head_dim = N`: features per head, when heads * head_dim is not d_model.
NamedArg headDimArg();
/// `out = P`, the output projection, required.
NamedArg outArg();
/// `mask = M`, resolved by resolveMask.
NamedArg maskArg();

/// The `heads` of an attention: a divisor of d_model (when that is known,
/// >= 0, and no `head_dim` is given), or 0 after reporting an error.
int64_t checkHeads(CheckContext &ctx, CallArgs &args, int64_t modelDim);
/// The features per head: `head_dim = N` when given (recorded on `attn`),
/// else modelDim / heads (-1 when either is unknown).
int64_t checkHeadDim(CallArgs &args, BuiltinExpr &attn, int64_t modelDim,
                     int64_t heads);
/// `kv_heads = K` (grouped-query attention): K key/value heads shared by
/// heads / K query heads each. Returns K (`heads` when not given), or 0
/// after reporting an error.
int64_t checkKvHeads(CheckContext &ctx, CallArgs &args, int64_t heads);
/// Records `heads` as the call's first attribute, and `kvHeads` last when
/// it differs (grouped-query attention).
void recordHeads(BuiltinExpr &attn, int64_t heads, int64_t kvHeads);
/// Records the given `scale` and `softcap` as the real attributes of those
/// names.
void recordScoreArgs(CallArgs &args, BuiltinExpr &attn);
/// Records the given `rope` (an enumerator), `rope_theta`, `rope_dims` and
/// the scaling as attributes; false after an error (an odd head dim, odd or
/// too many rope_dims, a parameter without its rope or its scaling type, a
/// llama3 scaling without all of its parameters), each at its argument.
bool checkRope(CheckContext &ctx, CallArgs &args, BuiltinExpr &attn,
               int64_t headDim);
/// `cache = P`: the states `P.key` and `P.value`, `[B, L, features]` with the
/// input's batch dim and a capacity dim of their own; for a cross-attention
/// (`memory` given, `[B, T, Dm]`) `[B, T, features]`, the memory's keys and
/// values, one row per memory token. i8 caches (a self-attention's, of
/// `kvHeads` key/value heads) need the f32 states `P.key_scale` and
/// `P.value_scale`, `[B, L, kvHeads]`.
bool resolveCache(CheckContext &ctx, Argument &arg, const Expr &x,
                  int64_t features, BuiltinExpr &attn, int64_t kvHeads,
                  const Expr *memory = nullptr);

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
