//===- Diagnostics.cpp - Frontend diagnostics -----------------------------===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Diagnostics.h"

using namespace attnc;

void DiagnosticEngine::emit(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind,
                            const llvm::Twine &msg,
                            llvm::ArrayRef<llvm::SMRange> ranges) {
  sourceMgr.PrintMessage(os, loc, kind, msg, ranges);
}

void DiagnosticEngine::error(llvm::SMLoc loc, const llvm::Twine &msg,
                             llvm::ArrayRef<llvm::SMRange> ranges) {
  ++numErrors;
  emit(loc, llvm::SourceMgr::DK_Error, msg, ranges);
}

void DiagnosticEngine::warning(llvm::SMLoc loc, const llvm::Twine &msg,
                               llvm::ArrayRef<llvm::SMRange> ranges) {
  ++numWarnings;
  emit(loc, llvm::SourceMgr::DK_Warning, msg, ranges);
}

void DiagnosticEngine::note(llvm::SMLoc loc, const llvm::Twine &msg,
                            llvm::ArrayRef<llvm::SMRange> ranges) {
  emit(loc, llvm::SourceMgr::DK_Note, msg, ranges);
}
