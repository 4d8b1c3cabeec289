//===- Sema.h - Semantic check of a parsed model ----------------*- C++ -*-===//
//
// Part of attnc. Resolves names, infers the shape and element type of every
// value, checks every call with the builtin's own check (Builtins.h), and
// replaces each call and operator by a generic BuiltinExpr. Reports every
// error it can find.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_SEMA_H
#define ATTNC_COMPILER_FRONTEND_SEMA_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Builtins.h"
#include "compiler/frontend/Diagnostics.h"

namespace attnc {

/// Checks `model` in place, each call by its builtin in `builtins`
/// (makeBuiltinRegistry). Returns true when there was no error (warnings,
/// such as unused weights, do not fail the check). On failure the model may
/// be partly resolved and must not be lowered.
bool checkModel(ModelAST &model, DiagnosticEngine &diags,
                const BuiltinRegistry &builtins);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_SEMA_H
