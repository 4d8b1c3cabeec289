//===- compiler/frontend/MLIRGen.h - AST -> attn dialect --------*- C++ -*-===//
//
// Turns a checked model into `func.func @<model>` of attn ops. Every op
// carries a FileLineColLoc into the .attn file, so errors found later (a
// weight missing from the safetensors file, say) still point at the source.
//
// Attributes the driver reads: `attn.symbols` on the function ([name, bound]
// pairs, bound 0 = none), `attn.model_name`, and on arguments and results
// `attn.name` plus, on arguments, `attn.dim_symbols`.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_FRONTEND_MLIRGEN_H
#define ATTNC_COMPILER_FRONTEND_MLIRGEN_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Builtins.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <string>
#include <vector>

namespace attnc {

/// The dialect's functions of one tensor (ops with
/// BuiltinFunctionOpInterface), by their names in the language.
std::vector<std::string> getDialectFunctions(mlir::MLIRContext &context);

/// Every builtin of the language: the families of compiler/frontend/builtins
/// and the dialect's functions of one tensor.
BuiltinRegistry getBuiltinRegistry(mlir::MLIRContext &context);

/// Builds the module for `model`, which must have passed the semantic check
/// with `builtins`; each call is emitted by its builtin.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const ModelAST &model,
                                          const llvm::SourceMgr &sourceMgr,
                                          const BuiltinRegistry &builtins);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_MLIRGEN_H
