//===- compiler/frontend/builtins/PositionBias.cpp - relative_bias --------===//
//
// Part of attnc. `relative_bias(x, P)`: T5's bucketed relative position
// bias, an additive mask `[B, heads, S, S]` for the self-attention over `x`.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/EmitContext.h"

#include "dialects/attn/IR/AttnOps.h"

using namespace attnc;

/// `relative_bias(x, P, max_distance = 128, bidirectional = true)`: the
/// `[num_buckets, heads]` table P.weight (or W) read at the bucket of each
/// key's distance from each query of `x`'s sequence.
static ExprPtr checkRelativeBias(CheckContext &ctx, CallExpr &call,
                                 CallArgs &args) {
  ExprPtr x = ctx.checkActivationInput(*args.positional[0], "relative_bias");
  Expr &tableArg = *args.positional[1]->value;
  WeightDecl *table = ctx.lookupTableArg(tableArg, "relative_bias");
  if (!x || !table)
    return nullptr;
  if (x->shape.size() != 3) {
    ctx.errorAt(*x, "'relative_bias' takes the attention's input [B, S, "
                    "features], but this is f32" +
                        shapeToString(x->shape));
    return nullptr;
  }
  const Shape &t = table->type.shape;
  bool bidirectional = args.choice("bidirectional") == "true";
  int64_t perDirection =
      t.size() == 2 ? t[0].size / (bidirectional ? 2 : 1) : 0;
  if (t.size() != 2 || table->hasLayoutClause ||
      (bidirectional && t[0].size % 2) || perDirection < 2) {
    ctx.errorAt(tableArg,
                "the table of 'relative_bias' is [num_buckets, heads] "
                "(T5's relative_attention_bias) with at least 2 buckets per "
                "direction, an even count when bidirectional, and no layout "
                "clause, but '" +
                    table->name + "' is " + shapeToString(t));
    return nullptr;
  }
  int64_t maxDistance = args.integer("max_distance");
  if (maxDistance <= perDirection / 2) {
    ctx.errorAt(*args.get("max_distance")->value,
                "max_distance must exceed the " +
                    std::to_string(perDirection / 2) +
                    " distances the buckets hold exactly (half of the " +
                    std::to_string(perDirection) + " buckets per direction)");
    return nullptr;
  }
  auto bias = std::make_unique<BuiltinExpr>("relative_bias", call.getRange());
  bias->shape = {x->shape[0], t[1], x->shape[1], x->shape[1]};
  bias->operands.push_back(std::move(x));
  bias->weights.push_back({"table", table});
  bias->attrs.push_back({"max_distance", BuiltinAttr::getInteger(maxDistance)});
  bias->attrs.push_back(
      {"bidirectional", BuiltinAttr::getInteger(bidirectional)});
  return bias;
}

static mlir::Value emitRelativeBias(EmitContext &ctx, const BuiltinExpr &e,
                                    llvm::ArrayRef<mlir::Value> operands) {
  return ctx.getBuilder().create<mlir::attn::RelativeBiasOp>(
      ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType), operands[0],
      ctx.weight(e.getWeight("table")), /*query_offsets=*/mlir::Value(),
      /*keys=*/mlir::Value(), e.getAttr("max_distance")->integer,
      e.getAttr("bidirectional")->integer != 0);
}

void attnc::registerPositionBiasBuiltins(BuiltinRegistry &registry) {
  // T5's defaults: relative_attention_max_distance 128, and an encoder's
  // keys on both sides of the query.
  registry.add(
      {"relative_bias",
       2,
       2,
       "relative_bias(x, P) with P.weight [num_buckets, heads]",
       {NamedArg::positiveInteger("max_distance", "128")
            .byDefault(int64_t(128)),
        NamedArg::choice("bidirectional",
                         {{"true", "an encoder's keys on both sides of the "
                                   "query"},
                          {"false", "a decoder's keys up to the query"}})
            .byDefault("true")},
       checkRelativeBias,
       emitRelativeBias});
}
