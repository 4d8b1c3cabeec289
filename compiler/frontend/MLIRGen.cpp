//===- compiler/frontend/MLIRGen.cpp - AST -> attn dialect ----------------===//
#include "compiler/frontend/MLIRGen.h"

#include "compiler/passes/Builders.h"
#include "dialects/attn/Analysis/DimSymbols.h"
#include "dialects/attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/DenseMap.h"
#include <cmath>

using namespace mlir;
namespace attn = mlir::attn;

namespace attnc {
namespace {

/// Which entry point a function computes. A model with states (KV caches)
/// has three: "run" ignores the caches, "prefill" also writes the keys and
/// values into them from row 0, "decode" writes them at a position and
/// attends over the caches.
enum class Entry { run, prefill, decode };

class MLIRGenerator {
public:
  MLIRGenerator(MLIRContext &context, const llvm::SourceMgr &sourceMgr)
      : builder(&context), sourceMgr(sourceMgr) {}

  OwningOpRef<ModuleOp> generate(const ModelAST &model);

private:
  void generateFunction(const ModelAST &model, ModuleOp module, StringRef name,
                        Entry entry);

  Location loc(llvm::SMLoc where) {
    unsigned id = sourceMgr.FindBufferContainingLoc(where);
    if (!id)
      return builder.getUnknownLoc();
    auto [line, col] = sourceMgr.getLineAndColumn(where, id);
    return FileLineColLoc::get(
        builder.getContext(),
        sourceMgr.getMemoryBuffer(id)->getBufferIdentifier(), line, col);
  }

  RankedTensorType tensorType(ArrayRef<Extent> shape, ElementType element) {
    SmallVector<int64_t> dims;
    for (const Extent &e : shape)
      dims.push_back(e.isSymbolic() ? ShapedType::kDynamic : e.size);
    Type type;
    switch (element) {
    case ElementType::f32:
      type = builder.getF32Type();
      break;
    case ElementType::i32:
      type = builder.getI32Type();
      break;
    case ElementType::bf16:
      type = builder.getBF16Type();
      break;
    case ElementType::f16:
      type = builder.getF16Type();
      break;
    }
    return RankedTensorType::get(dims, type);
  }

  /// The weight as declared, created once at its declaration's location.
  Value weight(const WeightDecl *decl) {
    if (!decl)
      return {};
    Value &value = weights[decl];
    if (!value)
      value = builder.create<attn::WeightOp>(
          loc(decl->loc.Start),
          tensorType(decl->type.shape, decl->type.elementType),
          builder.getStringAttr(decl->name));
    return value;
  }

  /// A projection weight in `[out, in]` order, as attn.self_attention takes.
  Value outInWeight(const WeightDecl *decl) {
    Value w = weight(decl);
    if (decl->layout == WeightLayout::outIn)
      return w;
    auto type = cast<RankedTensorType>(w.getType());
    auto swapped = RankedTensorType::get(
        {type.getDimSize(1), type.getDimSize(0)}, type.getElementType());
    return builder.create<attn::TransposeOp>(w.getLoc(), swapped, w);
  }

  Value expr(const Expr &e);
  Value builtin(const BuiltinExpr &e);
  Value selfAttention(const BuiltinExpr &e, Value input);
  Value crossAttention(const BuiltinExpr &e, Value input, Value memory);
  Value attention(const BuiltinExpr &e, ArrayRef<Value> qkv);
  attn::SdpaOp buildSdpa(const BuiltinExpr &e, Value q, Value k, Value v,
                         Value scoreVector, bool dotScore);
  FloatAttr scaleAttr(const BuiltinExpr &e) { return realAttr(e, "scale"); }
  /// The call's real argument `name` as an f32 attribute, or null.
  FloatAttr realAttr(const BuiltinExpr &e, StringRef name) {
    const BuiltinAttr *real = e.getAttr(name);
    return real ? builder.getF32FloatAttr(real->real) : FloatAttr();
  }
  /// The call's `kv_heads`, or null when every head has its keys.
  IntegerAttr kvHeadsAttr(const BuiltinExpr &e) {
    const BuiltinAttr *kv = e.getAttr("kv_heads");
    return kv ? builder.getI64IntegerAttr(kv->integer) : IntegerAttr();
  }
  attn::MaskAttr maskAttr(const BuiltinExpr &e);

  OpBuilder builder;
  const llvm::SourceMgr &sourceMgr;
  Entry entry = Entry::run;
  /// The decode position ([B], i32) and the states, as arguments of the
  /// function being generated.
  Value position;
  llvm::DenseMap<const StateDecl *, Value> states;
  llvm::DenseMap<const WeightDecl *, Value> weights;
  llvm::DenseMap<const ValueDecl *, Value> values;
  /// The results of each call with more than one.
  llvm::DenseMap<const BuiltinExpr *, SmallVector<Value, 2>> calls;
};

/// The mask terms Sema recorded on an attention.
attn::MaskAttr MLIRGenerator::maskAttr(const BuiltinExpr &e) {
  auto integer = [&](StringRef name, int64_t otherwise) {
    const BuiltinAttr *attr = e.getAttr(name);
    return attr ? attr->integer : otherwise;
  };
  return attn::MaskAttr::get(builder.getContext(), integer("causal", 0) != 0,
                             /*offset=*/0, integer("window_left", -1),
                             integer("window_right", -1),
                             integer("alibi", 0) != 0);
}

Value MLIRGenerator::selfAttention(const BuiltinExpr &e, Value input) {
  auto project = [&](StringRef role) -> std::pair<Value, Value> {
    const WeightDecl *w = e.getWeight((role + ".weight").str());
    if (!w)
      return {};
    return {outInWeight(w), weight(e.getWeight((role + ".bias").str()))};
  };
  auto [wq, bq] = project("q");
  auto [wk, bk] = project("k");
  auto [wv, bv] = project("v");
  auto [wqkv, bqkv] = project("qkv");
  auto [wo, bo] = project("out");
  auto operand = [&](StringRef role) -> Value {
    const Expr *x = e.getNamedOperand(role);
    return x ? expr(*x) : Value();
  };
  Value lengths = operand("lengths"), bias = operand("bias");
  Type weights;
  if (e.getAttr("weights")) {
    // [batch..., heads, S, S]
    auto x = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> shape(x.getShape().drop_back(2));
    int64_t s = x.getDimSize(x.getRank() - 2);
    shape.append({e.getAttr("heads")->integer, s, s});
    weights = RankedTensorType::get(shape, x.getElementType());
  }
  attn::RopeStyleAttr rope;
  if (const BuiltinAttr *style = e.getAttr("rope"))
    rope = attn::RopeStyleAttr::get(
        builder.getContext(),
        *attn::symbolizeRopeStyle(StringRef(style->enumerator)));
  Value keyCache, valueCache, at;
  if (entry != Entry::run && e.getState("key")) {
    keyCache = states.lookup(e.getState("key"));
    valueCache = states.lookup(e.getState("value"));
    at = position;
  }
  auto op = builder.create<attn::SelfAttentionOp>(
      loc(e.getLoc()), input.getType(), weights, input, wq, bq, wk, bk, wv, bv,
      wqkv, bqkv, wo, bo, lengths, bias, keyCache, valueCache, at,
      builder.getI64IntegerAttr(e.getAttr("heads")->integer), maskAttr(e),
      scaleAttr(e), kvHeadsAttr(e), rope, realAttr(e, "rope_theta"),
      realAttr(e, "softcap"));
  calls[&e] = SmallVector<Value, 2>(op->getResults());
  return op.getResult();
}

/// attn.sdpa of projected q, k, v with the call's heads, mask, key lengths,
/// additive bias and weights result; the scale is the call's `scale`, or
/// 1/sqrt(head dim) for dot-product scores and 1 for the others.
attn::SdpaOp MLIRGenerator::buildSdpa(const BuiltinExpr &e, Value q, Value k,
                                      Value v, Value scoreVector,
                                      bool dotScore) {
  auto operand = [&](StringRef role) -> Value {
    const Expr *x = e.getNamedOperand(role);
    return x ? expr(*x) : Value();
  };
  int64_t heads = e.getAttr("heads")->integer;
  auto queries = cast<RankedTensorType>(q.getType());
  auto values = cast<RankedTensorType>(v.getType());
  float scale = 1.0f;
  if (const BuiltinAttr *given = e.getAttr("scale"))
    scale = float(given->real);
  else if (dotScore)
    scale = 1.0f / std::sqrt(float(queries.getShape().back() / heads));
  Type weights;
  if (e.getAttr("weights")) {
    // [batch..., heads, S, T]
    SmallVector<int64_t> shape(queries.getShape().drop_back(2));
    shape.append({heads, queries.getDimSize(queries.getRank() - 2),
                  values.getDimSize(values.getRank() - 2)});
    weights = RankedTensorType::get(shape, queries.getElementType());
  }
  IntegerAttr kvHeads = kvHeadsAttr(e);
  int64_t valueHeads = kvHeads ? kvHeads.getInt() : heads;
  SmallVector<int64_t> result(queries.getShape());
  result.back() = heads * (values.getShape().back() / valueHeads);
  return builder.create<attn::SdpaOp>(
      loc(e.getLoc()), RankedTensorType::get(result, queries.getElementType()),
      weights, q, k, v, operand("lengths"), operand("bias"), scoreVector,
      /*query_offsets=*/Value(), builder.getI64IntegerAttr(heads), kvHeads,
      maskAttr(e), builder.getF32FloatAttr(scale), realAttr(e, "softcap"));
}

/// Queries projected from `input`, keys and values from `memory`, then
/// attn.sdpa and the output projection: cross-attention has no op of its
/// own, its parts are those of a decomposed self-attention.
Value MLIRGenerator::crossAttention(const BuiltinExpr &e, Value input,
                                    Value memory) {
  Location where = loc(e.getLoc());
  int64_t d = cast<RankedTensorType>(input.getType()).getShape().back();
  auto linear = [&](Value x, Value w, Value b) {
    return attn::buildLinear(builder, where, x, w, b,
                             attn::WeightLayout::out_in);
  };
  auto project = [&](Value x, StringRef role) -> Value {
    const WeightDecl *w = e.getWeight((role + ".weight").str());
    if (!w)
      return {};
    Value matrix = outInWeight(w);
    return linear(x, matrix, weight(e.getWeight((role + ".bias").str())));
  };
  Value q = project(input, "q");
  Value kv = project(memory, "kv");
  Value k = project(memory, "k"), v = project(memory, "v");
  if (const WeightDecl *w = e.getWeight("qkv.weight")) {
    // nn.MultiheadAttention's in_proj: rows [0, D) for the queries, [D, 3D)
    // for the memory's keys and values.
    Value packed = outInWeight(w), bias = weight(e.getWeight("qkv.bias"));
    auto rows = [&](Value t, int64_t offset, int64_t size) -> Value {
      return t ? attn::buildSlice(builder, where, t, 0, offset, size) : Value();
    };
    q = linear(input, rows(packed, 0, d), rows(bias, 0, d));
    kv = linear(memory, rows(packed, d, 2 * d), rows(bias, d, 2 * d));
  }
  if (kv) {
    // K then V, as PyTorch's packed in_proj rows after Q's.
    int64_t last = cast<RankedTensorType>(kv.getType()).getRank() - 1;
    k = attn::buildSlice(builder, where, kv, last, 0, d);
    v = attn::buildSlice(builder, where, kv, last, d, d);
  }
  attn::SdpaOp sdpa = buildSdpa(e, q, k, v, Value(), /*dotScore=*/true);
  Value out = project(sdpa.getResult(), "out");
  calls[&e] = {out, sdpa.getWeights()};
  return out;
}

/// attn.sdpa of tensors already projected, with Luong's general score as a
/// projection of the keys and Bahdanau's additive one as projections of both
/// and sdpa's score vector.
Value MLIRGenerator::attention(const BuiltinExpr &e, ArrayRef<Value> qkv) {
  Location where = loc(e.getLoc());
  Value q = qkv[0], k = qkv[1], v = qkv[2], scoreVector;
  auto project = [&](Value x, StringRef role) -> Value {
    const WeightDecl *w = e.getWeight((role + ".weight").str());
    Value matrix = outInWeight(w);
    return attn::buildLinear(builder, where, x, matrix,
                             weight(e.getWeight((role + ".bias").str())),
                             attn::WeightLayout::out_in);
  };
  StringRef score = e.getAttr("score")->enumerator;
  if (score == "general")
    k = project(k, "w");
  if (score == "additive") {
    q = project(q, "w_query");
    k = project(k, "w_key");
    // [1, A]; the nn.Linear's bias moves every score alike: no effect.
    scoreVector = outInWeight(e.getWeight("w_score.weight"));
  }
  attn::SdpaOp sdpa = buildSdpa(e, q, k, v, scoreVector, score == "dot");
  calls[&e] = SmallVector<Value, 2>(sdpa->getResults());
  return sdpa.getResult();
}

Value MLIRGenerator::builtin(const BuiltinExpr &e) {
  Location where = loc(e.getLoc());
  RankedTensorType type = tensorType(e.shape, e.elementType);
  SmallVector<Value> operands;
  for (const ExprPtr &operand : e.operands)
    operands.push_back(expr(*operand));
  if (e.builtin == "linear") {
    const WeightDecl *w = e.getWeight("weight");
    auto layout = w->layout == WeightLayout::outIn ? attn::WeightLayout::out_in
                                                   : attn::WeightLayout::in_out;
    // Weights are created in the order they are read (function arguments
    // are evaluated in no set order): the library lists them so.
    Value matrix = weight(w);
    return builder.create<attn::LinearOp>(
        where, type, operands[0], matrix, weight(e.getWeight("bias")),
        attn::WeightLayoutAttr::get(builder.getContext(), layout));
  }
  if (e.builtin == "layer_norm") {
    Value gamma = weight(e.getWeight("gamma"));
    return builder.create<attn::LayerNormOp>(
        where, type, operands[0], gamma, weight(e.getWeight("beta")),
        builder.getF32FloatAttr(e.getAttr("eps")->real));
  }
  if (e.builtin == "rms_norm")
    return builder.create<attn::RmsNormOp>(
        where, type, operands[0], weight(e.getWeight("gamma")),
        builder.getF32FloatAttr(e.getAttr("eps")->real),
        builder.getF32FloatAttr(e.getAttr("offset")->real));
  if (e.builtin == "self_attention")
    return selfAttention(e, operands[0]);
  if (e.builtin == "cross_attention")
    return crossAttention(e, operands[0], operands[1]);
  if (e.builtin == "attention")
    return attention(e, operands);
  if (e.builtin == "embedding")
    return builder.create<attn::EmbeddingOp>(where, type, operands[0],
                                             weight(e.getWeight("table")));
  // Everything else (operators, `scale`, `positions`, the dialect's
  // functions of one tensor) is the op of the same name, its constant
  // arguments attributes of the same names: integers i64, reals f32.
  OperationState state(where, "attn." + e.builtin);
  state.addOperands(operands);
  if (e.builtin == "positions" && position)
    state.addOperands(position); // the decode's offset
  state.addTypes(type);
  for (const auto &[name, attr] : e.attrs) {
    assert(attr.kind != BuiltinAttr::Kind::Enum &&
           "enumerators are resolved by the builtins that take them");
    state.addAttribute(name,
                       attr.kind == BuiltinAttr::Kind::Integer
                           ? Attribute(builder.getI64IntegerAttr(attr.integer))
                           : builder.getF32FloatAttr(attr.real));
  }
  return builder.create(state)->getResult(0);
}

Value MLIRGenerator::expr(const Expr &e) {
  if (const auto *ref = dyn_cast<ValueRefExpr>(&e))
    return values.lookup(ref->decl);
  if (const auto *call = dyn_cast<BuiltinExpr>(&e))
    return builtin(*call);
  llvm_unreachable("unresolved expression after the semantic check");
}

OwningOpRef<ModuleOp> MLIRGenerator::generate(const ModelAST &model) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc(model.nameLoc.Start));
  generateFunction(model, *module, model.name, Entry::run);
  if (!model.states.empty()) {
    generateFunction(model, *module, "prefill", Entry::prefill);
    generateFunction(model, *module, "decode", Entry::decode);
  }
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

void MLIRGenerator::generateFunction(const ModelAST &model, ModuleOp module,
                                     StringRef name, Entry kind) {
  entry = kind;
  values.clear();
  calls.clear();
  weights.clear();
  states.clear();
  position = {};
  auto symbolNames = [&](ArrayRef<Extent> shape) {
    SmallVector<Attribute> names;
    for (const Extent &e : shape)
      if (e.isSymbolic())
        names.push_back(builder.getStringAttr(e.dim ? e.dim->name : e.name));
    return builder.getArrayAttr(names);
  };
  // Arguments: the inputs, then for a decode the position, then the states.
  SmallVector<Type> argTypes;
  SmallVector<ArrayAttr> argDims;
  SmallVector<std::pair<StringRef, StringAttr>> argNames;
  for (const InputDecl *in : model.getInputs()) {
    argTypes.push_back(tensorType(in->shape, in->elementType));
    argDims.push_back(symbolNames(in->shape));
    argNames.push_back({"attn.name", builder.getStringAttr(in->name)});
  }
  if (kind != Entry::run) {
    if (kind == Entry::decode) {
      // [B]: the tokens already in the caches (one value for the batch).
      ArrayRef<Extent> batch(model.states.front()->type.shape.data(), 1);
      argTypes.push_back(tensorType(batch, ElementType::i32));
      argDims.push_back(symbolNames(batch));
      argNames.push_back({"attn.name", builder.getStringAttr("position")});
    }
    for (const auto &state : model.states) {
      argTypes.push_back(tensorType(state->type.shape, ElementType::f32));
      argDims.push_back(symbolNames(state->type.shape));
      argNames.push_back(
          {attn::kStateAttr, builder.getStringAttr(state->name)});
    }
  }
  builder.setInsertionPointToEnd(module.getBody());
  auto func = builder.create<func::FuncOp>(
      loc(model.nameLoc.Start), name, builder.getFunctionType(argTypes, {}));

  SmallVector<Attribute> symbols;
  for (const auto &dim : model.dims)
    symbols.push_back(builder.getArrayAttr(
        {builder.getStringAttr(dim->name),
         builder.getI64IntegerAttr(dim->bound.value_or(0))}));
  func->setAttr(attn::kSymbolsAttr, builder.getArrayAttr(symbols));
  func->setAttr("attn.model_name", builder.getStringAttr(model.name));
  if (kind != Entry::run)
    func->setAttr(attn::kEntryAttr, builder.getStringAttr(name));

  Block *block = func.addEntryBlock();
  builder.setInsertionPointToStart(block);
  for (unsigned i = 0; i < argTypes.size(); ++i) {
    func.setArgAttr(i, attn::kDimSymbolsAttr, argDims[i]);
    func.setArgAttr(i, argNames[i].first, argNames[i].second);
  }
  unsigned argIndex = 0;
  for (const InputDecl *in : model.getInputs())
    values[in] = block->getArgument(argIndex++);
  if (kind == Entry::decode)
    position = block->getArgument(argIndex++);
  if (kind != Entry::run)
    for (const auto &state : model.states)
      states[state.get()] = block->getArgument(argIndex++);

  SmallVector<Value> results;
  SmallVector<Attribute> resultNames;
  for (const auto &decl : model.body) {
    if (auto *assign = dyn_cast<AssignStmt>(decl.get())) {
      values[assign] = expr(*assign->value);
    } else if (auto *result = dyn_cast<ResultDecl>(decl.get())) {
      auto *call = cast<BuiltinExpr>(result->of->value.get());
      values[result] = calls.lookup(call)[result->index];
    } else if (auto *out = dyn_cast<OutputStmt>(decl.get())) {
      Value v = expr(*out->value);
      values[out] = v;
      results.push_back(v);
      resultNames.push_back(builder.getStringAttr(out->name));
    }
  }
  builder.create<func::ReturnOp>(loc(model.range.End), results);
  func.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, resultName] : llvm::enumerate(resultNames))
    func.setResultAttr(i, "attn.name", resultName);
}

} // namespace

std::vector<std::string> getDialectFunctions(MLIRContext &context) {
  context.loadDialect<attn::AttnDialect>();
  std::vector<std::string> names;
  for (RegisteredOperationName op : context.getRegisteredOperations())
    if (auto *fn = op.getInterface<attn::BuiltinFunctionOpInterface>())
      names.push_back(fn->getBuiltinName().str());
  return names;
}

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const ModelAST &model,
                              const llvm::SourceMgr &sourceMgr) {
  context.loadDialect<attn::AttnDialect, func::FuncDialect>();
  return MLIRGenerator(context, sourceMgr).generate(model);
}

} // namespace attnc
