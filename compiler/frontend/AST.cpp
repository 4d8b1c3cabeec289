//===- AST.cpp - Syntax tree of the .attn language ------------------------===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/AST.h"

#include "llvm/Support/ErrorHandling.h"

using namespace attnc;

llvm::StringRef attnc::getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::f32:
    return "f32";
  case ElementType::i32:
    return "i32";
  case ElementType::bf16:
    return "bf16";
  case ElementType::f16:
    return "f16";
  case ElementType::i8:
    return "i8";
  case ElementType::i4:
    return "i4";
  }
  llvm_unreachable("unknown element type");
}

std::string attnc::extentToString(const Extent &extent) {
  if (extent.dim)
    return extent.dim->name;
  if (!extent.name.empty())
    return extent.name;
  return std::to_string(extent.size);
}

void attnc::printShape(llvm::raw_ostream &os, llvm::ArrayRef<Extent> shape) {
  os << '[';
  llvm::interleaveComma(shape, os,
                        [&](const Extent &e) { os << extentToString(e); });
  os << ']';
}

std::string attnc::shapeToString(llvm::ArrayRef<Extent> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printShape(os, shape);
  return s;
}

const WeightDecl *BuiltinExpr::getWeight(llvm::StringRef role) const {
  for (const auto &[r, weight] : weights)
    if (r == role)
      return weight;
  return nullptr;
}

const StateDecl *BuiltinExpr::getState(llvm::StringRef role) const {
  for (const auto &[r, state] : states)
    if (r == role)
      return state;
  return nullptr;
}

const Expr *BuiltinExpr::getNamedOperand(llvm::StringRef role) const {
  for (const auto &[r, operand] : namedOperands)
    if (r == role)
      return operand.get();
  return nullptr;
}

const BuiltinAttr *BuiltinExpr::getAttr(llvm::StringRef name) const {
  for (const auto &[n, attr] : attrs)
    if (n == name)
      return &attr;
  return nullptr;
}

std::vector<const InputDecl *> ModelAST::getInputs() const {
  std::vector<const InputDecl *> inputs;
  for (const auto &decl : body)
    if (auto *input = llvm::dyn_cast<InputDecl>(decl.get()))
      inputs.push_back(input);
  return inputs;
}

std::vector<const OutputStmt *> ModelAST::getOutputs() const {
  std::vector<const OutputStmt *> outputs;
  for (const auto &decl : body)
    if (auto *output = llvm::dyn_cast<OutputStmt>(decl.get()))
      outputs.push_back(output);
  return outputs;
}

const WeightDecl *ModelAST::lookupWeight(llvm::StringRef name) const {
  for (const auto &weight : weights)
    if (weight->name == name)
      return weight.get();
  return nullptr;
}

const StateDecl *ModelAST::lookupState(llvm::StringRef name) const {
  for (const auto &state : states)
    if (state->name == name)
      return state.get();
  return nullptr;
}

const DimDecl *ModelAST::lookupDim(llvm::StringRef name) const {
  for (const auto &dim : dims)
    if (dim->name == name)
      return dim.get();
  return nullptr;
}
