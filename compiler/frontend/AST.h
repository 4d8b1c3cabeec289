//===- AST.h - Syntax tree of the .attn language ----------------*- C++ -*-===//
//
// Part of attnc. The parser builds declarations and generic expressions
// (names, numbers, calls, `+ - *`); the semantic check (Sema) resolves every
// name and replaces each call and operator by a generic BuiltinExpr, so after
// a successful check every expression is a ValueRefExpr or a BuiltinExpr,
// carries its shape and element type, and points at the declarations it uses.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_AST_H
#define ATTNC_COMPILER_FRONTEND_AST_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

//===----------------------------------------------------------------------===//
// Dims, shapes, types
//===----------------------------------------------------------------------===//

/// `dim S <= 1024`: a symbolic extent bound at run time.
struct DimDecl {
  std::string name;
  llvm::SMRange loc;
  std::optional<int64_t> bound; ///< the `<= N` upper bound, if any
  llvm::SMRange boundLoc;
};

/// One extent of a shape: a fixed size or a declared dim (resolved by Sema).
struct Extent {
  int64_t size = 0;             ///< the fixed size when `dim` is null
  const DimDecl *dim = nullptr; ///< the symbolic dim, set by Sema
  std::string name;             ///< the dim's spelling in a written type
  llvm::SMRange loc;            ///< where it was written, if it was

  static Extent fixed(int64_t size) {
    Extent e;
    e.size = size;
    return e;
  }
  bool isSymbolic() const { return dim != nullptr || !name.empty(); }
  bool operator==(const Extent &other) const {
    if (isSymbolic() || other.isSymbolic())
      return dim != nullptr && dim == other.dim;
    return size == other.size;
  }
  bool operator!=(const Extent &other) const { return !(*this == other); }
};

using Shape = llvm::SmallVector<Extent, 4>;

/// bf16 and f16 are for weights only (kept in that precision, widened to f32
/// in registers); i8 for quantized linear matrices only (with per-output
/// scales), i4 for 4-bit ones (with a scale per group of inputs, stored two
/// per byte); inputs and activations are f32 or i32.
enum class ElementType { f32, i32, bf16, f16, i8, i4 };

llvm::StringRef getElementTypeName(ElementType type);
/// `S` or `768`.
std::string extentToString(const Extent &extent);
/// Prints `[B, S, 768]`.
void printShape(llvm::raw_ostream &os, llvm::ArrayRef<Extent> shape);
std::string shapeToString(llvm::ArrayRef<Extent> shape);

/// A written tensor type `f32[B, S, 768]`.
struct TensorType {
  ElementType elementType = ElementType::f32;
  Shape shape;
  llvm::SMRange loc;
};

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

/// How a 2-D weight is stored: PyTorch's `[out, in]` or `[in, out]`.
enum class WeightLayout { outIn, inOut };

/// `weight attn.c_attn.weight : f32[768, 2304] layout(in, out)`.
struct WeightDecl {
  std::string name; ///< the safetensors key
  llvm::SMRange loc;
  TensorType type;
  WeightLayout layout = WeightLayout::outIn;
  bool hasLayoutClause = false;
  llvm::SMRange layoutLoc;
  bool used = false; ///< set by Sema

  /// For a 2-D weight, the `in` and `out` extents under its layout.
  int64_t getInFeatures() const {
    return type.shape[layout == WeightLayout::outIn ? 1 : 0].size;
  }
  int64_t getOutFeatures() const {
    return type.shape[layout == WeightLayout::outIn ? 0 : 1].size;
  }
};

/// `state cache.0.key : f32[B, L, 256]`: a buffer the caller owns that
/// persists across runs (a KV cache), named as the runtime lists it.
struct StateDecl {
  std::string name;
  llvm::SMRange loc;
  TensorType type;
  bool used = false; ///< set by Sema
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class ValueDecl;

class Expr {
public:
  enum class Kind {
    // Parsed, unresolved forms. Sema replaces them.
    Name,
    Number,
    Call,
    Binary,
    List,
    // Resolved forms.
    ValueRef,
    Builtin,
  };

  virtual ~Expr() = default;
  Kind getKind() const { return kind; }
  llvm::SMRange getRange() const { return range; }
  llvm::SMLoc getLoc() const { return range.Start; }

  /// Inferred by Sema for resolved expressions.
  ElementType elementType = ElementType::f32;
  Shape shape;

protected:
  Expr(Kind kind, llvm::SMRange range) : kind(kind), range(range) {}

private:
  Kind kind;
  llvm::SMRange range;
};

using ExprPtr = std::unique_ptr<Expr>;

/// A (possibly qualified) name as written: a value, a weight, a module
/// prefix or an enumerator such as `causal`, depending on where it is used.
class NameExpr : public Expr {
public:
  NameExpr(std::string name, llvm::SMRange range)
      : Expr(Kind::Name, range), name(std::move(name)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }
  std::string name;
};

class NumberExpr : public Expr {
public:
  NumberExpr(double value, bool isInteger, int64_t intValue,
             llvm::SMRange range)
      : Expr(Kind::Number, range), value(value), isInteger(isInteger),
        intValue(intValue) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Number; }
  double value;
  bool isInteger;
  int64_t intValue; ///< valid when isInteger
};

/// `[e, ...]`: a list of extents, only as the shape argument of `reshape`.
class ListExpr : public Expr {
public:
  ListExpr(std::vector<ExprPtr> elements, llvm::SMRange range)
      : Expr(Kind::List, range), elements(std::move(elements)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::List; }
  std::vector<ExprPtr> elements;
};

/// One argument of a call: positional (empty name) or `name = value`.
struct Argument {
  std::string name;
  llvm::SMRange nameLoc;
  ExprPtr value;
  bool isNamed() const { return !name.empty(); }
};

class CallExpr : public Expr {
public:
  CallExpr(std::string callee, llvm::SMRange calleeLoc,
           std::vector<Argument> args, llvm::SMRange range)
      : Expr(Kind::Call, range), callee(std::move(callee)),
        calleeLoc(calleeLoc), args(std::move(args)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }
  std::string callee;
  llvm::SMRange calleeLoc;
  std::vector<Argument> args;
};

/// A use of a value: the input or assignment that is the latest definition of
/// the name above the use.
class ValueRefExpr : public Expr {
public:
  ValueRefExpr(std::string name, const ValueDecl *decl, llvm::SMRange range)
      : Expr(Kind::ValueRef, range), name(std::move(name)), decl(decl) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::ValueRef; }
  std::string name;
  const ValueDecl *decl;
};

/// `lhs + rhs`, `lhs - rhs` or `lhs * rhs` as written. Sema resolves it to
/// a BuiltinExpr (add, sub, mul, or scale when one side is a number).
class BinaryExpr : public Expr {
public:
  BinaryExpr(char op, ExprPtr lhs, ExprPtr rhs, llvm::SMLoc opLoc,
             llvm::SMRange range)
      : Expr(Kind::Binary, range), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)), opLoc(opLoc) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Binary; }
  char op; ///< '+', '-', '*' or '&' (masks)
  ExprPtr lhs, rhs;
  llvm::SMLoc opLoc; ///< the operator
};

/// A constant argument of a builtin: an integer, a real or an enumerator
/// (e.g. `heads = 12`, `eps = 1e-5`, `mask = causal`).
struct BuiltinAttr {
  enum class Kind { Integer, Real, Enum } kind;
  int64_t integer = 0;
  double real = 0;
  std::string enumerator;

  static BuiltinAttr getInteger(int64_t v) {
    return {Kind::Integer, v, double(v), {}};
  }
  static BuiltinAttr getReal(double v) { return {Kind::Real, 0, v, {}}; }
  static BuiltinAttr getEnum(std::string v) {
    return {Kind::Enum, 0, 0, std::move(v)};
  }
};

/// A checked call of a builtin, in one generic form for all of them (as
/// Toy keeps its calls generic): the tensor operands, the weights it reads
/// by role (`weight`, `bias`, `gamma`, `q.weight`, ...) and its constant
/// arguments by name. MLIRGen turns it into the builtin's op.
class BuiltinExpr : public Expr {
public:
  BuiltinExpr(std::string builtin, llvm::SMRange range)
      : Expr(Kind::Builtin, range), builtin(std::move(builtin)) {}
  static bool classof(const Expr *e) { return e->getKind() == Kind::Builtin; }

  /// The weight with `role`, or null.
  const WeightDecl *getWeight(llvm::StringRef role) const;
  /// The state with `role` (a self-attention's "key" and "value" caches),
  /// or null.
  const StateDecl *getState(llvm::StringRef role) const;
  /// The constant argument `name`, or null.
  const BuiltinAttr *getAttr(llvm::StringRef name) const;

  /// A tensor operand with a role, or null.
  const Expr *getNamedOperand(llvm::StringRef role) const;

  std::string builtin;
  std::vector<ExprPtr> operands;
  /// Optional tensor operands by role (an attention's `lengths`, `bias`).
  std::vector<std::pair<std::string, ExprPtr>> namedOperands;
  std::vector<std::pair<std::string, const WeightDecl *>> weights;
  std::vector<std::pair<std::string, const StateDecl *>> states;
  std::vector<std::pair<std::string, BuiltinAttr>> attrs;
};

//===----------------------------------------------------------------------===//
// Values and the model
//===----------------------------------------------------------------------===//

/// Something that defines a value name: an input, an assignment or an output.
class ValueDecl {
public:
  enum class Kind { Input, Assign, Result, Output };
  virtual ~ValueDecl() = default;
  Kind getKind() const { return kind; }

  std::string name;
  llvm::SMRange nameLoc;
  llvm::SMRange range; ///< the whole statement
  /// Inferred by Sema (for inputs: the declared type).
  ElementType elementType = ElementType::f32;
  Shape shape;
  /// Set by Sema when the definition could not be checked; uses of an invalid
  /// value report nothing more, to avoid cascades.
  bool invalid = false;

protected:
  explicit ValueDecl(Kind kind) : kind(kind) {}

private:
  Kind kind;
};

/// `input x : f32[B, S, 768]`.
class InputDecl : public ValueDecl {
public:
  InputDecl() : ValueDecl(Kind::Input) {}
  static bool classof(const ValueDecl *d) {
    return d->getKind() == Kind::Input;
  }
  TensorType type;
};

/// `x = expr`.
class AssignStmt : public ValueDecl {
public:
  AssignStmt() : ValueDecl(Kind::Assign) {}
  static bool classof(const ValueDecl *d) {
    return d->getKind() == Kind::Assign;
  }
  ExprPtr value;
};

/// The second name of `a, w = call(...)`: result `index` of the call that
/// `of` assigns (an attention's weights).
class ResultDecl : public ValueDecl {
public:
  ResultDecl() : ValueDecl(Kind::Result) {}
  static bool classof(const ValueDecl *d) {
    return d->getKind() == Kind::Result;
  }
  AssignStmt *of = nullptr;
  unsigned index = 1;
};

/// `output y = expr`, or `output y` exporting the current value of `y` (the
/// parser then stores the name `y` as the value, and Sema resolves it).
class OutputStmt : public ValueDecl {
public:
  OutputStmt() : ValueDecl(Kind::Output) {}
  static bool classof(const ValueDecl *d) {
    return d->getKind() == Kind::Output;
  }
  ExprPtr value;
  bool exportsExisting = false; ///< the `output y` form
};

/// A whole `.attn` file.
class ModelAST {
public:
  std::string name;
  llvm::SMRange nameLoc;
  llvm::SMRange range;
  std::vector<std::unique_ptr<DimDecl>> dims;
  std::vector<std::unique_ptr<WeightDecl>> weights;
  std::vector<std::unique_ptr<StateDecl>> states;
  /// Inputs, assignments and outputs in source order.
  std::vector<std::unique_ptr<ValueDecl>> body;

  std::vector<const InputDecl *> getInputs() const;
  std::vector<const OutputStmt *> getOutputs() const;
  const WeightDecl *lookupWeight(llvm::StringRef name) const;
  const StateDecl *lookupState(llvm::StringRef name) const;
  const DimDecl *lookupDim(llvm::StringRef name) const;
};

/// Prints the (checked) model in a readable indented form, with the shape of
/// every value: what `attnc --emit=ast` shows.
void dumpModel(const ModelAST &model, llvm::raw_ostream &os);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_AST_H
