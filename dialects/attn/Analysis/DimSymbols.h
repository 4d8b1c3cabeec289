//===- dialects/attn/Analysis/DimSymbols.h - names of dynamic dims -*- C++
//-*-===//
//
// Tensor types only say that a dim is dynamic. The model function's arguments
// carry `attn.dim_symbols` (one name per dynamic dim, e.g. ["B", "S"]); this
// analysis propagates those names to every value through each op's
// DimMapOpInterface (or the broadcasting rule), so shape checking can tell
// B from S and the driver can size every buffer from the bound dims.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DIALECTS_ATTN_ANALYSIS_DIMSYMBOLS_H
#define ATTNC_DIALECTS_ATTN_ANALYSIS_DIMSYMBOLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::attn {

/// Argument attribute naming the symbolic dims of a model input.
constexpr llvm::StringLiteral kDimSymbolsAttr = "attn.dim_symbols";

/// Function attribute listing the model's symbols and their bounds,
/// [[name, bound], ...] (bound 0: none declared).
constexpr llvm::StringLiteral kSymbolsAttr = "attn.symbols";
/// On a model function: which entry point of the library it is ("run",
/// "prefill", "decode"); a function without it is "run".
constexpr llvm::StringLiteral kEntryAttr = "attn.entry";
/// On a model function's argument: the name of the state (a KV cache the
/// caller owns) it is; other arguments are inputs.
constexpr llvm::StringLiteral kStateAttr = "attn.state";

class DimSymbols {
public:
  /// Propagates names from the function's arguments; emits an error at the
  /// offending op and fails when two operands disagree or a name is missing.
  static FailureOr<DimSymbols> compute(func::FuncOp func);

  /// One entry per dim of `value`'s type: the symbol for a dynamic dim, a
  /// null StringAttr for a static one.
  ArrayRef<StringAttr> lookup(Value value) const;

private:
  LogicalResult propagate(Block &block);
  LogicalResult propagate(Operation *op);

  llvm::DenseMap<Value, SmallVector<StringAttr, 4>> names;
};

} // namespace mlir::attn

#endif // ATTNC_DIALECTS_ATTN_ANALYSIS_DIMSYMBOLS_H
