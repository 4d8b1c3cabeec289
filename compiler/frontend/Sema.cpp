//===- Sema.cpp - Semantic check of a parsed model ------------------------===//
//
// Part of attnc. Declarations are checked first (dims, then weights, which
// are order-independent), then the body in source order, so that each value
// use sees the latest assignment above it. Calls are checked by the builtins
// of the registry (Builtins.h); Sema keeps the scopes, types and dims.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Sema.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace attnc;

namespace {

/// The largest fixed size or dim bound; products such as 3 * d_model then
/// cannot overflow.
constexpr int64_t kMaxExtent = (int64_t(1) << 31) - 1;

class Sema : public CheckContext {
public:
  Sema(ModelAST &model, DiagnosticEngine &diags,
       const BuiltinRegistry &builtins)
      : CheckContext(model, diags), builtins(builtins),
        errorsAtStart(diags.getNumErrors()) {}

  bool run();
  ExprPtr checkValue(ExprPtr expr) override;
  bool isCallable(llvm::StringRef name) const override {
    const Builtin *builtin = builtins.lookup(name);
    return builtin && builtin->check;
  }

private:
  bool hadError() const { return diags.getNumErrors() != errorsAtStart; }

  // Declarations.
  void checkDims();
  void checkWeights();
  void checkStates();
  bool resolveType(TensorType &type);
  void checkInput(InputDecl &input);
  void bindValue(ValueDecl &decl);

  // Values.
  ExprPtr checkName(NameExpr &name);
  ExprPtr checkBinary(std::unique_ptr<BinaryExpr> binary);
  ExprPtr checkCall(CallExpr &call);
  bool checkQuantizedWeights(const BuiltinExpr &call);
  void checkSecondResult(ResultDecl &result);

  const BuiltinRegistry &builtins;
  unsigned errorsAtStart;
  /// The first definition of each value name anywhere in the body, to tell
  /// "used before it is assigned" from "unknown".
  llvm::StringMap<ValueDecl *> allDefinitions;
  llvm::StringMap<OutputStmt *> outputs;
};

} // namespace

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

void Sema::checkDims() {
  for (auto &dim : model.dims) {
    auto [it, inserted] = dims.try_emplace(dim->name, dim.get());
    if (!inserted) {
      error(dim->loc.Start, "dim '" + dim->name + "' is declared twice",
            dim->loc);
      diags.note(it->second->loc.Start, "the first declaration is here");
    }
    if (dim->bound && (*dim->bound <= 0 || *dim->bound > kMaxExtent))
      error(dim->boundLoc.Start,
            "the bound of dim '" + dim->name + "' must be in 1.." +
                llvm::Twine(kMaxExtent) + ", got " + llvm::Twine(*dim->bound),
            dim->boundLoc);
  }
}

bool Sema::resolveType(TensorType &type) {
  bool ok = true;
  for (Extent &extent : type.shape) {
    if (extent.name.empty()) {
      if (extent.size <= 0 || extent.size > kMaxExtent) {
        error(extent.loc.Start,
              "a fixed size must be in 1.." + llvm::Twine(kMaxExtent) +
                  ", got " + llvm::Twine(extent.size),
              extent.loc);
        ok = false;
      }
      continue;
    }
    extent.dim = dims.lookup(extent.name);
    if (!extent.dim) {
      error(extent.loc.Start,
            "unknown dim '" + extent.name + "'; declare it with 'dim " +
                extent.name + "'" +
                didYouMean(closestName(extent.name, dims.keys())),
            extent.loc);
      ok = false;
    }
  }
  return ok;
}

void Sema::checkWeights() {
  for (auto &weight : model.weights) {
    auto [it, inserted] = weights.try_emplace(weight->name, weight.get());
    if (!inserted) {
      error(weight->loc.Start,
            "weight '" + weight->name + "' is declared twice", weight->loc);
      diags.note(it->second->loc.Start, "the first declaration is here");
    }
    if (!resolveType(weight->type))
      continue;
    if (weight->type.elementType == ElementType::i32)
      error(weight->type.loc.Start,
            "weight '" + weight->name +
                "' must be f32, bf16 or f16 (kept in that precision, computed "
                "in f32), or i8 or i4 (a quantized linear matrix), not i32",
            weight->type.loc);
    // Two i4 values of consecutive input features share a byte.
    if (weight->type.elementType == ElementType::i4 &&
        (weight->type.shape.size() != 2 || weight->getInFeatures() % 2 != 0))
      error(weight->type.loc.Start,
            "i4 weight '" + weight->name + "' is " +
                shapeToString(weight->type.shape) +
                ", but an i4 weight is a matrix ([out, in], or [in, out] "
                "with 'layout(in, out)') of an even number of input "
                "features, stored two per byte",
            weight->type.loc);
    for (const Extent &extent : weight->type.shape)
      if (extent.isSymbolic())
        error(extent.loc.Start,
              "weight shapes must be fixed sizes, but '" + extent.name +
                  "' is a symbolic dim",
              extent.loc);
    if (weight->hasLayoutClause && weight->type.shape.size() != 2)
      error(weight->layoutLoc.Start,
            "a layout applies only to 2-D weights; '" + weight->name + "' is " +
                llvm::Twine(weight->type.shape.size()) + "-D",
            weight->layoutLoc);
  }
}

/// States are `[B, L, F]`: a batch dim, a capacity dim bound at run time by
/// the caller's buffer, and fixed features; f32, or f16 / bf16 / i8 for a
/// KV cache kept in fewer bytes (an i8 cache's scales are f32 states).
void Sema::checkStates() {
  for (auto &state : model.states) {
    auto [it, inserted] = states.try_emplace(state->name, state.get());
    if (!inserted) {
      error(state->loc.Start, "state '" + state->name + "' is declared twice",
            state->loc);
      diags.note(it->second->loc.Start, "the first declaration is here");
    }
    if (!resolveType(state->type))
      continue;
    ElementType element = state->type.elementType;
    if (element != ElementType::f32 && element != ElementType::f16 &&
        element != ElementType::bf16 && element != ElementType::i8) {
      error(state->type.loc.Start,
            "state '" + state->name + "' is " + getElementTypeName(element) +
                ", but a state is f32, f16, bf16 or i8 (a KV cache in half "
                "precision is f16 or bf16, in 8 bits i8 with its scales)",
            state->type.loc);
      continue;
    }
    const Shape &shape = state->type.shape;
    if (shape.size() != 3 || !shape[1].isSymbolic() || shape[2].isSymbolic())
      error(state->type.loc.Start,
            "state '" + state->name + "' must be " +
                getElementTypeName(element) +
                "[B, L, F]: a batch dim, a symbolic capacity dim (e.g. 'dim "
                "L <= 4096') and a fixed number of features",
            state->type.loc);
  }
}

void Sema::bindValue(ValueDecl &decl) { values[decl.name] = &decl; }

void Sema::checkInput(InputDecl &input) {
  if (ValueDecl *previous = values.lookup(input.name)) {
    error(input.nameLoc.Start, "'" + input.name + "' is already defined",
          input.nameLoc);
    diags.note(previous->nameLoc.Start, "the previous definition is here");
  }
  input.elementType = input.type.elementType;
  input.shape = input.type.shape;
  if (input.elementType == ElementType::bf16 ||
      input.elementType == ElementType::f16 ||
      input.elementType == ElementType::i8 ||
      input.elementType == ElementType::i4) {
    error(input.type.loc.Start,
          "input '" + input.name + "' is " +
              getElementTypeName(input.elementType) +
              ", but inputs are f32 or i32 (only weights may be bf16, f16, i8 "
              "or i4): "
              "declare it f32 and convert the data to float32",
          input.type.loc);
    input.invalid = true;
  } else if (!resolveType(input.type)) {
    input.invalid = true;
  } else {
    input.shape = input.type.shape;
    if (input.elementType == ElementType::f32 && input.shape.size() < 2) {
      error(input.type.loc.Start,
            "f32 input '" + input.name +
                "' must have rank >= 2 ([..., d_model]), got rank " +
                llvm::Twine(input.shape.size()),
            input.type.loc);
      input.invalid = true;
    }
  }
  bindValue(input);
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

ExprPtr Sema::checkValue(ExprPtr expr) {
  switch (expr->getKind()) {
  case Expr::Kind::Name:
    return checkName(llvm::cast<NameExpr>(*expr));
  case Expr::Kind::Number:
    errorAt(*expr, "a number is not a tensor value; numbers are only "
                   "argument values such as 'eps = 1e-5'");
    return nullptr;
  case Expr::Kind::Binary:
    return checkBinary(
        std::unique_ptr<BinaryExpr>(llvm::cast<BinaryExpr>(expr.release())));
  case Expr::Kind::Call:
    return checkCall(llvm::cast<CallExpr>(*expr));
  case Expr::Kind::List:
    errorAt(*expr, "a list is not a tensor value; lists are only the new "
                   "shape of 'reshape(x, [B, S, 12, 64])'");
    return nullptr;
  default:
    // Already resolved (Sema does not run twice on one tree).
    return expr;
  }
}

ExprPtr Sema::checkName(NameExpr &name) {
  if (ValueDecl *decl = values.lookup(name.name)) {
    if (decl->invalid)
      return nullptr;
    auto ref = std::make_unique<ValueRefExpr>(name.name, decl, name.getRange());
    ref->elementType = decl->elementType;
    ref->shape = decl->shape;
    return ref;
  }
  if (weights.count(name.name)) {
    errorAt(name, "'" + name.name +
                      "' is a weight, not a value; weights are passed to "
                      "linear, layer_norm and self_attention");
    return nullptr;
  }
  if (weights.count(name.name + ".weight")) {
    errorAt(name, "'" + name.name +
                      "' is a module prefix, not a value; pass it to linear, "
                      "layer_norm or self_attention");
    return nullptr;
  }
  if (ValueDecl *later = allDefinitions.lookup(name.name)) {
    errorAt(name, "'" + name.name + "' is used before it is assigned");
    diags.note(later->nameLoc.Start, "it is first assigned here");
    return nullptr;
  }
  errorAt(name, "unknown value '" + name.name + "'" +
                    didYouMean(closestName(name.name, values.keys())));
  return nullptr;
}

ExprPtr Sema::checkBinary(std::unique_ptr<BinaryExpr> binary) {
  std::string op(1, binary->op);
  if (binary->op == '&') {
    error(binary->opLoc,
          "'&' joins the terms of an attention mask, as in 'mask = causal & "
          "padding(lengths)'; it is not a tensor operator",
          binary->getRange());
    return nullptr;
  }
  // `x * 27.7` or `27.7 * x`: scaling by a constant.
  auto *lhsNumber = llvm::dyn_cast<NumberExpr>(binary->lhs.get());
  auto *rhsNumber = llvm::dyn_cast<NumberExpr>(binary->rhs.get());
  if (lhsNumber || rhsNumber) {
    if (binary->op != '*' || (lhsNumber && rhsNumber)) {
      error(binary->opLoc,
            "'" + op + "' needs two tensors" +
                (binary->op == '*' ? ""
                                   : "; a number may only scale a "
                                     "tensor, as in 'x * 0.5'"),
            binary->getRange());
      return nullptr;
    }
    ExprPtr &tensor = lhsNumber ? binary->rhs : binary->lhs;
    double factor = (lhsNumber ? lhsNumber : rhsNumber)->value;
    ExprPtr x = checkValue(std::move(tensor));
    if (!x)
      return nullptr;
    if (x->elementType != ElementType::f32) {
      errorAt(*x, "'*' needs an f32 tensor, but this is i32");
      return nullptr;
    }
    auto scale = std::make_unique<BuiltinExpr>("scale", binary->getRange());
    scale->shape = x->shape;
    scale->operands.push_back(std::move(x));
    scale->attrs.push_back({"factor", BuiltinAttr::getReal(factor)});
    return scale;
  }
  binary->lhs = checkValue(std::move(binary->lhs));
  binary->rhs = checkValue(std::move(binary->rhs));
  if (!binary->lhs || !binary->rhs)
    return nullptr;
  for (const Expr *operand : {binary->lhs.get(), binary->rhs.get()})
    if (operand->elementType != ElementType::f32) {
      errorAt(*operand, "'" + op + "' needs f32 operands; this one is i32");
      return nullptr;
    }
  // Broadcasting by rank, as numpy: the shorter shape must equal the
  // trailing dims of the longer, e.g. [S, D] or [D] against [B, S, D].
  const Shape &a = binary->lhs->shape, &b = binary->rhs->shape;
  const Shape &longer = a.size() >= b.size() ? a : b;
  const Shape &shorter = a.size() >= b.size() ? b : a;
  size_t offset = longer.size() - shorter.size();
  std::string diffs;
  for (size_t i = 0; i < shorter.size(); ++i)
    if (shorter[i] != longer[offset + i])
      diffs +=
          (diffs.empty() ? "dim " : ", dim ") + std::to_string(offset + i) +
          " (" + extentToString(a.size() >= b.size() ? a[offset + i] : a[i]) +
          " vs " + extentToString(a.size() >= b.size() ? b[i] : b[offset + i]) +
          ")";
  if (!diffs.empty()) {
    error(binary->opLoc,
          "the operands of '" + op +
              "' must have the same shape, or one "
              "must be the trailing dims of the other, but " +
              shapeToString(a) + " and " + shapeToString(b) + " differ in " +
              diffs,
          {binary->lhs->getRange(), binary->rhs->getRange()});
    return nullptr;
  }
  static const char *const kNames[] = {"add", "sub", "mul"};
  const char *name = kNames[binary->op == '+' ? 0 : binary->op == '-' ? 1 : 2];
  auto call = std::make_unique<BuiltinExpr>(name, binary->getRange());
  call->shape = longer;
  call->operands.push_back(std::move(binary->lhs));
  call->operands.push_back(std::move(binary->rhs));
  return call;
}

ExprPtr Sema::checkCall(CallExpr &call) {
  const Builtin *sig = builtins.lookup(call.callee);
  if (!sig || !sig->check) {
    std::vector<llvm::StringRef> names = builtins.getCallableNames();
    std::string suggestion = closestName(call.callee, names);
    error(call.calleeLoc.Start,
          "unknown builtin '" + call.callee + "'" +
              (suggestion.empty()
                   ? "; the builtins are " + llvm::join(names, ", ")
                   : didYouMean(suggestion)),
          call.calleeLoc);
    return nullptr;
  }
  CallArgs args;
  if (!sortArgs(*this, call, *sig, args))
    return nullptr;
  ExprPtr checked = sig->check(*this, call, args);
  if (auto *builtin = llvm::dyn_cast_or_null<BuiltinExpr>(checked.get()))
    if (!checkQuantizedWeights(*builtin))
      return nullptr;
  return checked;
}

/// An i8 or i4 weight is a quantized matrix that `linear`,
/// `self_attention`'s projections and `embedding` (its table) dequantize
/// with its scales (which their check found and recorded as the role's
/// `scales`); read anywhere else, its integers would be taken for values.
bool Sema::checkQuantizedWeights(const BuiltinExpr &call) {
  bool ok = true;
  for (const auto &[role, weight] : call.weights) {
    ElementType type = weight->type.elementType;
    if (type != ElementType::i8 && type != ElementType::i4)
      continue;
    llvm::StringRef matrix = role;
    bool dequantizes =
        ((call.builtin == "linear" || call.builtin == "self_attention") &&
         matrix.consume_back("weight")) ||
        (call.builtin == "embedding" && matrix.consume_back("table"));
    if (dequantizes && call.getWeight((matrix + "scales").str()))
      continue;
    llvm::StringRef name = getElementTypeName(type);
    errorAt(call, "'" + call.builtin + "' cannot read " + name + " weight '" +
                      weight->name +
                      "': only 'linear', 'embedding' and the projections of "
                      "'self_attention' dequantize " +
                      name +
                      " matrices (with their "
                      "scales '" +
                      weight->name +
                      "_scale'); declare it f32, bf16 or f16 and keep it "
                      "unquantized");
    ok = false;
  }
  return ok;
}

/// `a, w = call(...)`: the builtin of the call says whether it has a second
/// result and of what type.
void Sema::checkSecondResult(ResultDecl &result) {
  AssignStmt &assign = *result.of;
  auto *call = llvm::dyn_cast_or_null<BuiltinExpr>(assign.value.get());
  if (!call || assign.invalid) {
    result.invalid = true;
    if (!assign.invalid)
      error(result.nameLoc.Start,
            "'" + result.name + "' takes the second result of a call, but '" +
                assign.name + "' is not assigned a call",
            result.nameLoc);
    return;
  }
  const Builtin *builtin = builtins.lookup(call->builtin);
  if (!builtin || !builtin->secondResult) {
    std::vector<llvm::StringRef> twoResults;
    for (const Builtin &b : builtins.getBuiltins())
      if (b.secondResult)
        twoResults.push_back(b.name);
    std::string list = twoResults.empty() ? "none" : twoResults.back().str();
    if (twoResults.size() > 1)
      list = llvm::join(llvm::ArrayRef(twoResults).drop_back(), ", ") +
             " and " + list;
    error(result.nameLoc.Start,
          "'" + call->builtin + "' has one result; only " + list +
              " have a second one, their attention weights ('a, w "
              "= self_attention(...)')",
          result.nameLoc);
    result.invalid = true;
    return;
  }
  if (!builtin->secondResult(*this, *call, result))
    result.invalid = true;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

bool Sema::run() {
  checkDims();
  checkWeights();
  checkStates();
  for (auto &decl : model.body)
    allDefinitions.try_emplace(decl->name, decl.get());

  for (auto &decl : model.body) {
    if (auto *input = llvm::dyn_cast<InputDecl>(decl.get())) {
      checkInput(*input);
      continue;
    }
    if (auto *result = llvm::dyn_cast<ResultDecl>(decl.get())) {
      checkSecondResult(*result);
      bindValue(*result);
      continue;
    }
    ExprPtr *value;
    if (auto *assign = llvm::dyn_cast<AssignStmt>(decl.get())) {
      value = &assign->value;
    } else {
      auto *output = llvm::cast<OutputStmt>(decl.get());
      value = &output->value;
      auto [it, inserted] = outputs.try_emplace(output->name, output);
      if (!inserted) {
        error(output->nameLoc.Start,
              "output '" + output->name + "' is declared twice",
              output->nameLoc);
        diags.note(it->second->nameLoc.Start, "the first one is here");
      }
      if (output->exportsExisting && !values.count(output->name)) {
        error(output->nameLoc.Start,
              "'output " + output->name + "' exports a value named '" +
                  output->name + "', but there is none; write 'output " +
                  output->name + " = EXPR' or assign '" + output->name +
                  "' first",
              output->nameLoc);
        output->invalid = true;
        bindValue(*output);
        continue;
      }
    }
    *value = checkValue(std::move(*value));
    if (*value) {
      decl->elementType = (*value)->elementType;
      decl->shape = (*value)->shape;
    } else {
      decl->invalid = true;
    }
    bindValue(*decl);
  }

  if (outputs.empty())
    error(model.nameLoc.Start,
          "model '" + model.name +
              "' has no output; add 'output NAME = EXPR' or 'output NAME'",
          model.nameLoc);

  if (!hadError())
    for (const auto &weight : model.weights)
      if (!weight->used)
        diags.warning(weight->loc.Start,
                      "weight '" + weight->name +
                          "' is declared but never used",
                      weight->loc);
  if (!hadError())
    for (const auto &state : model.states)
      if (!state->used)
        diags.warning(state->loc.Start,
                      "state '" + state->name +
                          "' is declared but never used; give it to an "
                          "attention as 'cache = PREFIX'",
                      state->loc);
  return !hadError();
}

bool attnc::checkModel(ModelAST &model, DiagnosticEngine &diags,
                       const BuiltinRegistry &builtins) {
  return Sema(model, diags, builtins).run();
}
