//===- compiler/frontend/EmitContext.cpp - Emission helpers ---------------===//
#include "compiler/frontend/EmitContext.h"

#include "dialects/attn/IR/AttnOps.h"

using namespace mlir;
using namespace attnc;

RankedTensorType EmitContext::tensorType(ArrayRef<Extent> shape,
                                         ElementType element) {
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
  case ElementType::i8:
    type = builder.getIntegerType(8);
    break;
  case ElementType::i4:
    // Stored as bytes of two values; the caller halves the `in` dim.
    type = builder.getIntegerType(8, /*isSigned=*/false);
    break;
  }
  return RankedTensorType::get(dims, type);
}

Value EmitContext::outInWeight(const WeightDecl *decl) {
  Value w = weight(decl);
  if (decl->layout == WeightLayout::outIn)
    return w;
  auto type = cast<RankedTensorType>(w.getType());
  auto swapped = RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)},
                                       type.getElementType());
  return builder.create<attn::TransposeOp>(w.getLoc(), swapped, w);
}

FloatAttr EmitContext::realAttr(const BuiltinExpr &e, StringRef name) {
  const BuiltinAttr *real = e.getAttr(name);
  return real ? builder.getF32FloatAttr(real->real) : FloatAttr();
}

Value attnc::emitNamedOp(EmitContext &ctx, const BuiltinExpr &e,
                         ArrayRef<Value> operands) {
  OpBuilder &builder = ctx.getBuilder();
  OperationState state(ctx.loc(e.getLoc()), "attn." + e.builtin);
  state.addOperands(operands);
  state.addTypes(ctx.tensorType(e.shape, e.elementType));
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
