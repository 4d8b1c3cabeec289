//===- compiler/frontend/MLIRGen.cpp - AST -> attn dialect ----------------===//
#include "compiler/frontend/MLIRGen.h"

#include "compiler/frontend/EmitContext.h"
#include "dialects/attn/Analysis/DimSymbols.h"
#include "dialects/attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
namespace attn = mlir::attn;

namespace attnc {
namespace {

class MLIRGenerator : public EmitContext {
public:
  MLIRGenerator(MLIRContext &context, const llvm::SourceMgr &sourceMgr,
                const BuiltinRegistry &builtins)
      : EmitContext(context), sourceMgr(sourceMgr), builtins(builtins) {}

  OwningOpRef<ModuleOp> generate(const ModelAST &model);

  Location loc(llvm::SMLoc where) override {
    unsigned id = sourceMgr.FindBufferContainingLoc(where);
    if (!id)
      return builder.getUnknownLoc();
    auto [line, col] = sourceMgr.getLineAndColumn(where, id);
    return FileLineColLoc::get(
        builder.getContext(),
        sourceMgr.getMemoryBuffer(id)->getBufferIdentifier(), line, col);
  }
  Value expr(const Expr &e) override;
  Value weight(const WeightDecl *decl) override {
    if (!decl)
      return {};
    Value &value = weights[decl];
    if (!value) {
      // An i4 matrix is stored as bytes of two consecutive input features.
      Shape shape = decl->type.shape;
      if (decl->type.elementType == ElementType::i4)
        shape[decl->layout == WeightLayout::outIn ? 1 : 0].size /= 2;
      // A quantized matrix says which way it is stored, for the check
      // against attnc quantize's record.
      bool quantized = decl->type.elementType == ElementType::i8 ||
                       decl->type.elementType == ElementType::i4;
      attn::WeightLayoutAttr layout;
      if (quantized && shape.size() == 2)
        layout = attn::WeightLayoutAttr::get(builder.getContext(),
                                             decl->layout == WeightLayout::outIn
                                                 ? attn::WeightLayout::out_in
                                                 : attn::WeightLayout::in_out);
      value = builder.create<attn::WeightOp>(
          loc(decl->loc.Start), tensorType(shape, decl->type.elementType),
          builder.getStringAttr(decl->name), layout);
    }
    return value;
  }
  Value state(const StateDecl *decl) override { return states.lookup(decl); }
  Value getPosition() override { return position; }
  Entry getEntry() override { return entry; }
  void setResults(const BuiltinExpr &e,
                  SmallVector<Value, 2> results) override {
    calls[&e] = std::move(results);
  }

private:
  void generateFunction(const ModelAST &model, ModuleOp module, StringRef name,
                        Entry entry);
  /// The call's op, emitted by its builtin after its operands.
  Value builtin(const BuiltinExpr &e);

  const llvm::SourceMgr &sourceMgr;
  const BuiltinRegistry &builtins;
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

Value MLIRGenerator::builtin(const BuiltinExpr &e) {
  SmallVector<Value> operands;
  for (const ExprPtr &operand : e.operands)
    operands.push_back(expr(*operand));
  const Builtin *builtin = builtins.lookup(e.builtin);
  assert(builtin && builtin->emit && "a checked call of an unknown builtin");
  return builtin->emit(*this, e, operands);
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
      // [B]: the tokens already in each sequence's caches.
      ArrayRef<Extent> batch(model.states.front()->type.shape.data(), 1);
      argTypes.push_back(tensorType(batch, ElementType::i32));
      argDims.push_back(symbolNames(batch));
      argNames.push_back({"attn.name", builder.getStringAttr("position")});
    }
    for (const auto &state : model.states) {
      argTypes.push_back(
          tensorType(state->type.shape, state->type.elementType));
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

BuiltinRegistry getBuiltinRegistry(MLIRContext &context) {
  return makeBuiltinRegistry(getDialectFunctions(context));
}

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const ModelAST &model,
                              const llvm::SourceMgr &sourceMgr,
                              const BuiltinRegistry &builtins) {
  context.loadDialect<attn::AttnDialect, func::FuncDialect>();
  return MLIRGenerator(context, sourceMgr, builtins).generate(model);
}

} // namespace attnc
