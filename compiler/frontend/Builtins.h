//===- compiler/frontend/Builtins.h - The language's builtins ---*- C++ -*-===//
//
// Part of attnc. A builtin is described once, in the file of its family
// under compiler/frontend/builtins/: its signature (positional arity, a
// usage line for errors, and each named argument with its kind and default),
// the check that turns a call of it into a BuiltinExpr, and the emission of
// that BuiltinExpr as attn ops. The families register their builtins in a
// BuiltinRegistry; Sema checks calls and MLIRGen emits them through it, and
// neither knows any builtin by name.
//
// This header is free of MLIR: the checker (AttnFrontend) uses it without the
// dialect, and the emit hooks only name mlir::Value and EmitContext.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_BUILTINS_H
#define ATTNC_COMPILER_FRONTEND_BUILTINS_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Diagnostics.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mlir {
class Value;
} // namespace mlir

namespace attnc {

class EmitContext; // compiler/frontend/EmitContext.h

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
/// "; did you mean 'S'?", or "" when `suggestion` is empty.
std::string didYouMean(llvm::StringRef suggestion);

/// What the value of a named argument must be. sortArgs checks it before
/// the builtin's check runs, which reads it with CallArgs' typed accessors.
enum class ArgKind {
  number,          ///< a number, finite as an f32: `offset = 1`
  positiveNumber,  ///< a number > 0, finite as an f32: `eps = 1e-5`
  positiveInteger, ///< an integer >= 1: `heads = 12`
  choice,          ///< one of a fixed set of names: `rope = half`
  modulePrefix,    ///< P of the weights P.weight and P.bias: `out = c_proj`
  statePrefix,     ///< P of the states P.key and P.value: `cache = layer0`
  mask,            ///< mask terms joined by '&', checked by the builtin
  integer,         ///< any integer, range-checked by the builtin: `start = 0`
  dimension,       ///< a declared dim or an index: `dim = S`, `dim = -1`
};

/// A name an ArgKind::choice argument may be, and what it means ("" when
/// the name says it).
struct ArgChoice {
  std::string name;
  std::string meaning;
};

/// A number, an integer or a choice's name.
using ArgValue = std::variant<double, int64_t, std::string>;

/// One named argument in a builtin's signature. Left out, it is an error
/// when `required`; else its `defaultValue` when it has one; else absent,
/// which the builtin's check sees as a null `args.get(name)`.
struct NamedArg {
  std::string name;
  ArgKind kind;
  /// For numbers and integers: the values an error suggests ("1e-5").
  std::string example;
  std::vector<ArgChoice> choices;
  bool required = false;
  /// For a required argument: what it is ("the number of heads").
  std::string meaning;
  std::optional<ArgValue> defaultValue;

  static NamedArg number(std::string name, std::string example) {
    return of(std::move(name), ArgKind::number, std::move(example));
  }
  static NamedArg positiveNumber(std::string name, std::string example) {
    return of(std::move(name), ArgKind::positiveNumber, std::move(example));
  }
  static NamedArg positiveInteger(std::string name, std::string example) {
    return of(std::move(name), ArgKind::positiveInteger, std::move(example));
  }
  static NamedArg choice(std::string name, std::vector<ArgChoice> choices) {
    NamedArg arg = of(std::move(name), ArgKind::choice);
    arg.choices = std::move(choices);
    return arg;
  }
  static NamedArg modulePrefix(std::string name) {
    return of(std::move(name), ArgKind::modulePrefix);
  }
  static NamedArg statePrefix(std::string name) {
    return of(std::move(name), ArgKind::statePrefix);
  }
  static NamedArg mask(std::string name) {
    return of(std::move(name), ArgKind::mask);
  }
  static NamedArg integer(std::string name, std::string example) {
    return of(std::move(name), ArgKind::integer, std::move(example));
  }
  static NamedArg dimension(std::string name) {
    return of(std::move(name), ArgKind::dimension);
  }
  /// The argument, which is `value` when left out: a double for a number,
  /// an int64_t for an integer, a string for a choice.
  NamedArg byDefault(ArgValue value) const;
  /// The argument, which must be given; `meaning` says what it is.
  NamedArg requiredAs(std::string meaning) const;

private:
  static NamedArg of(std::string name, ArgKind kind, std::string example = "");
};

struct Builtin;

/// The arguments of one call, sorted into positional and named ones, the
/// named ones checked against their builtin's signature (sortArgs).
struct CallArgs {
  const Builtin *builtin = nullptr;
  llvm::SmallVector<Argument *, 3> positional;
  llvm::StringMap<Argument *> named;

  /// The named argument `name` as given, or null. The builtin must declare
  /// `name`, as for the accessors below.
  Argument *get(llvm::StringRef name) const;
  /// The value of a number, integer or choice argument: as given, else its
  /// default; it must have one of the two.
  double number(llvm::StringRef name) const;
  int64_t integer(llvm::StringRef name) const;
  llvm::StringRef choice(llvm::StringRef name) const;

private:
  const NamedArg &declaration(llvm::StringRef name) const;
};

/// What a builtin's check sees of Sema: the declarations and values in
/// scope, value checking, and the diagnostics; plus the checks that builtins
/// share (an f32 input, a fixed feature size, a weight or projection of the
/// right shape). Sema owns the scopes and fills them in.
class CheckContext {
public:
  CheckContext(ModelAST &model, DiagnosticEngine &diags)
      : model(model), diags(diags) {}
  virtual ~CheckContext() = default;

  /// Checks a value argument: a name, an operator or a nested call.
  virtual ExprPtr checkValue(ExprPtr expr) = 0;
  /// Whether a model may call `name` for a value (a builtin or function).
  virtual bool isCallable(llvm::StringRef name) const = 0;

  const ModelAST &getModel() const { return model; }
  DiagnosticEngine &getDiags() { return diags; }
  WeightDecl *getWeight(llvm::StringRef name) const {
    return weights.lookup(name);
  }
  StateDecl *getState(llvm::StringRef name) const {
    return states.lookup(name);
  }
  DimDecl *getDim(llvm::StringRef name) const { return dims.lookup(name); }
  const llvm::StringMap<DimDecl *> &getDims() const { return dims; }
  /// Whether `name` is a value in scope.
  bool isValue(llvm::StringRef name) const { return values.count(name); }

  void error(llvm::SMLoc loc, const llvm::Twine &msg,
             llvm::ArrayRef<llvm::SMRange> ranges = {}) {
    diags.error(loc, msg, ranges);
  }
  void errorAt(const Expr &expr, const llvm::Twine &msg) {
    diags.error(expr.getLoc(), msg, expr.getRange());
  }
  void note(llvm::SMLoc loc, const llvm::Twine &msg) { diags.note(loc, msg); }

  /// Checks `arg` as the f32 tensor input of `builtin`; null on an error.
  ExprPtr checkActivationInput(Argument &arg, llvm::StringRef builtin);
  /// The fixed last dim of `x` in `dim`; false (after an error, unless the
  /// dim was reported where it was written) when it is symbolic.
  bool getFeatureDim(const Expr &x, llvm::StringRef builtin, int64_t &dim);
  /// The weight `arg` names, marked used; null after an error.
  WeightDecl *lookupWeightArg(const Expr &arg, llvm::StringRef role);
  /// The table `arg` names: a weight W, or P.weight of a module prefix P
  /// (`embedding(ids, wte)`), marked used; null after an error naming
  /// `builtin`.
  WeightDecl *lookupTableArg(const Expr &arg, llvm::StringRef builtin);
  void reportUnknownWeight(const NameExpr &name, llvm::StringRef role,
                           bool prefixOnly);
  /// A projection `P` (`P.weight` [out, in], optional `P.bias` [out]) given
  /// as an ArgKind::modulePrefix argument, recorded on `call` as the weights
  /// `<arg>.weight` and `<arg>.bias`, and `<arg>.scales` for an i8 or i4 matrix
  /// (which only builtins that pass the scales on accept, see Sema); `in`
  /// < 0 when the input's features are unknown (an earlier error), `out` <
  /// 0 when any number of outputs will do.
  bool resolveProjection(Argument &arg, int64_t in, int64_t out,
                         BuiltinExpr &call, llvm::StringRef inWhat = "d_model");
  bool checkMatrix(const WeightDecl &weight, const Expr &at,
                   llvm::StringRef role, int64_t in, int64_t out,
                   llvm::StringRef inWhat);
  bool checkVector(const WeightDecl &weight, const Expr &at,
                   llvm::StringRef role, int64_t size, llvm::StringRef what);
  /// The scales of the quantized matrix `weight` (`out` outputs): the f32
  /// weight named as it with `_scale` appended, `[out]` for an i8 matrix
  /// (per output channel), the matrix's shape with `in` divided by the
  /// group size G for an i4 one (per group of G inputs); marked used; null
  /// after an error at `at`.
  WeightDecl *quantizationScales(const WeightDecl &weight, const Expr &at,
                                 int64_t out);
  /// The weight `P.weight` (or nn.MultiheadAttention's `P_weight`) of an
  /// ArgKind::modulePrefix argument, or null.
  WeightDecl *projectionWeight(const Argument &arg) const;

protected:
  ModelAST &model;
  DiagnosticEngine &diags;
  llvm::StringMap<DimDecl *> dims;
  llvm::StringMap<WeightDecl *> weights;
  llvm::StringMap<StateDecl *> states;
  /// The current definition of each value name.
  llvm::StringMap<ValueDecl *> values;
};

/// Checks a call whose arguments `sortArgs` has sorted and counted; returns
/// the resolved expression (usually a BuiltinExpr), or null after errors.
using CheckFn = ExprPtr (*)(CheckContext &ctx, CallExpr &call, CallArgs &args);
/// Emits a checked BuiltinExpr whose operands are already emitted.
using EmitFn = mlir::Value (*)(EmitContext &ctx, const BuiltinExpr &e,
                               llvm::ArrayRef<mlir::Value> operands);
/// For `a, w = call(...)`: checks that `call` can give a second result and
/// sets `result`'s type (and what `call` must then compute); false after an
/// error.
using SecondResultFn = bool (*)(CheckContext &ctx, BuiltinExpr &call,
                                ResultDecl &result);

/// One builtin of the language.
struct Builtin {
  std::string name;
  unsigned minPositional = 0, maxPositional = 0;
  /// Its positional forms, e.g. "linear(x, P) or linear(x, W, b)"; errors
  /// add the named arguments from `namedArgs` (describeSignature).
  std::string usage;
  std::vector<NamedArg> namedArgs;
  /// Null for the BuiltinExprs Sema makes of operators (`add`, `scale`),
  /// which cannot be called by name.
  CheckFn check = nullptr;
  EmitFn emit = nullptr;
  /// Null when the builtin has one result.
  SecondResultFn secondResult = nullptr;

  /// The declaration of the named argument `name`, or null.
  const NamedArg *findNamedArg(llvm::StringRef name) const;
};

/// The usage line of `builtin` with its named arguments, e.g.
/// "gelu(x), with approximate = none | tanh (default none)".
std::string describeSignature(const Builtin &builtin);

/// Sorts the arguments of `call` into `args`: checks their order and count,
/// that each named one is declared, given once, of its declared kind, and
/// that every required one is given; false after reporting errors.
bool sortArgs(CheckContext &ctx, CallExpr &call, const Builtin &builtin,
              CallArgs &args);

/// Every builtin, in registration order (the order errors list them in).
class BuiltinRegistry {
public:
  /// Registers `builtin`; its name must be new.
  void add(Builtin builtin);
  /// The builtin named `name` (callable or not), or null.
  const Builtin *lookup(llvm::StringRef name) const;
  /// The builtins a model may call, in registration order.
  std::vector<llvm::StringRef> getCallableNames() const;
  llvm::ArrayRef<Builtin> getBuiltins() const { return builtins; }

private:
  std::vector<Builtin> builtins;
  llvm::StringMap<unsigned> index;
};

/// Whether `e` is computed from weights alone: a weight named as an operand
/// of a tensor builtin (`slice`, `concat`, `transpose`, `reshape`), or one
/// of those of such operands. `linear` takes one as its matrix.
bool isWeightExpression(const Expr &e);

/// The language's builtins: every family below, then `functions` (the
/// dialect's functions of one tensor, MLIRGen's getDialectFunctions) that
/// no family defines.
BuiltinRegistry makeBuiltinRegistry(llvm::ArrayRef<std::string> functions);

// One per file under builtins/, registered in this order.
void registerLinearBuiltins(BuiltinRegistry &registry);
void registerNormBuiltins(BuiltinRegistry &registry);
void registerElementwiseBuiltins(BuiltinRegistry &registry);
void registerEmbeddingBuiltins(BuiltinRegistry &registry);
void registerPositionBiasBuiltins(BuiltinRegistry &registry);
void registerAttentionBuiltins(BuiltinRegistry &registry);
void registerTensorBuiltins(BuiltinRegistry &registry);
/// The dialect's functions of one tensor, `name(x)`, not yet registered.
void registerFunctionBuiltins(BuiltinRegistry &registry,
                              llvm::ArrayRef<std::string> functions);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_BUILTINS_H
