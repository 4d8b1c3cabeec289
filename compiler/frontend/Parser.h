//===- Parser.h - Recursive-descent parser for .attn ------------*- C++ -*-===//
//
// Part of attnc. Parses one buffer into a ModelAST of declarations and
// unresolved expressions. Syntax errors are reported with their location; the
// parser skips to the next statement and goes on, so one run reports several.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_PARSER_H
#define ATTNC_COMPILER_FRONTEND_PARSER_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Diagnostics.h"

#include <memory>

namespace attnc {

/// The deepest expression tree (and the deepest parenthesis nesting) accepted;
/// deeper input is an error rather than a stack overflow.
constexpr unsigned kMaxExprDepth = 256;

/// Parses buffer `bufferId` of `diags`' source manager. Returns null if there
/// was any lexical or syntax error (all of them reported through `diags`).
std::unique_ptr<ModelAST> parseModel(unsigned bufferId,
                                     DiagnosticEngine &diags);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_PARSER_H
