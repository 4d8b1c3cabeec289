//===- Frontend.h - Load a .attn model --------------------------*- C++ -*-===//
//
// Part of attnc. The frontend's entry points: parse and check a model, with
// diagnostics printed as `file:line:col: error: ...`, the line and a caret.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_FRONTEND_H
#define ATTNC_COMPILER_FRONTEND_FRONTEND_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/Builtins.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace attnc {

/// Parses and checks buffer `bufferId` of `sourceMgr` with `builtins`
/// (checkModel). Returns the checked model, or null if there was any error;
/// diagnostics go to `diagOS`.
std::unique_ptr<ModelAST> loadModel(llvm::SourceMgr &sourceMgr,
                                    unsigned bufferId,
                                    llvm::raw_ostream &diagOS,
                                    const BuiltinRegistry &builtins);

/// Reads `path` into `sourceMgr` (`-` is stdin) and loads it as above.
std::unique_ptr<ModelAST> loadModelFile(llvm::StringRef path,
                                        llvm::SourceMgr &sourceMgr,
                                        llvm::raw_ostream &diagOS,
                                        const BuiltinRegistry &builtins);

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_FRONTEND_H
