//===- Sema.h - Semantic check of a parsed model ----------------*- C++ -*-===//
//
// Part of attnc. Resolves names, infers the shape and element type of every
// value, checks every builtin's arguments and weights, and replaces each call
// and operator by a generic BuiltinExpr. Reports every error it can find.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_SEMA_H
#define ATTNC_COMPILER_FRONTEND_SEMA_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Diagnostics.h"

namespace attnc {

/// Checks `model` in place. `functions` names the dialect's functions of one
/// tensor (`tanh(x)`, ...; MLIRGen's getDialectFunctions), builtins beside
/// the structural ones Sema knows. Returns true when there was no error
/// (warnings, such as unused weights, do not fail the check). On failure the
/// model may be partly resolved and must not be lowered.
bool checkModel(ModelAST &model, DiagnosticEngine &diags,
                llvm::ArrayRef<std::string> functions = {});

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_SEMA_H
