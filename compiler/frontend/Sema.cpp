//===- Sema.cpp - Semantic check of a parsed model ------------------------===//
//
// Part of attnc. Declarations are checked first (dims, then weights, which
// are order-independent), then the body in source order, so that each value
// use sees the latest assignment above it.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Sema.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <functional>

using namespace attnc;

namespace {

/// The largest fixed size or dim bound; products such as 3 * d_model then
/// cannot overflow.
constexpr int64_t kMaxExtent = (int64_t(1) << 31) - 1;

/// The closest of `candidates` to `name` by edit distance, or "" if none is
/// close enough to be a plausible typo (one-letter names never are).
template <typename Range>
std::string closestName(llvm::StringRef name, const Range &candidates) {
  unsigned best = std::min<unsigned>(std::max<unsigned>(2, name.size() / 3),
                                     name.empty() ? 0 : name.size() - 1) +
                  1;
  std::string result;
  for (llvm::StringRef candidate : candidates) {
    unsigned distance = name.edit_distance(candidate, true, best);
    if (distance < best) {
      best = distance;
      result = candidate.str();
    }
  }
  return result;
}

std::string didYouMean(llvm::StringRef suggestion) {
  return suggestion.empty() ? "" : "; did you mean '" + suggestion.str() + "'?";
}

std::string describeLayout(WeightLayout layout) {
  return layout == WeightLayout::outIn ? "[out, in] layout"
                                       : "[in, out] layout";
}

/// The arguments of one call, sorted into positional and named ones.
struct CallArgs {
  llvm::SmallVector<Argument *, 3> positional;
  llvm::StringMap<Argument *> named;
  Argument *get(llvm::StringRef name) const { return named.lookup(name); }
};

class Sema;

/// One builtin of the language: its arity, named arguments and the check
/// that turns a call of it into a BuiltinExpr.
struct Signature {
  std::string name;
  unsigned minPositional, maxPositional;
  std::string usage; ///< e.g. "linear(x, P) or linear(x, W, b)"
  llvm::ArrayRef<llvm::StringRef> namedArgs;
  ExprPtr (Sema::*check)(CallExpr &call, CallArgs &args);
};

class Sema {
public:
  Sema(ModelAST &model, DiagnosticEngine &diags,
       llvm::ArrayRef<std::string> functions)
      : model(model), diags(diags), errorsAtStart(diags.getNumErrors()) {
    addBuiltins(functions);
  }

  bool run();

private:
  bool hadError() const { return diags.getNumErrors() != errorsAtStart; }
  void error(llvm::SMLoc loc, const llvm::Twine &msg,
             llvm::ArrayRef<llvm::SMRange> ranges = {}) {
    diags.error(loc, msg, ranges);
  }
  void errorAt(const Expr &expr, const llvm::Twine &msg) {
    diags.error(expr.getLoc(), msg, expr.getRange());
  }

  // Declarations.
  void checkDims();
  void checkWeights();
  void checkStates();
  bool resolveType(TensorType &type);
  void checkInput(InputDecl &input);
  void bindValue(ValueDecl &decl);

  // Values.
  ExprPtr checkValue(ExprPtr expr);
  ExprPtr checkName(NameExpr &name);
  ExprPtr checkBinary(std::unique_ptr<BinaryExpr> binary);
  ExprPtr checkCall(CallExpr &call);
  ExprPtr checkLinear(CallExpr &call, CallArgs &args);
  ExprPtr checkLayerNorm(CallExpr &call, CallArgs &args);
  ExprPtr checkRmsNorm(CallExpr &call, CallArgs &args);
  ExprPtr checkSoftcap(CallExpr &call, CallArgs &args);
  ExprPtr checkGelu(CallExpr &call, CallArgs &args);
  ExprPtr checkDropout(CallExpr &call, CallArgs &args);
  ExprPtr checkEmbedding(CallExpr &call, CallArgs &args);
  ExprPtr checkPositions(CallExpr &call, CallArgs &args);
  ExprPtr checkSinusoidal(CallExpr &call, CallArgs &args);
  ExprPtr checkFunction(CallExpr &call, CallArgs &args);
  ExprPtr checkSelfAttention(CallExpr &call, CallArgs &args);
  ExprPtr checkCrossAttention(CallExpr &call, CallArgs &args);
  ExprPtr checkAttention(CallExpr &call, CallArgs &args);
  bool checkPositiveAttr(CallArgs &args, llvm::StringRef name,
                         llvm::StringRef example, BuiltinExpr &attn);
  bool checkScale(CallArgs &args, BuiltinExpr &attn);
  int64_t checkKvHeads(CallArgs &args, int64_t heads);
  bool checkRope(CallArgs &args, BuiltinExpr &attn, int64_t headDim);
  bool checkSoftcap(CallArgs &args, BuiltinExpr &attn);
  bool resolveOutProjection(CallExpr &call, CallArgs &args, int64_t modelDim,
                            BuiltinExpr &attn);
  int64_t checkHeads(CallExpr &call, CallArgs &args, int64_t modelDim);
  bool resolveMask(ExprPtr &mask, BuiltinExpr &call, const Shape &query,
                   const Extent &keys, int64_t heads);
  void checkSecondResult(ResultDecl &result);
  bool resolveCache(Argument &arg, const Expr &x, int64_t features,
                    BuiltinExpr &attn);

  // Helpers for builtins.
  bool sortArgs(CallExpr &call, const Signature &sig, CallArgs &args);
  ExprPtr checkActivationInput(Argument &arg, llvm::StringRef builtin);
  bool getFeatureDim(const Expr &x, llvm::StringRef builtin, int64_t &dim);
  WeightDecl *lookupWeightArg(const Expr &arg, llvm::StringRef role);
  void reportUnknownWeight(const NameExpr &name, llvm::StringRef role,
                           bool prefixOnly);
  bool resolveProjection(Argument &arg, int64_t in, int64_t out,
                         BuiltinExpr &call, llvm::StringRef inWhat = "d_model");
  bool checkMatrix(const WeightDecl &weight, const Expr &at,
                   llvm::StringRef role, int64_t in, int64_t out,
                   llvm::StringRef inWhat);
  bool checkVector(const WeightDecl &weight, const Expr &at,
                   llvm::StringRef role, int64_t size, llvm::StringRef what);
  std::vector<std::string> weightPrefixes() const;

  void addBuiltins(llvm::ArrayRef<std::string> functions);
  const Signature *lookupBuiltin(llvm::StringRef name) const;

  ModelAST &model;
  DiagnosticEngine &diags;
  unsigned errorsAtStart;
  /// The language's builtins: the structural ones of this file, then the
  /// dialect's functions of one tensor.
  std::vector<Signature> builtins;
  llvm::StringMap<DimDecl *> dims;
  llvm::StringMap<WeightDecl *> weights;
  llvm::StringMap<StateDecl *> states;
  /// The current definition of each value name.
  llvm::StringMap<ValueDecl *> values;
  /// The first definition of each value name anywhere in the body, to tell
  /// "used before it is assigned" from "unknown".
  llvm::StringMap<ValueDecl *> allDefinitions;
  llvm::StringMap<OutputStmt *> outputs;
};

} // namespace

//===----------------------------------------------------------------------===//
// Builtins
//===----------------------------------------------------------------------===//

const llvm::StringRef kLayerNormArgs[] = {"eps"};
const llvm::StringRef kGeluArgs[] = {"approximate"};
const llvm::StringRef kRmsNormArgs[] = {"eps", "offset"};
const llvm::StringRef kAttentionArgs[] = {
    "cache", "heads", "q",    "k",          "v",       "qkv",     "out",
    "mask",  "scale", "rope", "rope_theta", "softcap", "kv_heads"};
const llvm::StringRef kCrossAttentionArgs[] = {
    "heads", "q",    "k",     "v",       "kv",  "qkv",
    "out",   "mask", "scale", "softcap", "rope"};
const llvm::StringRef kPlainAttentionArgs[] = {
    "heads",   "mask",  "scale",   "score",   "w",
    "w_query", "w_key", "w_score", "softcap", "kv_heads"};

void Sema::addBuiltins(llvm::ArrayRef<std::string> functions) {
  builtins = {
      {"linear",
       2,
       3,
       "linear(x, P), linear(x, W) or linear(x, W, b)",
       {},
       &Sema::checkLinear},
      {"layer_norm", 2, 3,
       "layer_norm(x, P, eps = E) or layer_norm(x, gamma, beta, eps = E)",
       kLayerNormArgs, &Sema::checkLayerNorm},
      {"gelu", 1, 1, "gelu(x) or gelu(x, approximate = tanh)", kGeluArgs,
       &Sema::checkGelu},
      {"rms_norm", 2, 2,
       "rms_norm(x, P, eps = E, offset = O) or rms_norm(x, W, eps = E)",
       kRmsNormArgs, &Sema::checkRmsNorm},
      {"softcap",
       2,
       2,
       "softcap(x, C) with C > 0, such as softcap(x, 30)",
       {},
       &Sema::checkSoftcap},
      {"dropout", 2, 2, "dropout(x, P)", {}, &Sema::checkDropout},
      {"embedding",
       2,
       2,
       "embedding(ids, P) or embedding(ids, W)",
       {},
       &Sema::checkEmbedding},
      {"positions",
       1,
       1,
       "positions(S) with S a declared dim",
       {},
       &Sema::checkPositions},
      {"sinusoidal",
       2,
       2,
       "sinusoidal(positions, D) with D even",
       {},
       &Sema::checkSinusoidal},
      {"self_attention", 1, 1,
       "self_attention(x, heads = H, qkv = P | q = P, k = P, v = P, out = P, "
       "mask = M)",
       kAttentionArgs, &Sema::checkSelfAttention},
      {"cross_attention", 2, 2,
       "cross_attention(x, memory, heads = H, q = P, kv = P | k = P, v = P | "
       "qkv = P, out = P, mask = M)",
       kCrossAttentionArgs, &Sema::checkCrossAttention},
      {"attention", 3, 3,
       "attention(q, k, v, heads = H, mask = M, scale = X, score = dot | "
       "general | additive)",
       kPlainAttentionArgs, &Sema::checkAttention},
  };
  for (const std::string &name : functions)
    if (!lookupBuiltin(name))
      builtins.push_back({name, 1, 1, name + "(x)", {}, &Sema::checkFunction});
}

const Signature *Sema::lookupBuiltin(llvm::StringRef name) const {
  for (const Signature &sig : builtins)
    if (sig.name == name)
      return &sig;
  return nullptr;
}

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
                "in f32), not i32",
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

/// States are f32 `[B, L, F]`: a batch dim, a capacity dim bound at run
/// time by the caller's buffer, and fixed features.
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
    const Shape &shape = state->type.shape;
    if (state->type.elementType != ElementType::f32 || shape.size() != 3 ||
        !shape[1].isSymbolic() || shape[2].isSymbolic())
      error(state->type.loc.Start,
            "state '" + state->name +
                "' must be f32[B, L, F]: a batch dim, a symbolic capacity "
                "dim (e.g. 'dim L <= 4096') and a fixed number of features",
            state->type.loc);
  }
}

/// `cache = P`: the states `P.key` and `P.value`, `[B, L, features]` with the
/// input's batch dim and a capacity dim of their own.
bool Sema::resolveCache(Argument &arg, const Expr &x, int64_t features,
                        BuiltinExpr &attn) {
  const auto *name = llvm::dyn_cast<NameExpr>(arg.value.get());
  if (!name) {
    errorAt(*arg.value, "'cache' takes a state prefix P, whose states "
                        "'P.key' and 'P.value' are the KV cache");
    return false;
  }
  bool ok = true;
  const Extent &batch = x.shape.front();
  const Extent &seq = x.shape[x.shape.size() - 2];
  std::string batchName =
      batch.isSymbolic() ? batch.name : std::to_string(batch.size);
  const StateDecl *found[2] = {};
  const char *const roles[] = {"key", "value"};
  for (auto [i, role] : llvm::enumerate(roles)) {
    std::string full = name->name + "." + role;
    StateDecl *state = states.lookup(full);
    if (!state) {
      errorAt(*arg.value,
              "no state '" + full + "': declare the KV cache as 'state " +
                  full + " : f32[" + batchName + ", L, " +
                  llvm::Twine(features) + "]' with 'dim L <= CAPACITY'");
      ok = false;
      continue;
    }
    state->used = true;
    found[i] = state;
    const Shape &shape = state->type.shape;
    if (shape.size() != 3)
      continue; // reported at the declaration
    bool same = x.shape.size() == 3 && shape[0] == batch &&
                shape[2] == Extent::fixed(features) && !(shape[1] == seq);
    if (!same) {
      errorAt(*arg.value,
              "state '" + full + "' must be [" + batchName + ", L, " +
                  llvm::Twine(features) +
                  "] for this attention: its input's batch dim, a capacity "
                  "dim other than the sequence dim '" +
                  seq.name + "', and the keys' " + llvm::Twine(features) +
                  " features");
      ok = false;
    }
  }
  if (ok && found[0]->type.shape[1].name != found[1]->type.shape[1].name) {
    errorAt(*arg.value, "the key and value caches of '" + name->name +
                            "' must have one capacity dim");
    ok = false;
  }
  if (ok) {
    attn.states.push_back({"key", found[0]});
    attn.states.push_back({"value", found[1]});
  }
  return ok;
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
      input.elementType == ElementType::f16) {
    error(input.type.loc.Start,
          "input '" + input.name + "' is " +
              getElementTypeName(input.elementType) +
              ", but inputs are f32 or i32 (only weights may be bf16 or f16): "
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
  default:
    // Already resolved (Sema does not run twice on one tree).
    return expr;
  }
}

std::vector<std::string> Sema::weightPrefixes() const {
  std::vector<std::string> prefixes;
  for (const auto &weight : model.weights) {
    llvm::StringRef name = weight->name;
    if (name.consume_back(".weight"))
      prefixes.push_back(name.str());
  }
  return prefixes;
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
  const Signature *sig = lookupBuiltin(call.callee);
  if (!sig) {
    std::vector<llvm::StringRef> names;
    for (const Signature &s : builtins)
      names.push_back(s.name);
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
  if (!sortArgs(call, *sig, args))
    return nullptr;
  return (this->*sig->check)(call, args);
}

bool Sema::sortArgs(CallExpr &call, const Signature &sig, CallArgs &args) {
  bool ok = true;
  Argument *firstNamed = nullptr;
  for (Argument &arg : call.args) {
    if (!arg.isNamed()) {
      if (firstNamed) {
        errorAt(*arg.value, "positional argument after the named argument '" +
                                firstNamed->name +
                                "'; put positional arguments first");
        ok = false;
      }
      args.positional.push_back(&arg);
      continue;
    }
    if (!firstNamed)
      firstNamed = &arg;
    if (!llvm::is_contained(sig.namedArgs, arg.name)) {
      std::string msg =
          "unknown argument '" + arg.name + "' of '" + sig.name + "'";
      if (sig.namedArgs.empty())
        msg += "; it takes no named arguments";
      else if (std::string s = closestName(arg.name, sig.namedArgs); !s.empty())
        msg += didYouMean(s);
      else
        msg += "; its named arguments are " + llvm::join(sig.namedArgs, ", ");
      error(arg.nameLoc.Start, msg, arg.nameLoc);
      ok = false;
      continue;
    }
    auto [it, inserted] = args.named.try_emplace(arg.name, &arg);
    if (!inserted) {
      error(arg.nameLoc.Start, "argument '" + arg.name + "' is given twice",
            arg.nameLoc);
      diags.note(it->second->nameLoc.Start, "the first one is here");
      ok = false;
    }
  }
  size_t n = args.positional.size();
  if (n < sig.minPositional || n > sig.maxPositional) {
    std::string expected = sig.minPositional == sig.maxPositional
                               ? std::to_string(sig.minPositional)
                               : std::to_string(sig.minPositional) + " or " +
                                     std::to_string(sig.maxPositional);
    error(call.calleeLoc.Start,
          "'" + sig.name + "' takes " + expected + " positional argument" +
              (sig.maxPositional == 1 ? "" : "s") + ", got " + llvm::Twine(n) +
              "; write " + sig.usage,
          call.getRange());
    ok = false;
  }
  return ok;
}

ExprPtr Sema::checkActivationInput(Argument &arg, llvm::StringRef builtin) {
  ExprPtr x = checkValue(std::move(arg.value));
  if (x && x->elementType != ElementType::f32) {
    errorAt(*x, "'" + builtin + "' needs an f32 tensor, but this is i32");
    return nullptr;
  }
  return x;
}

bool Sema::getFeatureDim(const Expr &x, llvm::StringRef builtin, int64_t &dim) {
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

void Sema::reportUnknownWeight(const NameExpr &name, llvm::StringRef role,
                               bool prefixOnly) {
  std::vector<std::string> candidates = weightPrefixes();
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

WeightDecl *Sema::lookupWeightArg(const Expr &arg, llvm::StringRef role) {
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

bool Sema::checkMatrix(const WeightDecl &weight, const Expr &at,
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

bool Sema::checkVector(const WeightDecl &weight, const Expr &at,
                       llvm::StringRef role, int64_t size,
                       llvm::StringRef what) {
  const Shape &shape = weight.type.shape;
  if (shape.size() == 1 && shape[0].size == size)
    return true;
  errorAt(at, role + " '" + weight.name + "' is " + shapeToString(shape) +
                  " but must be [" + llvm::Twine(size) + "] to match " + what);
  return false;
}

ExprPtr Sema::checkLinear(CallExpr &call, CallArgs &args) {
  ExprPtr x = checkActivationInput(*args.positional[0], "linear");
  Expr &wArg = *args.positional[1]->value;
  WeightDecl *weight = nullptr, *bias = nullptr;
  if (args.positional.size() == 3) {
    weight = lookupWeightArg(wArg, "the weight of 'linear'");
    bias = lookupWeightArg(*args.positional[2]->value, "the bias of 'linear'");
    if (auto *name = llvm::dyn_cast<NameExpr>(&wArg);
        !weight && name && weights.count(name->name + ".weight")) {
      diags.note(wArg.getLoc(), "with a module prefix the bias is found as '" +
                                    name->name +
                                    ".bias'; drop the third argument");
    }
  } else if (auto *name = llvm::dyn_cast<NameExpr>(&wArg)) {
    if ((weight = weights.lookup(name->name))) {
      weight->used = true;
    } else if ((weight = weights.lookup(name->name + ".weight"))) {
      weight->used = true;
      if ((bias = weights.lookup(name->name + ".bias")))
        bias->used = true;
    } else {
      reportUnknownWeight(*name, "'linear'", /*prefixOnly=*/false);
    }
  } else {
    errorAt(wArg, "the second argument of 'linear' must be a weight or a "
                  "module prefix");
  }
  int64_t in;
  if (!x || !weight || (args.positional.size() == 3 && !bias) ||
      !getFeatureDim(*x, "linear", in))
    return nullptr;
  if (!checkMatrix(*weight, wArg, "linear weight", in, -1,
                   "the input's feature size"))
    return nullptr;
  int64_t out = weight->getOutFeatures();
  const Expr &biasAt =
      args.positional.size() == 3 ? *args.positional[2]->value : wArg;
  if (bias &&
      !checkVector(*bias, biasAt, "linear bias", out,
                   "the weight's " + std::to_string(out) + " output features"))
    return nullptr;
  auto linear = std::make_unique<BuiltinExpr>("linear", call.getRange());
  linear->shape = x->shape;
  linear->shape.back() = Extent::fixed(out);
  linear->operands.push_back(std::move(x));
  linear->weights.push_back({"weight", weight});
  if (bias)
    linear->weights.push_back({"bias", bias});
  return linear;
}

ExprPtr Sema::checkLayerNorm(CallExpr &call, CallArgs &args) {
  ExprPtr x = checkActivationInput(*args.positional[0], "layer_norm");
  Expr &pArg = *args.positional[1]->value;
  WeightDecl *gamma = nullptr, *beta = nullptr;
  const Expr *betaAt = &pArg;
  bool ok = true;
  if (args.positional.size() == 3) {
    betaAt = args.positional[2]->value.get();
    gamma = lookupWeightArg(pArg, "the scale (gamma) of 'layer_norm'");
    beta = lookupWeightArg(*betaAt, "the shift (beta) of 'layer_norm'");
  } else if (auto *name = llvm::dyn_cast<NameExpr>(&pArg)) {
    if ((gamma = weights.lookup(name->name + ".weight"))) {
      gamma->used = true;
      if ((beta = weights.lookup(name->name + ".bias"))) {
        beta->used = true;
      } else {
        errorAt(pArg, "'layer_norm' needs the shift '" + name->name +
                          ".bias'; declare it as 'weight " + name->name +
                          ".bias : f32[D]'");
        ok = false;
      }
    } else if (weights.count(name->name)) {
      errorAt(pArg, "'layer_norm' with one weight argument takes a module "
                    "prefix (e.g. 'ln_1' for 'ln_1.weight' and "
                    "'ln_1.bias'); or write layer_norm(x, gamma, beta)");
      ok = false;
    } else {
      reportUnknownWeight(*name, "'layer_norm'", /*prefixOnly=*/true);
      ok = false;
    }
  } else {
    errorAt(pArg, "the second argument of 'layer_norm' must be a module "
                  "prefix or a weight");
    ok = false;
  }

  double epsilon = 1e-5;
  if (Argument *eps = args.get("eps")) {
    auto *number = llvm::dyn_cast<NumberExpr>(eps->value.get());
    if (!number || number->value <= 0) {
      errorAt(*eps->value, "'eps' must be a positive number such as 1e-5");
      ok = false;
    } else {
      epsilon = number->value;
    }
  }
  int64_t d;
  if (!ok || !x || !gamma || !beta || !getFeatureDim(*x, "layer_norm", d))
    return nullptr;
  std::string what = "the input's last dim " + std::to_string(d);
  bool gammaOk = checkVector(*gamma, pArg, "layer_norm scale", d, what);
  bool betaOk = checkVector(*beta, *betaAt, "layer_norm shift", d, what);
  if (!gammaOk || !betaOk)
    return nullptr;
  auto norm = std::make_unique<BuiltinExpr>("layer_norm", call.getRange());
  norm->shape = x->shape;
  norm->operands.push_back(std::move(x));
  norm->weights = {{"gamma", gamma}, {"beta", beta}};
  norm->attrs.push_back({"eps", BuiltinAttr::getReal(epsilon)});
  return norm;
}

/// `rms_norm(x, P)` (`P.weight`) or `rms_norm(x, W)`: Hugging Face's
/// LlamaRMSNorm, or GemmaRMSNorm's `1 + weight` with `offset = 1`.
ExprPtr Sema::checkRmsNorm(CallExpr &call, CallArgs &args) {
  ExprPtr x = checkActivationInput(*args.positional[0], "rms_norm");
  Expr &pArg = *args.positional[1]->value;
  WeightDecl *gamma = nullptr;
  bool ok = true;
  if (auto *name = llvm::dyn_cast<NameExpr>(&pArg)) {
    if ((gamma = weights.lookup(name->name))) {
      gamma->used = true;
    } else if ((gamma = weights.lookup(name->name + ".weight"))) {
      gamma->used = true;
      // RMSNorm has no shift: a declared bias would be silently unused.
      if (WeightDecl *bias = weights.lookup(name->name + ".bias")) {
        bias->used = true;
        errorAt(pArg, "'rms_norm' has no shift, but '" + bias->name +
                          "' is declared; remove that declaration, or use "
                          "layer_norm(x, " +
                          name->name + ") for a norm with a shift");
        diags.note(bias->loc.Start, "'" + bias->name + "' is declared here");
        ok = false;
      }
    } else {
      reportUnknownWeight(*name, "'rms_norm'", /*prefixOnly=*/false);
      ok = false;
    }
  } else {
    errorAt(pArg, "the second argument of 'rms_norm' must be a module "
                  "prefix or a weight");
    ok = false;
  }

  // LlamaRMSNorm's default.
  double epsilon = 1e-6, offset = 0;
  if (Argument *eps = args.get("eps")) {
    auto *number = llvm::dyn_cast<NumberExpr>(eps->value.get());
    if (!number || !(float(number->value) > 0)) {
      errorAt(*eps->value, "'eps' must be a positive number such as 1e-6");
      ok = false;
    } else {
      epsilon = number->value;
    }
  }
  if (Argument *arg = args.get("offset")) {
    auto *number = llvm::dyn_cast<NumberExpr>(arg->value.get());
    if (!number || !std::isfinite(float(number->value))) {
      errorAt(*arg->value,
              "'offset' must be a number: 0 scales by the weight (Llama), 1 "
              "by 1 + weight (Gemma)");
      ok = false;
    } else {
      offset = number->value;
    }
  }
  int64_t d;
  if (!ok || !x || !gamma || !getFeatureDim(*x, "rms_norm", d))
    return nullptr;
  if (!checkVector(*gamma, pArg, "rms_norm scale", d,
                   "the input's last dim " + std::to_string(d)))
    return nullptr;
  auto norm = std::make_unique<BuiltinExpr>("rms_norm", call.getRange());
  norm->shape = x->shape;
  norm->operands.push_back(std::move(x));
  norm->weights = {{"gamma", gamma}};
  norm->attrs.push_back({"eps", BuiltinAttr::getReal(epsilon)});
  norm->attrs.push_back({"offset", BuiltinAttr::getReal(offset)});
  return norm;
}

/// `softcap(x, C)`: C * tanh(x / C), Gemma-2's logit soft capping.
ExprPtr Sema::checkSoftcap(CallExpr &call, CallArgs &args) {
  ExprPtr x = checkActivationInput(*args.positional[0], "softcap");
  Expr &c = *args.positional[1]->value;
  auto *number = llvm::dyn_cast<NumberExpr>(&c);
  if (!number || !(float(number->value) > 0) ||
      !std::isfinite(float(number->value))) {
    errorAt(c, "the cap of 'softcap' must be a positive number, such as 30 "
               "(Gemma-2's final_logit_softcapping)");
    return nullptr;
  }
  if (!x)
    return nullptr;
  auto fn = std::make_unique<BuiltinExpr>("softcap", call.getRange());
  fn->shape = x->shape;
  fn->operands.push_back(std::move(x));
  fn->attrs.push_back({"cap", BuiltinAttr::getReal(number->value)});
  return fn;
}

/// A dialect function of one tensor (BuiltinFunctionOpInterface).
ExprPtr Sema::checkFunction(CallExpr &call, CallArgs &args) {
  ExprPtr x = checkActivationInput(*args.positional[0], call.callee);
  if (!x)
    return nullptr;
  auto fn = std::make_unique<BuiltinExpr>(call.callee, call.getRange());
  fn->shape = x->shape;
  fn->operands.push_back(std::move(x));
  return fn;
}

/// `gelu(x)` (erf form) or `gelu(x, approximate = tanh)`, the function
/// `gelu_tanh` (GPT-2's "gelu_new"), as PyTorch spells the choice.
ExprPtr Sema::checkGelu(CallExpr &call, CallArgs &args) {
  std::string name = "gelu";
  if (Argument *approximate = args.get("approximate")) {
    auto *value = llvm::dyn_cast<NameExpr>(approximate->value.get());
    if (!value || (value->name != "none" && value->name != "tanh")) {
      errorAt(*approximate->value,
              "'approximate' of 'gelu' is 'none' (the erf form) or 'tanh'");
      return nullptr;
    }
    if (value->name == "tanh")
      name = "gelu_tanh";
  }
  ExprPtr x = checkActivationInput(*args.positional[0], "gelu");
  if (!x)
    return nullptr;
  auto fn = std::make_unique<BuiltinExpr>(name, call.getRange());
  fn->shape = x->shape;
  fn->operands.push_back(std::move(x));
  return fn;
}

/// A projection `P` (`P.weight` [out, in], optional `P.bias` [out]); `in` <
/// 0 when the input's features are unknown (an earlier error).
bool Sema::resolveProjection(Argument &arg, int64_t in, int64_t out,
                             BuiltinExpr &call, llvm::StringRef inWhat) {
  std::string role = "'" + arg.name + "'";
  auto *name = llvm::dyn_cast<NameExpr>(arg.value.get());
  if (!name) {
    errorAt(*arg.value,
            role + " must be a module prefix such as 'attn.c_attn'");
    return false;
  }
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
  if (in < 0)
    return true;
  std::string weightRole = role + " weight";
  if (!checkMatrix(*weight, *name, weightRole, in, out, inWhat))
    return false;
  return !bias || out < 0 ||
         checkVector(*bias, *name, role + " bias", out,
                     "the projection's " + std::to_string(out) + " outputs");
}

/// `mask = TERM & TERM ...`: none, causal, padding(LENGTHS), window(W),
/// window(LEFT, RIGHT), or an f32 tensor added to the scores. Records the
/// terms on `call` as attributes (causal, window_left, window_right) and
/// operands (lengths, bias) of an attention over `query`'s sequence.
/// The mask terms of an attention of `query` [.., S, D] over keys of the
/// sequence extent `keys` (S for self-attention, the memory's T).
bool Sema::resolveMask(ExprPtr &mask, BuiltinExpr &call, const Shape &query,
                       const Extent &keys, int64_t heads) {
  // The terms' owning slots, so a tensor term can be checked (and moved).
  std::vector<ExprPtr *> slots;
  std::function<void(ExprPtr &)> flatten = [&](ExprPtr &e) {
    if (auto *both = llvm::dyn_cast<BinaryExpr>(e.get());
        both && both->op == '&') {
      flatten(both->lhs);
      flatten(both->rhs);
    } else {
      slots.push_back(&e);
    }
  };
  flatten(mask);
  bool ok = true;
  auto once = [&](Expr &term, llvm::StringRef what) {
    if (!call.getAttr(what) && !call.getNamedOperand(what))
      return true;
    errorAt(term, "the mask has two '" + what + "' terms; give each once");
    return ok = false;
  };
  auto integer = [&](Argument &arg, int64_t min, int64_t &value) {
    auto *number = llvm::dyn_cast<NumberExpr>(arg.value.get());
    if (number && number->isInteger && number->intValue >= min) {
      value = number->intValue;
      return true;
    }
    errorAt(*arg.value,
            "a window size must be an integer >= " + llvm::Twine(min));
    return ok = false;
  };
  const Extent &seq = query[query.size() - 2];
  for (ExprPtr *slot : slots) {
    Expr *term = slot->get();
    auto *name = llvm::dyn_cast<NameExpr>(term);
    auto *fn = llvm::dyn_cast<CallExpr>(term);
    if (name && name->name == "none")
      continue;
    if (name && name->name == "causal") {
      if (once(*term, "causal"))
        call.attrs.push_back({"causal", BuiltinAttr::getInteger(1)});
      continue;
    }
    if (name && name->name == "alibi") {
      // ALiBi biases the scores by head-specific slopes times the distance.
      if (once(*term, "alibi"))
        call.attrs.push_back({"alibi", BuiltinAttr::getInteger(1)});
      continue;
    }
    if (fn && fn->callee == "window") {
      // window(W): the W keys up to the query's own position (Mistral's
      // sliding window); window(L, R): L keys before it to R after it.
      int64_t left = 0, right = 0;
      bool named =
          llvm::any_of(fn->args, [](const Argument &a) { return a.isNamed(); });
      if (named || fn->args.empty() || fn->args.size() > 2) {
        errorAt(*term, "write window(W) for the W keys up to each query, or "
                       "window(LEFT, RIGHT) for the keys from LEFT before to "
                       "RIGHT after it");
        ok = false;
        continue;
      }
      if (fn->args.size() == 1) {
        if (!integer(fn->args[0], 1, left))
          continue;
        left -= 1;
      } else if (!integer(fn->args[0], 0, left) ||
                 !integer(fn->args[1], 0, right)) {
        continue;
      }
      if (once(*term, "window_left")) {
        call.attrs.push_back({"window_left", BuiltinAttr::getInteger(left)});
        call.attrs.push_back({"window_right", BuiltinAttr::getInteger(right)});
      }
      continue;
    }
    if (fn && fn->callee == "padding") {
      if (fn->args.size() != 1 || fn->args[0].isNamed()) {
        errorAt(*term, "write padding(LENGTHS) with an i32[B] input of the "
                       "valid length of each sequence");
        ok = false;
        continue;
      }
      ExprPtr lengths = checkValue(std::move(fn->args[0].value));
      if (!lengths) {
        ok = false;
        continue;
      }
      if (query.size() < 3 || lengths->elementType != ElementType::i32 ||
          lengths->shape.size() != 1 || lengths->shape[0] != query[0]) {
        errorAt(*lengths,
                "padding lengths must be i32[" +
                    (query.size() < 3 ? std::string("B")
                                      : extentToString(query[0])) +
                    "], one length per sequence of the batch, but this is " +
                    getElementTypeName(lengths->elementType).str() +
                    shapeToString(lengths->shape));
        ok = false;
        continue;
      }
      if (once(*term, "lengths"))
        call.namedOperands.push_back({"lengths", std::move(lengths)});
      continue;
    }
    if (name && (name->name == "padding" || name->name == "window")) {
      errorAt(*term, "'" + name->name + "' needs its argument, e.g. " +
                         (name->name == "padding" ? "padding(lengths)"
                                                  : "window(256)"));
      ok = false;
      continue;
    }
    if (fn || (name && !values.count(name->name))) {
      llvm::StringRef what = fn ? llvm::StringRef(fn->callee) : name->name;
      errorAt(*term, "unknown mask '" + what +
                         "'; a mask is none, causal, padding(LENGTHS), "
                         "window(W), window(LEFT, RIGHT), alibi, an f32 tensor "
                         "added to the scores, or several joined with '&'");
      ok = false;
      continue;
    }
    // An additive mask: [S, T], [B, S, T] or [B, heads, S, T].
    ExprPtr bias = checkValue(std::move(*slot));
    if (!bias) {
      ok = false;
      continue;
    }
    const Shape &b = bias->shape;
    bool fits = bias->elementType == ElementType::f32 && b.size() >= 2 &&
                b.size() <= 4 && b[b.size() - 2] == seq &&
                b[b.size() - 1] == keys &&
                (b.size() < 3 || (query.size() >= 3 && b[0] == query[0])) &&
                (b.size() < 4 || (!b[1].isSymbolic() && b[1].size == heads));
    if (!fits) {
      std::string st = extentToString(seq) + ", " + extentToString(keys);
      std::string batch =
          query.size() >= 3 ? extentToString(query[0]) : std::string("B");
      errorAt(*bias, "an additive mask is f32[" + st + "], [" + batch + ", " +
                         st + "] or [" + batch + ", " + std::to_string(heads) +
                         ", " + st + "], but this is " +
                         getElementTypeName(bias->elementType).str() +
                         shapeToString(b));
      ok = false;
      continue;
    }
    if (once(*bias, "bias"))
      call.namedOperands.push_back({"bias", std::move(bias)});
  }
  return ok;
}

/// `embedding(ids, W)`: rows of the [V, D] table W (or P.weight) picked by
/// the i32 ids; the result is the ids' shape with D appended.
ExprPtr Sema::checkEmbedding(CallExpr &call, CallArgs &args) {
  ExprPtr ids = checkValue(std::move(args.positional[0]->value));
  Expr &tableArg = *args.positional[1]->value;
  WeightDecl *table = nullptr;
  if (auto *name = llvm::dyn_cast<NameExpr>(&tableArg)) {
    table = weights.lookup(name->name);
    if (!table)
      table = weights.lookup(name->name + ".weight");
    if (table)
      table->used = true;
    else
      reportUnknownWeight(*name, "'embedding'", /*prefixOnly=*/false);
  } else {
    errorAt(tableArg, "the second argument of 'embedding' must be a weight "
                      "or a module prefix");
  }
  if (!ids || !table)
    return nullptr;
  if (ids->elementType != ElementType::i32) {
    errorAt(*ids, "'embedding' takes i32 ids, but this is f32" +
                      shapeToString(ids->shape));
    return nullptr;
  }
  const Shape &t = table->type.shape;
  if (t.size() != 2) {
    errorAt(tableArg, "the table of 'embedding' must be 2-D [rows, features], "
                      "but '" +
                          table->name + "' is " + shapeToString(t));
    return nullptr;
  }
  if (table->hasLayoutClause) {
    errorAt(tableArg, "an embedding table is [rows, features]; drop the "
                      "layout clause of '" +
                          table->name + "'");
    return nullptr;
  }
  auto embed = std::make_unique<BuiltinExpr>("embedding", call.getRange());
  embed->shape = ids->shape;
  embed->shape.push_back(t[1]);
  embed->operands.push_back(std::move(ids));
  embed->weights.push_back({"table", table});
  return embed;
}

/// `positions(S)`: 0 .. S-1 as i32[S], as `torch.arange(S)`. The extent is
/// taken from an input that has dim S (inputs are what bind dims).
ExprPtr Sema::checkPositions(CallExpr &call, CallArgs &args) {
  Expr &arg = *args.positional[0]->value;
  auto *name = llvm::dyn_cast<NameExpr>(&arg);
  DimDecl *dim = name ? dims.lookup(name->name) : nullptr;
  if (!dim) {
    std::string suggestion =
        name ? didYouMean(closestName(name->name, dims.keys())) : "";
    errorAt(arg, "the argument of 'positions' must be a declared dim, such as "
                 "'positions(S)'" +
                     suggestion);
    return nullptr;
  }
  for (const InputDecl *input : model.getInputs())
    for (auto [d, extent] : llvm::enumerate(input->type.shape)) {
      if (extent.name != dim->name)
        continue;
      auto positions =
          std::make_unique<BuiltinExpr>("positions", call.getRange());
      positions->elementType = ElementType::i32;
      Extent e;
      e.dim = dim;
      e.name = dim->name;
      positions->shape.push_back(e);
      // The input lends its extent only; its data is never read.
      auto ref =
          std::make_unique<ValueRefExpr>(input->name, input, arg.getRange());
      ref->elementType = input->type.elementType;
      ref->shape = input->type.shape;
      positions->operands.push_back(std::move(ref));
      positions->attrs.push_back({"dim", BuiltinAttr::getInteger(d)});
      return positions;
    }
  errorAt(arg, "no input has dim '" + dim->name +
                   "', so its extent is unknown when the model runs; "
                   "declare an input with it, such as 'input ids : i32[B, " +
                   dim->name + "]'");
  return nullptr;
}

/// `sinusoidal(p, D)`: the encoding of Vaswani et al. of i32 positions of
/// any shape, with D (even) features appended.
ExprPtr Sema::checkSinusoidal(CallExpr &call, CallArgs &args) {
  ExprPtr positions = checkValue(std::move(args.positional[0]->value));
  Expr &featuresArg = *args.positional[1]->value;
  auto *number = llvm::dyn_cast<NumberExpr>(&featuresArg);
  // The frequencies are a table in the kernel: a bound keeps it small.
  constexpr int64_t kMaxFeatures = int64_t(1) << 20;
  bool validFeatures = number && number->isInteger && number->intValue > 0 &&
                       number->intValue <= kMaxFeatures &&
                       number->intValue % 2 == 0;
  if (!validFeatures)
    errorAt(featuresArg, "the feature count of 'sinusoidal' must be an even "
                         "integer in 2.." +
                             llvm::Twine(kMaxFeatures) + ", such as 512");
  if (!positions || !validFeatures)
    return nullptr;
  if (positions->elementType != ElementType::i32) {
    errorAt(*positions, "'sinusoidal' takes i32 positions, such as "
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

/// `dropout(x, p)` is the identity at inference, as in PyTorch's eval mode;
/// `p` must still be a probability.
ExprPtr Sema::checkDropout(CallExpr &call, CallArgs &args) {
  ExprPtr x = checkActivationInput(*args.positional[0], "dropout");
  Expr &p = *args.positional[1]->value;
  auto *number = llvm::dyn_cast<NumberExpr>(&p);
  if (!number || number->value < 0 || number->value >= 1) {
    errorAt(p, "the dropout probability must be a number in [0, 1), such as "
               "0.1");
    return nullptr;
  }
  return x;
}

/// The `heads = H` of an attention: a positive divisor of d_model (when that
/// is known, >= 0), or 0 after reporting an error.
int64_t Sema::checkHeads(CallExpr &call, CallArgs &args, int64_t modelDim) {
  Argument *arg = args.get("heads");
  if (!arg) {
    error(call.calleeLoc.Start,
          "'" + call.callee + "' requires 'heads = N' (the number of heads)",
          call.getRange());
    return 0;
  }
  auto *number = llvm::dyn_cast<NumberExpr>(arg->value.get());
  if (!number || !number->isInteger || number->intValue <= 0) {
    errorAt(*arg->value, "'heads' must be a positive integer");
    return 0;
  }
  if (modelDim > 0 && modelDim % number->intValue != 0) {
    errorAt(*arg->value, "d_model " + llvm::Twine(modelDim) +
                             " is not divisible by heads = " +
                             llvm::Twine(number->intValue));
    return 0;
  }
  return number->intValue;
}

/// The required `out = P` of an attention, [d_model, d_model].
bool Sema::resolveOutProjection(CallExpr &call, CallArgs &args,
                                int64_t modelDim, BuiltinExpr &attn) {
  if (Argument *out = args.get("out"))
    return resolveProjection(*out, modelDim, modelDim, attn);
  error(call.calleeLoc.Start,
        "'" + call.callee + "' requires 'out = P' (the output projection)",
        call.getRange());
  return false;
}

/// The argument's value if it is a positive finite number, else null.
static const NumberExpr *positiveNumber(const Argument &arg) {
  auto *number = llvm::dyn_cast<NumberExpr>(arg.value.get());
  if (!number || !(number->value > 0) || !std::isfinite(number->value))
    return nullptr;
  return number;
}

/// `name = X` with X a positive number, recorded as the real attribute
/// `name`; `example` completes the error ("such as ...").
bool Sema::checkPositiveAttr(CallArgs &args, llvm::StringRef name,
                             llvm::StringRef example, BuiltinExpr &attn) {
  Argument *arg = args.get(name);
  if (!arg)
    return true;
  const NumberExpr *number = positiveNumber(*arg);
  if (!number) {
    errorAt(*arg->value,
            "'" + name + "' must be a positive number, such as " + example);
    return false;
  }
  attn.attrs.push_back({name.str(), BuiltinAttr::getReal(number->value)});
  return true;
}

/// `scale = X`: the factor of the scores in place of the default (1 /
/// sqrt(head dim) for dot products), recorded as the attribute "scale".
bool Sema::checkScale(CallArgs &args, BuiltinExpr &attn) {
  return checkPositiveAttr(
      args, "scale", "1 or 0.125 (the default is 1 / sqrt(head dim))", attn);
}

/// `kv_heads = K` (grouped-query attention): K key/value heads shared by
/// heads / K query heads each. Returns K (`heads` when not given), or 0
/// after reporting an error.
int64_t Sema::checkKvHeads(CallArgs &args, int64_t heads) {
  Argument *arg = args.get("kv_heads");
  if (!arg)
    return heads;
  auto *number = llvm::dyn_cast<NumberExpr>(arg->value.get());
  if (!number || !number->isInteger || number->intValue <= 0) {
    errorAt(*arg->value, "'kv_heads' must be a positive integer dividing "
                         "heads = " +
                             llvm::Twine(heads));
    return 0;
  }
  int64_t k = number->intValue;
  if (k > heads || heads % k != 0) {
    errorAt(*arg->value,
            "kv_heads = " + llvm::Twine(k) +
                (k > heads ? " is more than heads = "
                           : " does not divide heads = ") +
                llvm::Twine(heads) +
                "; each key/value head serves heads / kv_heads query heads");
    return 0;
  }
  return k;
}

/// `rope = half | interleaved` and `rope_theta = X` (default 10000):
/// rotary embeddings of the queries and keys, recorded as the attributes
/// "rope" (an enumerator) and "rope_theta".
bool Sema::checkRope(CallArgs &args, BuiltinExpr &attn, int64_t headDim) {
  Argument *style = args.get("rope"), *theta = args.get("rope_theta");
  bool ok = true;
  if (style) {
    auto *name = llvm::dyn_cast<NameExpr>(style->value.get());
    if (!name || (name->name != "half" && name->name != "interleaved")) {
      errorAt(*style->value,
              "'rope' is half (rotate_half: Llama, Mistral, Qwen, GPT-NeoX) or "
              "interleaved (GPT-J's pairs 2i, 2i+1)");
      ok = false;
    } else if (headDim % 2 != 0) {
      errorAt(*style->value, "rotary embeddings rotate pairs of features, but "
                             "the head dim is " +
                                 llvm::Twine(headDim) + " (odd)");
      ok = false;
    } else {
      attn.attrs.push_back({"rope", BuiltinAttr::getEnum(name->name)});
    }
  }
  if (theta) {
    const NumberExpr *number = positiveNumber(*theta);
    if (!style) {
      errorAt(*theta->value, "'rope_theta' needs 'rope = half' or 'rope = "
                             "interleaved'");
      ok = false;
    } else if (!number) {
      errorAt(*theta->value, "'rope_theta' must be a positive number, such as "
                             "10000 (the default) or 1e6");
      ok = false;
    } else {
      attn.attrs.push_back({"rope_theta", BuiltinAttr::getReal(number->value)});
    }
  }
  return ok;
}

/// `softcap = C`: scores become C * tanh(score / C) (Gemma 2's
/// attn_logit_softcapping), recorded as the attribute "softcap".
bool Sema::checkSoftcap(CallArgs &args, BuiltinExpr &attn) {
  return checkPositiveAttr(args, "softcap",
                           "50 (Gemma 2's attn_logit_softcapping)", attn);
}

/// The weight `P.weight` (or nn.MultiheadAttention's `P_weight`) of a
/// projection argument, or null.
static WeightDecl *
projectionWeight(const llvm::StringMap<WeightDecl *> &weights,
                 const Argument &arg) {
  auto *name = llvm::dyn_cast<NameExpr>(arg.value.get());
  if (!name)
    return nullptr;
  if (WeightDecl *w = weights.lookup(name->name + ".weight"))
    return w;
  return weights.lookup(name->name + "_weight");
}

/// `attention(q, k, v, ...)` on tensors already projected: q [.., S, Dq],
/// k [.., T, Dk], v [.., T, Dv] (one batch), the result [.., S, Dv]. The
/// score of a query and a key is
///   dot       q . k, scaled by 1 / sqrt(Dq / heads) (Dk = Dq);
///   general   q . (W k + b) with `w = P`, P.weight [Dq, Dk] (Luong);
///   additive  w_s . tanh(Wq q + Wk k) with `w_query`, `w_key` [A, D] and
///             `w_score` an nn.Linear(A, 1) (Bahdanau; its bias shifts every
///             score alike, which softmax ignores).
/// General and additive scores are not scaled (scale 1) unless `scale = X`.
ExprPtr Sema::checkAttention(CallExpr &call, CallArgs &args) {
  ExprPtr q = checkActivationInput(*args.positional[0], "attention");
  ExprPtr k = checkActivationInput(*args.positional[1], "attention");
  ExprPtr v = checkActivationInput(*args.positional[2], "attention");
  int64_t dq = -1, dk = -1, dv = -1;
  if (q && !getFeatureDim(*q, "attention", dq))
    q = nullptr;
  if (k && !getFeatureDim(*k, "attention", dk))
    k = nullptr;
  if (v && !getFeatureDim(*v, "attention", dv))
    v = nullptr;
  if (!q || !k || !v)
    return nullptr;
  const Shape &qs = q->shape, &ks = k->shape, &vs = v->shape;
  bool sameBatch = qs.size() >= 2 && ks.size() == qs.size() &&
                   vs.size() == qs.size() &&
                   std::equal(qs.begin(), qs.end() - 2, ks.begin()) &&
                   std::equal(qs.begin(), qs.end() - 2, vs.begin()) &&
                   ks[ks.size() - 2] == vs[vs.size() - 2];
  if (!sameBatch) {
    errorAt(*k, "the queries, keys and values of 'attention' must share "
                "their batch dims, and keys and values their sequence dim, "
                "but they are " +
                    shapeToString(qs) + ", " + shapeToString(ks) + " and " +
                    shapeToString(vs));
    return nullptr;
  }
  auto attn = std::make_unique<BuiltinExpr>("attention", call.getRange());
  int64_t heads = 1;
  if (args.get("heads") && !(heads = checkHeads(call, args, dq)))
    return nullptr;
  int64_t kvHeads = checkKvHeads(args, heads);
  if (!kvHeads)
    return nullptr;
  if (dv % kvHeads != 0) {
    errorAt(*v, "the values' " + llvm::Twine(dv) +
                    " features are not divisible by " +
                    (kvHeads == heads ? "heads = " : "kv_heads = ") +
                    llvm::Twine(kvHeads));
    return nullptr;
  }
  std::string score = "dot";
  if (Argument *arg = args.get("score")) {
    auto *name = llvm::dyn_cast<NameExpr>(arg->value.get());
    if (!name || (name->name != "dot" && name->name != "general" &&
                  name->name != "additive")) {
      errorAt(*arg->value, "a score is dot (q . k), general (Luong: q . W k) "
                           "or additive (Bahdanau: v . tanh(Wq q + Wk k))");
      return nullptr;
    }
    score = name->name;
  }
  bool ok = true;
  // Each score's weights, and only those.
  auto misplaced = [&](llvm::StringRef argName, llvm::StringRef owner) {
    if (Argument *arg = args.get(argName)) {
      errorAt(*arg->value, "'" + argName + "' belongs to 'score = " + owner +
                               "', but the score is " + score);
      ok = false;
    }
  };
  auto needs = [&](llvm::StringRef argName, llvm::StringRef what) {
    Argument *arg = args.get(argName);
    if (!arg) {
      error(call.calleeLoc.Start,
            "'score = " + score + "' needs '" + argName + " = P' (" + what +
                ")",
            call.getRange());
      ok = false;
    }
    return arg;
  };
  if (score != "general")
    misplaced("w", "general");
  if (score != "additive")
    for (llvm::StringRef name : {"w_query", "w_key", "w_score"})
      misplaced(name, "additive");
  if (kvHeads != heads && score != "dot") {
    errorAt(*args.get("kv_heads")->value,
            "grouped-query attention ('kv_heads') needs score = dot");
    ok = false;
  } else if (score == "dot" && kvHeads != heads &&
             dk != kvHeads * (dq / heads)) {
    errorAt(*k, "with kv_heads = " + llvm::Twine(kvHeads) + " heads of " +
                    llvm::Twine(dq / heads) + " features the keys need " +
                    llvm::Twine(kvHeads * (dq / heads)) +
                    " features, but they have " + llvm::Twine(dk));
    ok = false;
  } else if (score == "dot" && kvHeads == heads && dq != dk) {
    errorAt(*k, "dot-product scores need keys with the queries' " +
                    llvm::Twine(dq) + " features, but they have " +
                    llvm::Twine(dk) + "; project them, or use score = general");
    ok = false;
  } else if (score == "general") {
    if (Argument *w = needs("w", "the [Dq, Dk] matrix of q . W k"))
      ok &= resolveProjection(*w, dk, dq, *attn, "the keys' features");
  } else if (score == "additive") {
    if (heads != 1) {
      errorAt(*args.get("heads")->value,
              "an additive score is computed over whole vectors: use "
              "heads = 1");
      ok = false;
    }
    Argument *wq = needs("w_query", "the [A, Dq] projection of the queries");
    Argument *wk = needs("w_key", "the [A, Dk] projection of the keys");
    Argument *ws = needs("w_score", "an nn.Linear(A, 1) reducing tanh(...) "
                                    "to a score");
    if (wq && wk && ws) {
      WeightDecl *qw = projectionWeight(weights, *wq);
      int64_t a = qw && qw->type.shape.size() == 2 ? qw->getOutFeatures() : -1;
      ok &= resolveProjection(*wq, dq, a, *attn, "the queries' features");
      ok &= resolveProjection(*wk, dk, a, *attn, "the keys' features");
      ok &=
          resolveProjection(*ws, a, 1, *attn, "the additive score's features");
    }
  }
  if (Argument *mask = args.get("mask")) {
    ok &= resolveMask(mask->value, *attn, qs, ks[ks.size() - 2], heads);
    // Causal and window terms compare query and key positions, which only
    // means something when both run along one sequence dim.
    bool positional = attn->getAttr("causal") || attn->getAttr("window_left") ||
                      attn->getAttr("alibi");
    if (positional && qs[qs.size() - 2] != ks[ks.size() - 2]) {
      errorAt(*mask->value,
              "'causal', 'window' and 'alibi' compare query and key "
              "positions, but the "
              "queries run along " +
                  extentToString(qs[qs.size() - 2]) + " and the keys along " +
                  extentToString(ks[ks.size() - 2]) +
                  "; use padding(lengths) or an additive tensor");
      ok = false;
    }
  }
  ok &= checkScale(args, *attn);
  ok &= checkSoftcap(args, *attn);
  if (!ok)
    return nullptr;
  attn->attrs.insert(attn->attrs.begin(),
                     {"heads", BuiltinAttr::getInteger(heads)});
  attn->attrs.push_back({"score", BuiltinAttr::getEnum(score)});
  if (kvHeads != heads)
    attn->attrs.push_back({"kv_heads", BuiltinAttr::getInteger(kvHeads)});
  attn->shape = qs;
  attn->shape.back() = Extent::fixed(heads * (dv / kvHeads));
  attn->operands.push_back(std::move(q));
  attn->operands.push_back(std::move(k));
  attn->operands.push_back(std::move(v));
  return attn;
}

/// `cross_attention(x, memory, ...)`: queries from x [.., S, D], keys and
/// values from memory [.., T, Dm] (same batch dims, its own sequence dim);
/// q and out are [D, D], k and v [D, Dm] (kv packed: [2D, Dm]).
ExprPtr Sema::checkCrossAttention(CallExpr &call, CallArgs &args) {
  ExprPtr x = checkActivationInput(*args.positional[0], "cross_attention");
  ExprPtr memory = checkActivationInput(*args.positional[1], "cross_attention");
  int64_t modelDim = -1, memoryDim = -1;
  if (x && !getFeatureDim(*x, "cross_attention", modelDim))
    x = nullptr;
  if (memory && !getFeatureDim(*memory, "cross_attention", memoryDim))
    memory = nullptr;
  if (x && memory) {
    const Shape &a = x->shape, &m = memory->shape;
    bool sameBatch =
        a.size() == m.size() && std::equal(a.begin(), a.end() - 2, m.begin());
    if (!sameBatch) {
      errorAt(*memory,
              "the memory of 'cross_attention' must have the batch dims of "
              "its queries and its own sequence dim, " +
                  shapeToString(Shape(a.begin(), a.end() - 2)) +
                  " then [T, features], but the queries are " +
                  shapeToString(a) + " and the memory " + shapeToString(m));
      memory = nullptr;
    }
  }
  int64_t heads = checkHeads(call, args, modelDim);
  bool ok = x && memory && heads > 0;

  auto attn = std::make_unique<BuiltinExpr>("cross_attention", call.getRange());
  Argument *q = args.get("q"), *kv = args.get("kv"), *k = args.get("k"),
           *v = args.get("v"), *qkv = args.get("qkv");
  if (qkv && (q || kv || k || v)) {
    error(qkv->nameLoc.Start,
          "give 'cross_attention' either 'qkv' (packed) or 'q' and 'kv' (or "
          "'k' and 'v'), not both",
          qkv->nameLoc);
    ok = false;
  } else if (qkv) {
    // nn.MultiheadAttention's in_proj: rows [0, D) project the queries, rows
    // [D, 3D) the memory's keys and values, so both have D features.
    ok &= resolveProjection(*qkv, modelDim, modelDim < 0 ? -1 : 3 * modelDim,
                            *attn);
    if (ok && memoryDim != modelDim) {
      errorAt(*qkv->value, "a packed 'qkv' projects the queries and the "
                           "memory with one matrix, so both need d_model " +
                               llvm::Twine(modelDim) +
                               " features, but the memory has " +
                               llvm::Twine(memoryDim) +
                               "; give 'q' and 'kv' (or 'k' and 'v')");
      ok = false;
    }
  } else if (q) {
    ok &= resolveProjection(*q, modelDim, modelDim, *attn);
  } else {
    error(call.calleeLoc.Start,
          "'cross_attention' requires 'q = P' (the query projection), or "
          "'qkv = P' (packed, as nn.MultiheadAttention's in_proj)",
          call.getRange());
    ok = false;
  }
  int64_t kvOut = modelDim < 0 ? -1 : 2 * modelDim;
  if (qkv) {
    // The packed projection has them.
  } else if (kv && (k || v)) {
    error(kv->nameLoc.Start,
          "give either 'kv' or 'k' and 'v' to 'cross_attention', not both",
          kv->nameLoc);
    ok = false;
  } else if (kv) {
    ok &= resolveProjection(*kv, memoryDim, kvOut, *attn,
                            "the memory's features");
  } else if (k && v) {
    ok &= resolveProjection(*k, memoryDim, modelDim, *attn,
                            "the memory's features");
    ok &= resolveProjection(*v, memoryDim, modelDim, *attn,
                            "the memory's features");
  } else {
    error(call.calleeLoc.Start,
          "'cross_attention' needs its key and value projections: 'kv = P' "
          "(packed, K then V) or 'k = P, v = P'",
          call.getRange());
    ok = false;
  }
  ok &= resolveOutProjection(call, args, modelDim, *attn);
  ok &= checkScale(args, *attn);
  ok &= checkSoftcap(args, *attn);
  if (Argument *rope = args.get("rope")) {
    errorAt(*rope->value,
            "'cross_attention' takes no rotary embeddings: they rotate "
            "queries and keys by their positions, which are in different "
            "sequences here; rotate the memory's keys where they are "
            "computed");
    ok = false;
  }
  if (Argument *mask = args.get("mask"); mask && x && memory) {
    ok &= resolveMask(mask->value, *attn, x->shape,
                      memory->shape[memory->shape.size() - 2], heads);
    // Positions of the queries and of the memory are unrelated: a causal or
    // window term would compare them as if they were one sequence.
    for (llvm::StringRef term : {"causal", "window_left", "alibi"})
      if (attn->getAttr(term)) {
        errorAt(*mask->value,
                "'cross_attention' masks only the memory: " +
                    llvm::StringRef(term == "causal"  ? "'causal'"
                                    : term == "alibi" ? "'alibi'"
                                                      : "'window'") +
                    " compares query and key positions, which are in "
                    "different sequences; use padding(lengths) or an "
                    "additive tensor");
        ok = false;
        break;
      }
  }
  if (!ok)
    return nullptr;
  attn->shape = x->shape;
  attn->operands.push_back(std::move(x));
  attn->operands.push_back(std::move(memory));
  attn->attrs.insert(attn->attrs.begin(),
                     {"heads", BuiltinAttr::getInteger(heads)});
  return attn;
}

ExprPtr Sema::checkSelfAttention(CallExpr &call, CallArgs &args) {
  ExprPtr x = checkActivationInput(*args.positional[0], "self_attention");
  int64_t modelDim = -1;
  if (x && !getFeatureDim(*x, "self_attention", modelDim))
    x = nullptr;
  int64_t heads = checkHeads(call, args, modelDim);
  bool ok = x != nullptr && heads > 0;
  int64_t kvHeads = heads > 0 ? checkKvHeads(args, heads) : 0;
  ok &= kvHeads > 0;
  // Keys and values: kv_heads heads of the queries' head dim.
  int64_t kvDim = ok ? kvHeads * (modelDim / heads) : -1;
  std::string kvWhat = "d_model";
  if (ok && kvHeads != heads)
    kvWhat = "kv_heads = " + std::to_string(kvHeads) + " heads of " +
             std::to_string(modelDim / heads) + " features from d_model";

  auto attn = std::make_unique<BuiltinExpr>("self_attention", call.getRange());
  Argument *qkv = args.get("qkv");
  Argument *separate[] = {args.get("q"), args.get("k"), args.get("v")};
  unsigned numSeparate =
      llvm::count_if(separate, [](Argument *a) { return a != nullptr; });
  if (qkv && numSeparate) {
    error(qkv->nameLoc.Start,
          "give either 'qkv' or 'q', 'k' and 'v' to 'self_attention', not "
          "both",
          qkv->nameLoc);
    ok = false;
  } else if (qkv) {
    ok &= resolveProjection(
        *qkv, modelDim, kvDim < 0 ? -1 : modelDim + 2 * kvDim, *attn, kvWhat);
  } else if (numSeparate == 3) {
    ok &= resolveProjection(*separate[0], modelDim, modelDim, *attn);
    for (Argument *arg : {separate[1], separate[2]})
      ok &= resolveProjection(*arg, modelDim, kvDim, *attn, kvWhat);
  } else if (numSeparate) {
    const llvm::StringRef names[] = {"q", "k", "v"};
    std::vector<llvm::StringRef> missing;
    for (auto [arg, name] : llvm::zip(separate, names))
      if (!arg)
        missing.push_back(name);
    error(call.calleeLoc.Start,
          "'self_attention' is missing '" + llvm::join(missing, "', '") +
              "'; separate projections need all of 'q', 'k' and 'v'",
          call.getRange());
    ok = false;
  } else {
    error(call.calleeLoc.Start,
          "'self_attention' needs its projections: 'qkv = P' (packed) or "
          "'q = P, k = P, v = P'",
          call.getRange());
    ok = false;
  }

  ok &= resolveOutProjection(call, args, modelDim, *attn);

  if (Argument *mask = args.get("mask"); mask && x)
    ok &= resolveMask(mask->value, *attn, x->shape,
                      x->shape[x->shape.size() - 2], heads);
  ok &= checkScale(args, *attn);
  ok &= checkSoftcap(args, *attn);
  if (heads > 0 && modelDim > 0)
    ok &= checkRope(args, *attn, modelDim / heads);
  if (Argument *cache = args.get("cache"); cache && x) {
    // With kv_heads the cache rows hold kv_heads heads of keys.
    ok &= resolveCache(*cache, *x, kvDim > 0 ? kvDim : modelDim, *attn);
    if (attn->getNamedOperand("lengths") || attn->getNamedOperand("bias")) {
      error(cache->nameLoc.Start,
            "an attention with a KV cache takes no padding or additive mask "
            "(decoding attends over the cache's rows)",
            cache->nameLoc);
      ok = false;
    }
  }

  if (!ok)
    return nullptr;
  attn->shape = x->shape;
  attn->operands.push_back(std::move(x));
  attn->attrs.insert(attn->attrs.begin(),
                     {"heads", BuiltinAttr::getInteger(heads)});
  if (kvHeads != heads)
    attn->attrs.push_back({"kv_heads", BuiltinAttr::getInteger(kvHeads)});
  return attn;
}

/// `a, w = self_attention(...)`: `w` is the attention weights, [batch...,
/// heads, S, S], which the call then computes.
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
  bool self = call->builtin == "self_attention";
  if (!self && call->builtin != "cross_attention" &&
      call->builtin != "attention") {
    error(result.nameLoc.Start,
          "'" + call->builtin +
              "' has one result; only self_attention, cross_attention and "
              "attention have a second one, their attention weights ('a, w "
              "= self_attention(...)')",
          result.nameLoc);
    result.invalid = true;
    return;
  }
  if (call->getState("key")) {
    error(result.nameLoc.Start,
          "an attention with a KV cache has no weights result: its keys "
          "are the cache's rows when decoding",
          result.nameLoc);
    result.invalid = true;
    return;
  }
  call->attrs.push_back({"weights", BuiltinAttr::getInteger(1)});
  // [batch..., heads, S, S], or [batch..., heads, S, T] over a memory's (or
  // the keys') sequence.
  const Shape &x = call->shape;
  const Shape &keys = self ? x : call->operands[1]->shape;
  result.elementType = ElementType::f32;
  result.shape.assign(x.begin(), x.end() - 2);
  result.shape.push_back(Extent::fixed(call->getAttr("heads")->integer));
  result.shape.push_back(x[x.size() - 2]);
  result.shape.push_back(keys[keys.size() - 2]);
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
                       llvm::ArrayRef<std::string> functions) {
  return Sema(model, diags, functions).run();
}
