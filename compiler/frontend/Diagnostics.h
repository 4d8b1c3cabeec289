//===- Diagnostics.h - Frontend diagnostics ---------------------*- C++ -*-===//
//
// Part of attnc. Errors, warnings and notes of the frontend, printed through
// llvm::SourceMgr as `file:line:col: error: message`, the line and a caret.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_FRONTEND_DIAGNOSTICS_H
#define ATTNC_COMPILER_FRONTEND_DIAGNOSTICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace attnc {

/// Prints diagnostics for one source manager and counts the errors, so that a
/// phase can report everything it finds and fail once at the end.
class DiagnosticEngine {
public:
  DiagnosticEngine(llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os)
      : sourceMgr(sourceMgr), os(os) {}

  void error(llvm::SMLoc loc, const llvm::Twine &msg,
             llvm::ArrayRef<llvm::SMRange> ranges = {});
  void warning(llvm::SMLoc loc, const llvm::Twine &msg,
               llvm::ArrayRef<llvm::SMRange> ranges = {});
  void note(llvm::SMLoc loc, const llvm::Twine &msg,
            llvm::ArrayRef<llvm::SMRange> ranges = {});

  unsigned getNumErrors() const { return numErrors; }
  unsigned getNumWarnings() const { return numWarnings; }
  bool hadError() const { return numErrors != 0; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }

private:
  void emit(llvm::SMLoc loc, llvm::SourceMgr::DiagKind kind,
            const llvm::Twine &msg, llvm::ArrayRef<llvm::SMRange> ranges);

  llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
  unsigned numErrors = 0;
  unsigned numWarnings = 0;
};

} // namespace attnc

#endif // ATTNC_COMPILER_FRONTEND_DIAGNOSTICS_H
