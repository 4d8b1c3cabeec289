//===- compiler/frontend/Builtins.cpp - The registry and shared checks ----===//
//
// Part of attnc. The checks every family uses: inputs, feature sizes,
// weights by name, projections and their shapes.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"

#include <cassert>

using namespace attnc;

std::string attnc::didYouMean(llvm::StringRef suggestion) {
  return suggestion.empty() ? "" : "; did you mean '" + suggestion.str() + "'?";
}

//===----------------------------------------------------------------------===//
// BuiltinRegistry
//===----------------------------------------------------------------------===//

void BuiltinRegistry::add(Builtin builtin) {
  [[maybe_unused]] bool inserted =
      index.try_emplace(builtin.name, builtins.size()).second;
  assert(inserted && "a builtin is registered twice");
  builtins.push_back(std::move(builtin));
}

const Builtin *BuiltinRegistry::lookup(llvm::StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &builtins[it->second];
}

std::vector<llvm::StringRef> BuiltinRegistry::getCallableNames() const {
  std::vector<llvm::StringRef> names;
  for (const Builtin &builtin : builtins)
    if (builtin.check)
      names.push_back(builtin.name);
  return names;
}

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

static std::string describeLayout(WeightLayout layout) {
  return layout == WeightLayout::outIn ? "[out, in] layout"
                                       : "[in, out] layout";
}

ExprPtr CheckContext::checkActivationInput(Argument &arg,
                                           llvm::StringRef builtin) {
  ExprPtr x = checkValue(std::move(arg.value));
  if (x && x->elementType != ElementType::f32) {
    errorAt(*x, "'" + builtin + "' needs an f32 tensor, but this is i32");
    return nullptr;
  }
  return x;
}

bool CheckContext::getFeatureDim(const Expr &x, llvm::StringRef builtin,
                                 int64_t &dim) {
  const Extent &last = x.shape.back();
  if (last.isSymbolic()) {
    // Without a DimDecl the dim is unknown, and was reported where it was
    // written.
    if (last.dim)
      errorAt(x, "'" + builtin +
                     "' needs a fixed feature size, but the last "
                     "dim of its input is the symbolic dim '" +
                     last.dim->name + "'");
    return false;
  }
  dim = last.size;
  return true;
}

void CheckContext::reportUnknownWeight(const NameExpr &name,
                                       llvm::StringRef role, bool prefixOnly) {
  std::vector<std::string> candidates;
  for (const auto &weight : model.weights) {
    llvm::StringRef prefix = weight->name;
    if (prefix.consume_back(".weight"))
      candidates.push_back(prefix.str());
  }
  if (!prefixOnly)
    for (const auto &weight : model.weights)
      candidates.push_back(weight->name);
  std::string msg = "unknown " +
                    std::string(prefixOnly ? "module prefix" : "weight") +
                    " '" + name.name + "' for " + role.str();
  if (values.count(name.name))
    msg += "; '" + name.name + "' is a value, but this argument is a weight";
  else if (prefixOnly)
    msg += " (no weight '" + name.name + ".weight' is declared)" +
           didYouMean(closestName(name.name, candidates));
  else
    msg += didYouMean(closestName(name.name, candidates));
  errorAt(name, msg);
}

WeightDecl *CheckContext::lookupWeightArg(const Expr &arg,
                                          llvm::StringRef role) {
  const auto *name = llvm::dyn_cast<NameExpr>(&arg);
  if (!name) {
    errorAt(arg, role + " must be a weight name");
    return nullptr;
  }
  WeightDecl *weight = weights.lookup(name->name);
  if (!weight)
    reportUnknownWeight(*name, role, /*prefixOnly=*/false);
  else
    weight->used = true;
  return weight;
}

WeightDecl *CheckContext::lookupTableArg(const Expr &arg,
                                         llvm::StringRef builtin) {
  const auto *name = llvm::dyn_cast<NameExpr>(&arg);
  if (!name) {
    errorAt(arg, "the second argument of '" + builtin +
                     "' must be a weight or a module prefix");
    return nullptr;
  }
  WeightDecl *table = weights.lookup(name->name);
  if (!table)
    table = weights.lookup(name->name + ".weight");
  if (table)
    table->used = true;
  else
    reportUnknownWeight(*name, ("'" + builtin + "'").str(),
                        /*prefixOnly=*/false);
  return table;
}

bool CheckContext::checkMatrix(const WeightDecl &weight, const Expr &at,
                               llvm::StringRef role, int64_t in, int64_t out,
                               llvm::StringRef inWhat) {
  const Shape &shape = weight.type.shape;
  if (shape.size() != 2) {
    errorAt(at, role + " '" + weight.name + "' must be 2-D (" +
                    describeLayout(weight.layout) + "), but it is " +
                    shapeToString(shape));
    return false;
  }
  bool outIn = weight.layout == WeightLayout::outIn;
  int64_t declIn = weight.getInFeatures(), declOut = weight.getOutFeatures();
  if (declIn == in && (out < 0 || declOut == out))
    return true;
  std::string expected =
      out < 0
          ? (outIn ? "[N, " + std::to_string(in) + "]"
                   : "[" + std::to_string(in) + ", N]")
          : (outIn
                 ? "[" + std::to_string(out) + ", " + std::to_string(in) + "]"
                 : "[" + std::to_string(in) + ", " + std::to_string(out) + "]");
  std::string msg = role.str() + " '" + weight.name + "' is " +
                    shapeToString(shape) + " but must be " + expected + " (" +
                    describeLayout(weight.layout) + ") for " + inWhat.str() +
                    " " + std::to_string(in);
  // The transposed shape would fit: the layout is probably wrong.
  bool transposedFits = declOut == in && (out < 0 || declIn == out);
  if (transposedFits)
    msg += outIn ? "; if it is stored [in, out], declare it with "
                   "'layout(in, out)'"
                 : "; it is declared 'layout(in, out)': drop that if it is "
                   "stored [out, in]";
  errorAt(at, msg);
  return false;
}

bool CheckContext::checkVector(const WeightDecl &weight, const Expr &at,
                               llvm::StringRef role, int64_t size,
                               llvm::StringRef what) {
  const Shape &shape = weight.type.shape;
  if (shape.size() == 1 && shape[0].size == size)
    return true;
  errorAt(at, role + " '" + weight.name + "' is " + shapeToString(shape) +
                  " but must be [" + llvm::Twine(size) + "] to match " + what);
  return false;
}

bool CheckContext::resolveProjection(Argument &arg, int64_t in, int64_t out,
                                     BuiltinExpr &call,
                                     llvm::StringRef inWhat) {
  std::string role = "'" + arg.name + "'";
  auto *name = llvm::cast<NameExpr>(arg.value.get());
  // A module's P.weight and P.bias, or nn.MultiheadAttention's packed
  // in_proj_weight and in_proj_bias (P = `self_attn.in_proj`).
  llvm::StringRef separator = ".";
  WeightDecl *weight = weights.lookup(name->name + ".weight");
  if (!weight && (weight = weights.lookup(name->name + "_weight")))
    separator = "_";
  if (!weight) {
    llvm::StringRef prefix = name->name;
    if (weights.count(name->name) && prefix.consume_back(".weight"))
      errorAt(*name, role + " takes a module prefix: write '" + prefix +
                         "' for '" + name->name + "'");
    else
      reportUnknownWeight(*name, role, /*prefixOnly=*/true);
    return false;
  }
  weight->used = true;
  WeightDecl *bias = weights.lookup(name->name + separator.str() + "bias");
  if (bias)
    bias->used = true;
  call.weights.push_back({arg.name + ".weight", weight});
  if (bias)
    call.weights.push_back({arg.name + ".bias", bias});
  if (weight->type.elementType == ElementType::i8 ||
      weight->type.elementType == ElementType::i4) {
    WeightDecl *scales =
        weight->type.shape.size() == 2
            ? quantizationScales(*weight, *name, weight->getOutFeatures())
            : nullptr;
    if (!scales)
      return false;
    call.weights.push_back({arg.name + ".scales", scales});
  }
  if (in < 0)
    return true;
  std::string weightRole = role + " weight";
  if (!checkMatrix(*weight, *name, weightRole, in, out, inWhat))
    return false;
  return !bias || out < 0 ||
         checkVector(*bias, *name, role + " bias", out,
                     "the projection's " + std::to_string(out) + " outputs");
}

WeightDecl *CheckContext::quantizationScales(const WeightDecl &weight,
                                             const Expr &at, int64_t out) {
  std::string name = weight.name + "_scale";
  WeightDecl *scales = weights.lookup(name);
  bool i4 = weight.type.elementType == ElementType::i4;
  llvm::StringRef type = getElementTypeName(weight.type.elementType);
  // An i4 matrix has one scale per group of G consecutive inputs of an
  // output: its shape with `in` divided by G, in its layout.
  bool outIn = weight.layout == WeightLayout::outIn;
  int64_t in = i4 ? weight.getInFeatures() : 0;
  auto groupShape = [&](std::string groups) {
    std::string o = std::to_string(out);
    return outIn ? "[" + o + ", " + groups + "]"
                 : "[" + groups + ", " + o + "]";
  };
  // Groups of 32 (Q4_0's, GPTQ's) where they divide `in`, else one group.
  int64_t group = in % 32 == 0 ? 32 : in;
  std::string exampleShape = groupShape(std::to_string(group ? in / group : 0));
  std::string groupsOf = " for groups of " + std::to_string(group);
  if (!scales) {
    if (i4)
      errorAt(at, "i4 weight '" + weight.name +
                      "' needs its per-group scales: declare 'weight " + name +
                      " : f32" + exampleShape + "'" + groupsOf +
                      " (attnc quantize --bits 4 writes them)");
    else
      errorAt(at, "i8 weight '" + weight.name +
                      "' needs its per-output-channel scales: declare "
                      "'weight " +
                      name + " : f32[" + llvm::Twine(out) +
                      "]' (attnc quantize writes them)");
    return nullptr;
  }
  scales->used = true;
  if (scales->type.elementType != ElementType::f32) {
    errorAt(at, "the scales '" + name + "' of " + type + " weight '" +
                    weight.name + "' must be f32, not " +
                    getElementTypeName(scales->type.elementType));
    return nullptr;
  }
  if (i4) {
    const Shape &shape = scales->type.shape;
    int64_t groups = shape.size() == 2 ? shape[outIn ? 1 : 0].size : 0;
    if (shape.size() == 2 && shape[outIn ? 0 : 1].size == out && groups > 0 &&
        in % groups == 0)
      return scales;
    errorAt(at, "the scales '" + name + "' of i4 weight '" + weight.name +
                    "' are " + shapeToString(shape) + " but must be " +
                    groupShape("in / G") +
                    " for groups of G inputs, G dividing in = " +
                    llvm::Twine(in) + ", e.g. " + exampleShape + groupsOf);
    return nullptr;
  }
  if (!checkVector(*scales, at, "the scales", out,
                   "the weight's " + std::to_string(out) + " output features"))
    return nullptr;
  return scales;
}

WeightDecl *CheckContext::projectionWeight(const Argument &arg) const {
  auto *name = llvm::cast<NameExpr>(arg.value.get());
  if (WeightDecl *w = weights.lookup(name->name + ".weight"))
    return w;
  return weights.lookup(name->name + "_weight");
}
