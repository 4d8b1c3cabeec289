//===- Frontend.cpp - Load a .attn model ----------------------------------===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Frontend.h"
#include "compiler/frontend/Diagnostics.h"
#include "compiler/frontend/Parser.h"
#include "compiler/frontend/Sema.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

using namespace attnc;

std::unique_ptr<ModelAST> attnc::loadModel(llvm::SourceMgr &sourceMgr,
                                           unsigned bufferId,
                                           llvm::raw_ostream &diagOS,
                                           const BuiltinRegistry &builtins) {
  DiagnosticEngine diags(sourceMgr, diagOS);
  std::unique_ptr<ModelAST> model = parseModel(bufferId, diags);
  if (!model || !checkModel(*model, diags, builtins))
    return nullptr;
  return model;
}

std::unique_ptr<ModelAST>
attnc::loadModelFile(llvm::StringRef path, llvm::SourceMgr &sourceMgr,
                     llvm::raw_ostream &diagOS,
                     const BuiltinRegistry &builtins) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (std::error_code ec = buffer.getError()) {
    llvm::WithColor::error(diagOS, "attnc")
        << "cannot read '" << path << "': " << ec.message() << '\n';
    return nullptr;
  }
  unsigned bufferId =
      sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  return loadModel(sourceMgr, bufferId, diagOS, builtins);
}
