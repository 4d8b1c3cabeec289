//===- compiler/driver/TempDir.h - private scratch directory ----*- C++ -*-===//
//
// A private directory for a build's intermediate files (kernel objects, the
// plan's C, the library that computes embedded weights), removed with its
// contents when the owner goes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_TEMPDIR_H
#define ATTNC_COMPILER_DRIVER_TEMPDIR_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <string>

namespace attnc::driver {

class TempDir {
public:
  TempDir() = default;
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  ~TempDir() {
    if (!dir.empty())
      llvm::sys::fs::remove_directories(dir);
  }

  /// Creates the directory under $TMPDIR.
  std::error_code create() {
    return llvm::sys::fs::createUniqueDirectory("attnc", dir);
  }
  llvm::StringRef path() const { return dir; }
  /// `name` inside the directory.
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

private:
  llvm::SmallString<128> dir;
};

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_TEMPDIR_H
