//===- compiler/frontend/MLIRGen.cpp - AST -> attn dialect ----------------===//
#include "compiler/frontend/MLIRGen.h"

#include "dialects/attn/Analysis/DimSymbols.h"
#include "dialects/attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
namespace attn = mlir::attn;

namespace attnc {
namespace {

class MLIRGenerator {
public:
  MLIRGenerator(MLIRContext &context, const llvm::SourceMgr &sourceMgr)
      : builder(&context), sourceMgr(sourceMgr) {}

  OwningOpRef<ModuleOp> generate(const ModelAST &model);

private:
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
    Type type = element == ElementType::f32 ? Type(builder.getF32Type())
                                            : Type(builder.getI32Type());
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
  Value selfAttention(const SelfAttentionExpr &e);

  OpBuilder builder;
  const llvm::SourceMgr &sourceMgr;
  llvm::DenseMap<const WeightDecl *, Value> weights;
  llvm::DenseMap<const ValueDecl *, Value> values;
};

Value MLIRGenerator::selfAttention(const SelfAttentionExpr &e) {
  Value input = expr(*e.input);
  auto project = [&](const Projection &p) -> std::pair<Value, Value> {
    if (!p)
      return {};
    return {outInWeight(p.weight), weight(p.bias)};
  };
  auto [wq, bq] = project(e.q);
  auto [wk, bk] = project(e.k);
  auto [wv, bv] = project(e.v);
  auto [wqkv, bqkv] = project(e.qkv);
  auto [wo, bo] = project(e.out);
  auto mask = e.mask == MaskKind::causal ? attn::Mask::causal : attn::Mask::none;
  return builder.create<attn::SelfAttentionOp>(
      loc(e.getLoc()), input.getType(), input, wq, bq, wk, bk, wv, bv, wqkv,
      bqkv, wo, bo, builder.getI64IntegerAttr(e.heads),
      attn::MaskAttr::get(builder.getContext(), mask), FloatAttr());
}

Value MLIRGenerator::expr(const Expr &e) {
  Location where = loc(e.getLoc());
  RankedTensorType type = tensorType(e.shape, e.elementType);
  return llvm::TypeSwitch<const Expr *, Value>(&e)
      .Case([&](const ValueRefExpr *ref) { return values.lookup(ref->decl); })
      .Case([&](const AddExpr *add) -> Value {
        Value lhs = expr(*add->lhs), rhs = expr(*add->rhs);
        return builder.create<attn::AddOp>(loc(add->opLoc), lhs, rhs);
      })
      .Case([&](const LinearExpr *lin) -> Value {
        Value input = expr(*lin->input);
        auto layout = lin->weight->layout == WeightLayout::outIn
                          ? attn::WeightLayout::out_in
                          : attn::WeightLayout::in_out;
        return builder.create<attn::LinearOp>(
            where, type, input, weight(lin->weight), weight(lin->bias),
            attn::WeightLayoutAttr::get(builder.getContext(), layout));
      })
      .Case([&](const LayerNormExpr *norm) -> Value {
        Value input = expr(*norm->input);
        return builder.create<attn::LayerNormOp>(
            where, type, input, weight(norm->gamma), weight(norm->beta),
            builder.getF32FloatAttr(norm->epsilon));
      })
      .Case([&](const ActivationExpr *act) -> Value {
        Value input = expr(*act->input);
        if (act->activation == ActivationKind::relu)
          return builder.create<attn::ReluOp>(where, input);
        return builder.create<attn::GeluOp>(where, input);
      })
      .Case([&](const SelfAttentionExpr *att) { return selfAttention(*att); })
      .Default([](const Expr *) -> Value {
        llvm_unreachable("unresolved expression after the semantic check");
      });
}

OwningOpRef<ModuleOp> MLIRGenerator::generate(const ModelAST &model) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc(model.nameLoc.Start));

  SmallVector<Type> argTypes;
  for (const InputDecl *in : model.getInputs())
    argTypes.push_back(tensorType(in->shape, in->elementType));
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(
      loc(model.nameLoc.Start), model.name,
      builder.getFunctionType(argTypes, {}));

  SmallVector<Attribute> symbols;
  for (const auto &dim : model.dims)
    symbols.push_back(builder.getArrayAttr(
        {builder.getStringAttr(dim->name),
         builder.getI64IntegerAttr(dim->bound.value_or(0))}));
  func->setAttr(attn::kSymbolsAttr, builder.getArrayAttr(symbols));
  func->setAttr("attn.model_name", builder.getStringAttr(model.name));

  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  unsigned argIndex = 0;
  for (const InputDecl *in : model.getInputs()) {
    SmallVector<Attribute> dimNames;
    for (const Extent &e : in->shape)
      if (e.isSymbolic())
        dimNames.push_back(builder.getStringAttr(e.dim ? e.dim->name : e.name));
    func.setArgAttr(argIndex, attn::kDimSymbolsAttr,
                    builder.getArrayAttr(dimNames));
    func.setArgAttr(argIndex, "attn.name", builder.getStringAttr(in->name));
    values[in] = entry->getArgument(argIndex++);
  }

  SmallVector<Value> results;
  SmallVector<Attribute> resultNames;
  for (const auto &decl : model.body) {
    if (auto *assign = dyn_cast<AssignStmt>(decl.get())) {
      values[assign] = expr(*assign->value);
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
  for (auto [i, name] : llvm::enumerate(resultNames))
    func.setResultAttr(i, "attn.name", name);
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const ModelAST &model,
                              const llvm::SourceMgr &sourceMgr) {
  context.loadDialect<attn::AttnDialect, func::FuncDialect>();
  return MLIRGenerator(context, sourceMgr).generate(model);
}

} // namespace attnc
