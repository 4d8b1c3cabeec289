//===- ASTDump.cpp - Readable dump of a checked model ---------------------===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/AST.h"

using namespace attnc;

namespace {

void printType(llvm::raw_ostream &os, ElementType type,
               llvm::ArrayRef<Extent> shape) {
  os << getElementTypeName(type);
  printShape(os, shape);
}

void printWeightRef(llvm::raw_ostream &os, llvm::StringRef key,
                    const WeightDecl *weight) {
  if (weight)
    os << ", " << key << " = " << weight->name;
}

void printExpr(llvm::raw_ostream &os, const Expr &expr);

void printProjection(llvm::raw_ostream &os, llvm::StringRef key,
                     const Projection &projection) {
  if (!projection)
    return;
  os << ", " << key << " = " << projection.weight->name;
  if (projection.bias)
    os << " + " << projection.bias->name;
}

void printExpr(llvm::raw_ostream &os, const Expr &expr) {
  switch (expr.getKind()) {
  case Expr::Kind::Name:
    os << llvm::cast<NameExpr>(expr).name;
    return;
  case Expr::Kind::Number:
    os << llvm::cast<NumberExpr>(expr).value;
    return;
  case Expr::Kind::Call: {
    const auto &call = llvm::cast<CallExpr>(expr);
    os << call.callee << '(';
    llvm::interleaveComma(call.args, os, [&](const Argument &arg) {
      if (arg.isNamed())
        os << arg.name << " = ";
      if (arg.value)
        printExpr(os, *arg.value);
    });
    os << ')';
    return;
  }
  case Expr::Kind::ValueRef:
    os << llvm::cast<ValueRefExpr>(expr).name;
    return;
  case Expr::Kind::Add: {
    const auto &add = llvm::cast<AddExpr>(expr);
    os << '(';
    printExpr(os, *add.lhs);
    os << " + ";
    printExpr(os, *add.rhs);
    os << ')';
    return;
  }
  case Expr::Kind::Linear: {
    const auto &linear = llvm::cast<LinearExpr>(expr);
    os << "linear(";
    printExpr(os, *linear.input);
    printWeightRef(os, "weight", linear.weight);
    if (linear.weight && linear.weight->layout == WeightLayout::inOut)
      os << " layout(in, out)";
    printWeightRef(os, "bias", linear.bias);
    os << ')';
    return;
  }
  case Expr::Kind::LayerNorm: {
    const auto &norm = llvm::cast<LayerNormExpr>(expr);
    os << "layer_norm(";
    printExpr(os, *norm.input);
    printWeightRef(os, "gamma", norm.gamma);
    printWeightRef(os, "beta", norm.beta);
    os << ", eps = " << norm.epsilon << ')';
    return;
  }
  case Expr::Kind::Activation: {
    const auto &act = llvm::cast<ActivationExpr>(expr);
    os << getActivationName(act.activation) << '(';
    printExpr(os, *act.input);
    os << ')';
    return;
  }
  case Expr::Kind::SelfAttention: {
    const auto &attn = llvm::cast<SelfAttentionExpr>(expr);
    os << "self_attention(";
    printExpr(os, *attn.input);
    os << ", heads = " << attn.heads;
    printProjection(os, "q", attn.q);
    printProjection(os, "k", attn.k);
    printProjection(os, "v", attn.v);
    printProjection(os, "qkv", attn.qkv);
    printProjection(os, "out", attn.out);
    os << ", mask = " << getMaskName(attn.mask) << ')';
    return;
  }
  }
}

} // namespace

void attnc::dumpModel(const ModelAST &model, llvm::raw_ostream &os) {
  os << "model " << model.name << '\n';
  for (const auto &dim : model.dims) {
    os << "  dim " << dim->name;
    if (dim->bound)
      os << " <= " << *dim->bound;
    os << '\n';
  }
  for (const auto &weight : model.weights) {
    os << "  weight " << weight->name << " : ";
    printType(os, weight->type.elementType, weight->type.shape);
    if (weight->layout == WeightLayout::inOut)
      os << " layout(in, out)";
    os << '\n';
  }
  for (const auto &decl : model.body) {
    os << "  ";
    if (auto *input = llvm::dyn_cast<InputDecl>(decl.get())) {
      os << "input " << input->name << " : ";
      printType(os, input->elementType, input->shape);
      os << '\n';
      continue;
    }
    const Expr *value = nullptr;
    if (auto *assign = llvm::dyn_cast<AssignStmt>(decl.get())) {
      value = assign->value.get();
    } else {
      os << "output ";
      value = llvm::cast<OutputStmt>(decl.get())->value.get();
    }
    os << decl->name << " : ";
    printType(os, decl->elementType, decl->shape);
    os << " = ";
    if (value)
      printExpr(os, *value);
    else
      os << "<invalid>";
    os << '\n';
  }
}
