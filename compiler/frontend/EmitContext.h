//===- compiler/frontend/EmitContext.h - What emission sees -----*- C++ -*-===//
//
// Part of attnc. What a builtin's emit hook (Builtins.h) sees of MLIRGen:
// the builder, source locations, the model's weights and states as values of
// the function being built, and the entry point it computes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_EMITCONTEXT_H
#define ATTNC_COMPILER_FRONTEND_EMITCONTEXT_H

#include "compiler/frontend/AST.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace attnc {

/// Which entry point a function computes. A model with states (KV caches)
/// has three: "run" ignores the caches, "prefill" also writes the keys and
/// values into them from row 0, "decode" writes them at a position and
/// attends over the caches.
enum class Entry { run, prefill, decode };

class EmitContext {
public:
  explicit EmitContext(mlir::MLIRContext &context) : builder(&context) {}
  virtual ~EmitContext() = default;

  mlir::OpBuilder &getBuilder() { return builder; }
  /// The source location `where` as a FileLineColLoc.
  virtual mlir::Location loc(llvm::SMLoc where) = 0;
  /// Emits a value expression (a named operand of a call).
  virtual mlir::Value expr(const Expr &e) = 0;
  /// The weight as declared, created once per function; null for null.
  virtual mlir::Value weight(const WeightDecl *decl) = 0;
  /// The state (a KV cache) as an argument of the function.
  virtual mlir::Value state(const StateDecl *decl) = 0;
  /// The decode's position ([B], i32), null in other entries.
  virtual mlir::Value getPosition() = 0;
  virtual Entry getEntry() = 0;
  /// Records the results of a call with more than one, for `a, w = ...`.
  virtual void setResults(const BuiltinExpr &e,
                          llvm::SmallVector<mlir::Value, 2> results) = 0;

  mlir::RankedTensorType tensorType(llvm::ArrayRef<Extent> shape,
                                    ElementType element);
  /// A projection weight in `[out, in]` order, transposed if it is declared
  /// `layout(in, out)`.
  mlir::Value outInWeight(const WeightDecl *decl);
  /// The call's real argument `name` as an f32 attribute, or null.
  mlir::FloatAttr realAttr(const BuiltinExpr &e, llvm::StringRef name);

protected:
  mlir::OpBuilder builder;
};

/// The op named `attn.<e.builtin>` with `operands`, the result type of `e`
/// and the call's constant arguments as attributes of the same names
/// (integers i64, reals f32): the emission (an EmitFn) of most builtins.
mlir::Value emitNamedOp(EmitContext &ctx, const BuiltinExpr &e,
                        llvm::ArrayRef<mlir::Value> operands);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_EMITCONTEXT_H
