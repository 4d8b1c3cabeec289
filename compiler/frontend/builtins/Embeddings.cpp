//===- compiler/frontend/builtins/Embeddings.cpp - tables and positions ---===//
//
// Part of attnc. `embedding(ids, P)` (rows of a table), `positions(S)`
// (0 .. S-1) and `sinusoidal(p, D)` (the fixed encoding of positions).
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/EmitContext.h"

#include "dialects/attn/IR/AttnOps.h"

#include <limits>

using namespace attnc;

/// `embedding(ids, W)`: rows of the [V, D] table W (or P.weight) picked by
/// the i32 ids; the result is the ids' shape with D appended. An i8 or i4
/// table is dequantized with its scales W_scale.
static ExprPtr checkEmbedding(CheckContext &ctx, CallExpr &call,
                              CallArgs &args) {
  ExprPtr ids = ctx.checkValue(std::move(args.positional[0]->value));
  Expr &tableArg = *args.positional[1]->value;
  WeightDecl *table = ctx.lookupTableArg(tableArg, "embedding");
  if (!ids || !table)
    return nullptr;
  if (ids->elementType != ElementType::i32) {
    ctx.errorAt(*ids, "'embedding' takes i32 ids, but this is f32" +
                          shapeToString(ids->shape));
    return nullptr;
  }
  const Shape &t = table->type.shape;
  if (t.size() != 2) {
    ctx.errorAt(tableArg,
                "the table of 'embedding' must be 2-D [rows, features], "
                "but '" +
                    table->name + "' is " + shapeToString(t));
    return nullptr;
  }
  if (table->hasLayoutClause) {
    ctx.errorAt(tableArg, "an embedding table is [rows, features]; drop the "
                          "layout clause of '" +
                              table->name + "'");
    return nullptr;
  }
  // A quantized table is scaled as the head that may share it: per row (an
  // output of `linear(x, W)`), or per group of features of a row for i4.
  WeightDecl *scales = nullptr;
  if ((table->type.elementType == ElementType::i8 ||
       table->type.elementType == ElementType::i4) &&
      !(scales = ctx.quantizationScales(*table, tableArg, t[0].size)))
    return nullptr;
  auto embed = std::make_unique<BuiltinExpr>("embedding", call.getRange());
  embed->shape = ids->shape;
  embed->shape.push_back(t[1]);
  embed->operands.push_back(std::move(ids));
  embed->weights.push_back({"table", table});
  if (scales)
    embed->weights.push_back({"scales", scales});
  return embed;
}

static mlir::Value emitEmbedding(EmitContext &ctx, const BuiltinExpr &e,
                                 llvm::ArrayRef<mlir::Value> operands) {
  // Weights are created in the order they are read (function arguments are
  // evaluated in no set order): the library lists them so.
  mlir::Value table = ctx.weight(e.getWeight("table"));
  mlir::Value scales = ctx.weight(e.getWeight("scales"));
  return ctx.getBuilder().create<mlir::attn::EmbeddingOp>(
      ctx.loc(e.getLoc()), ctx.tensorType(e.shape, e.elementType), operands[0],
      table, scales);
}

/// `positions(S, start = A)`: A .. A+S-1 as i32[S], as `torch.arange(A,
/// A + S)` (A defaults to 0); i32[B, S] in
/// a model with KV caches. The extent is taken from an input that has dim S
/// (inputs are what bind dims).
static ExprPtr checkPositions(CheckContext &ctx, CallExpr &call,
                              CallArgs &args) {
  Expr &arg = *args.positional[0]->value;
  if (int64_t start = args.integer("start");
      start < 0 || start > std::numeric_limits<int32_t>::max()) {
    ctx.errorAt(*args.get("start")->value,
                "'start' must be a position from 0 to 2^31 - 1, but it is " +
                    std::to_string(start));
    return nullptr;
  }
  auto *name = llvm::dyn_cast<NameExpr>(&arg);
  DimDecl *dim = name ? ctx.getDim(name->name) : nullptr;
  if (!dim) {
    std::string suggestion =
        name ? didYouMean(closestName(name->name, ctx.getDims().keys())) : "";
    ctx.errorAt(arg, "the argument of 'positions' must be a declared dim, "
                     "such as 'positions(S)'" +
                         suggestion);
    return nullptr;
  }
  for (const InputDecl *input : ctx.getModel().getInputs())
    for (auto [d, extent] : llvm::enumerate(input->type.shape)) {
      if (extent.name != dim->name)
        continue;
      auto positions =
          std::make_unique<BuiltinExpr>("positions", call.getRange());
      positions->elementType = ElementType::i32;
      // A decoder's sequences each decode from their own position, so its
      // positions are per sequence: the input's dims up to S ([B, S]).
      bool perSequence = !ctx.getModel().states.empty();
      positions->shape.assign(input->type.shape.begin() + (perSequence ? 0 : d),
                              input->type.shape.begin() + d + 1);
      // The input lends its extent only; its data is never read.
      auto ref =
          std::make_unique<ValueRefExpr>(input->name, input, arg.getRange());
      ref->elementType = input->type.elementType;
      ref->shape = input->type.shape;
      positions->operands.push_back(std::move(ref));
      positions->attrs.push_back({"dim", BuiltinAttr::getInteger(d)});
      if (int64_t start = args.integer("start"))
        positions->attrs.push_back({"start", BuiltinAttr::getInteger(start)});
      return positions;
    }
  ctx.errorAt(arg,
              "no input has dim '" + dim->name +
                  "', so its extent is unknown when the model runs; "
                  "declare an input with it, such as 'input ids : i32[B, " +
                  dim->name + "]'");
  return nullptr;
}

/// attn.positions of the input lending the extent, plus in a decode the
/// position the new tokens start at.
static mlir::Value emitPositions(EmitContext &ctx, const BuiltinExpr &e,
                                 llvm::ArrayRef<mlir::Value> operands) {
  llvm::SmallVector<mlir::Value, 2> all(operands);
  if (mlir::Value position = ctx.getPosition())
    all.push_back(position);
  return emitNamedOp(ctx, e, all);
}

/// `sinusoidal(p, D)`: the encoding of Vaswani et al. of i32 positions of
/// any shape, with D (even) features appended.
static ExprPtr checkSinusoidal(CheckContext &ctx, CallExpr &call,
                               CallArgs &args) {
  ExprPtr positions = ctx.checkValue(std::move(args.positional[0]->value));
  Expr &featuresArg = *args.positional[1]->value;
  auto *number = llvm::dyn_cast<NumberExpr>(&featuresArg);
  // The frequencies are a table in the kernel: a bound keeps it small.
  constexpr int64_t kMaxFeatures = int64_t(1) << 20;
  bool validFeatures = number && number->isInteger && number->intValue > 0 &&
                       number->intValue <= kMaxFeatures &&
                       number->intValue % 2 == 0;
  if (!validFeatures)
    ctx.errorAt(featuresArg, "the feature count of 'sinusoidal' must be an "
                             "even integer in 2.." +
                                 llvm::Twine(kMaxFeatures) + ", such as 512");
  if (!positions || !validFeatures)
    return nullptr;
  if (positions->elementType != ElementType::i32) {
    ctx.errorAt(*positions, "'sinusoidal' takes i32 positions, such as "
                            "'positions(S)', but this is f32" +
                                shapeToString(positions->shape));
    return nullptr;
  }
  auto encoding = std::make_unique<BuiltinExpr>("sinusoidal", call.getRange());
  encoding->shape = positions->shape;
  encoding->shape.push_back(Extent::fixed(number->intValue));
  encoding->operands.push_back(std::move(positions));
  return encoding;
}

void attnc::registerEmbeddingBuiltins(BuiltinRegistry &registry) {
  registry.add({"embedding",
                2,
                2,
                "embedding(ids, P) or embedding(ids, W)",
                {},
                checkEmbedding,
                emitEmbedding});
  registry.add({"positions",
                1,
                1,
                "positions(S) with S a declared dim",
                {NamedArg::integer("start", "2").byDefault(int64_t(0))},
                checkPositions,
                emitPositions});
  registry.add({"sinusoidal",
                2,
                2,
                "sinusoidal(positions, D) with D even",
                {},
                checkSinusoidal,
                emitNamedOp});
}
