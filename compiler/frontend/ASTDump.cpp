//===- ASTDump.cpp - Readable dump of a checked model ---------------------===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/AST.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

using namespace attnc;

namespace {

void printType(llvm::raw_ostream &os, ElementType type,
               llvm::ArrayRef<Extent> shape) {
  os << getElementTypeName(type);
  printShape(os, shape);
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
  case Expr::Kind::List:
    os << '[';
    llvm::interleaveComma(llvm::cast<ListExpr>(expr).elements, os,
                          [&](const ExprPtr &e) { printExpr(os, *e); });
    os << ']';
    return;
  case Expr::Kind::ValueRef:
    os << llvm::cast<ValueRefExpr>(expr).name;
    return;
  case Expr::Kind::Binary: {
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    os << '(';
    printExpr(os, *binary.lhs);
    os << ' ' << binary.op << ' ';
    printExpr(os, *binary.rhs);
    os << ')';
    return;
  }
  case Expr::Kind::Builtin: {
    // name(operands, role = weight, ..., attr = value, ...)
    const auto &call = llvm::cast<BuiltinExpr>(expr);
    os << call.builtin << '(';
    llvm::ListSeparator sep;
    for (const ExprPtr &operand : call.operands) {
      os << sep;
      printExpr(os, *operand);
    }
    for (const auto &[role, operand] : call.namedOperands) {
      os << sep << role << " = ";
      printExpr(os, *operand);
    }
    for (const auto &[role, weight] : call.weights) {
      os << sep << role << " = " << weight->name;
      if (weight->layout == WeightLayout::inOut)
        os << " layout(in, out)";
    }
    for (const auto &[name, attr] : call.attrs) {
      os << sep << name << " = ";
      switch (attr.kind) {
      case BuiltinAttr::Kind::Integer:
        os << attr.integer;
        break;
      case BuiltinAttr::Kind::Real:
        os << llvm::format("%g", attr.real);
        break;
      case BuiltinAttr::Kind::Enum:
        os << attr.enumerator;
        break;
      }
    }
    os << ')';
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
    if (auto *result = llvm::dyn_cast<ResultDecl>(decl.get())) {
      os << result->name << " : ";
      printType(os, result->elementType, result->shape);
      os << " = result " << result->index << " of " << result->of->name << '\n';
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
