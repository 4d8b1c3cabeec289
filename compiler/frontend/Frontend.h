//===- Frontend.h - Load a .attn model --------------------------*- C++ -*-===//
//
// Part of attnc. The frontend's entry points: parse and check a model, with
// diagnostics printed as `file:line:col: error: ...`, the line and a caret.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_FRONTEND_H
#define ATTNC_COMPILER_FRONTEND_FRONTEND_H

#include "compiler/frontend/AST.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace attnc {

/// Parses and checks buffer `bufferId` of `sourceMgr`, with the dialect's
/// `functions` as builtins (checkModel). Returns the checked model, or null
/// if there was any error; diagnostics go to `diagOS`.
std::unique_ptr<ModelAST> loadModel(llvm::SourceMgr &sourceMgr,
                                    unsigned bufferId,
                                    llvm::raw_ostream &diagOS,
                                    llvm::ArrayRef<std::string> functions = {});

/// Reads `path` into `sourceMgr` (`-` is stdin) and loads it as above.
std::unique_ptr<ModelAST>
loadModelFile(llvm::StringRef path, llvm::SourceMgr &sourceMgr,
              llvm::raw_ostream &diagOS,
              llvm::ArrayRef<std::string> functions = {});

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_FRONTEND_H
