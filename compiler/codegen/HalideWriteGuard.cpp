//===- HalideWriteGuard.cpp - Report Halide's failed writes ---------------===//
#include "compiler/codegen/HalideWriteGuard.h"

#include "llvm/Support/FileSystem.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace attnc::codegen {
namespace {

/// The directory of the live guard; empty when none is. Never destroyed: the
/// exit-time hook reads it after static destructors may have run.
std::string &guardedDir() {
  static std::string *dir = new std::string;
  return *dir;
}

void reportFailedWrite() {
  std::string &dir = guardedDir();
  if (dir.empty())
    return;
  std::fprintf(stderr,
               "attnc: error: writing the compiled kernels into temporary "
               "directory '%s' failed (the LLVM ERROR above: a full disk or a "
               "file size limit): free space there, or set TMPDIR to a "
               "directory on a disk with room\n",
               dir.c_str());
  llvm::sys::fs::remove_directories(dir);
  dir.clear();
}

} // namespace

HalideWriteGuard::HalideWriteGuard(llvm::StringRef tempDir) {
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(reportFailedWrite); });
  guardedDir() = tempDir.str();
}

HalideWriteGuard::~HalideWriteGuard() { guardedDir().clear(); }

} // namespace attnc::codegen
