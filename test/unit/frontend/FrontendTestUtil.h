//===- FrontendTestUtil.h - Helpers for the frontend tests ------*- C++ -*-===//
//
// Part of attnc.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_UNIT_FRONTEND_FRONTENDTESTUTIL_H
#define ATTNC_TEST_UNIT_FRONTEND_FRONTENDTESTUTIL_H

#include "compiler/frontend/Frontend.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include "gtest/gtest.h"

#include <memory>
#include <string>

namespace attnc::test {

/// A loaded model with the source manager its locations point into and the
/// printed diagnostics.
struct Loaded {
  std::unique_ptr<llvm::SourceMgr> sourceMgr;
  std::unique_ptr<ModelAST> model;
  std::string diags;
};

/// Functions of one tensor as the dialect offers them to attnc (MLIRGen's
/// getDialectFunctions; these tests check without a dialect loaded, and the
/// lit tests compile with the dialect's real list).
inline const std::vector<std::string> kFunctions = {"relu", "tanh", "silu"};

/// The language's builtins with kFunctions.
inline const BuiltinRegistry &testBuiltins() {
  static const BuiltinRegistry builtins = makeBuiltinRegistry(kFunctions);
  return builtins;
}

inline Loaded load(llvm::StringRef source,
                   const BuiltinRegistry &builtins = testBuiltins()) {
  Loaded result;
  result.sourceMgr = std::make_unique<llvm::SourceMgr>();
  unsigned id = result.sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "test.attn"), llvm::SMLoc());
  llvm::raw_string_ostream os(result.diags);
  result.model = loadModel(*result.sourceMgr, id, os, builtins);
  return result;
}

/// Whether `diags` holds `test.attn:<lineCol>: <kind>: ...message...` on one
/// line.
inline ::testing::AssertionResult hasDiag(const std::string &diags,
                                          llvm::StringRef lineCol,
                                          llvm::StringRef message,
                                          llvm::StringRef kind = "error") {
  std::string prefix = ("test.attn:" + lineCol + ": " + kind + ": ").str();
  size_t pos = 0;
  while ((pos = diags.find(prefix, pos)) != std::string::npos) {
    size_t end = diags.find('\n', pos);
    if (llvm::StringRef(diags).slice(pos, end).contains(message))
      return ::testing::AssertionSuccess();
    pos = end;
  }
  return ::testing::AssertionFailure() << "no '" << prefix.c_str() << "..."
                                       << message.str() << "' in diagnostics:\n"
                                       << diags;
}

/// Loads `source`, expects it to fail with the given error.
inline ::testing::AssertionResult failsWith(llvm::StringRef source,
                                            llvm::StringRef lineCol,
                                            llvm::StringRef message) {
  Loaded loaded = load(source);
  if (loaded.model)
    return ::testing::AssertionFailure() << "the model loaded; diagnostics:\n"
                                         << loaded.diags;
  return hasDiag(loaded.diags, lineCol, message);
}

} // namespace attnc::test

#endif // ATTNC_TEST_UNIT_FRONTEND_FRONTENDTESTUTIL_H
