//===- HalideWriteGuard.h - Report Halide's failed writes -------*- C++ -*-===//
//
// Part of attnc. Halide writes object files through its own copy of LLVM,
// private to libHalide, which treats a failed write (a full disk, a file size
// limit) as a fatal error: it prints "LLVM ERROR: IO failure on output
// stream" and calls exit(1). Its handler cannot be replaced, so while a guard
// is alive an exit-time hook says what failed and how to fix it, and removes
// the guard's temporary directory with the partial objects.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_COMPILER_CODEGEN_HALIDEWRITEGUARD_H
#define ATTNC_COMPILER_CODEGEN_HALIDEWRITEGUARD_H

#include "llvm/ADT/StringRef.h"

namespace attnc::codegen {

/// Covers Halide's writes into `tempDir` for its lifetime (one at a time).
class HalideWriteGuard {
public:
  explicit HalideWriteGuard(llvm::StringRef tempDir);
  ~HalideWriteGuard();
  HalideWriteGuard(const HalideWriteGuard &) = delete;
  HalideWriteGuard &operator=(const HalideWriteGuard &) = delete;
};

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_HALIDEWRITEGUARD_H
