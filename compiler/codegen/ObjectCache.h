//===- compiler/codegen/ObjectCache.h - compiled objects kept between builds
//===//
//
// What Halide compiles for a model is most of a build's time, and much of it
// is compiled again and again: Halide's runtime for each target (about a
// second), and every kernel a rebuilt model, a decoder's other entry or a
// model sharing layers with another has already had. ObjectCache keeps those
// objects in a directory ($ATTNC_CACHE_DIR, else ~/.cache/attnc, where the
// Python package keeps its libraries), each entry one file: a header line
// with the XXH3-128 digest and sizes of its objects, then their bytes. An
// entry that does not match its digest (damaged, cut short) is not used and
// is replaced; entries appear by rename, never half-written. What the cache
// cannot read or write costs only the compile, never the build.
//
// Entries are named by what determines their bytes (KernelCodegen.cpp: the
// Halide version, the target and, for a kernel, the attnc executable that
// lowers it, or the one ATTNC_CACHE_AS names, its function name, schedule,
// precision and structural key), so a rebuilt attnc compiles afresh. An
// entry not used for 30 days is removed (checked at most once a day).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_OBJECTCACHE_H
#define ATTNC_COMPILER_CODEGEN_OBJECTCACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace attnc::codegen {

/// XXH3-128 of `bytes` as 32 lowercase hex digits: an entry's digest, and
/// what entries are named by.
std::string xxh3Digest(llvm::StringRef bytes);

/// How one compile used the cache (attnc --verbose reports it).
struct CacheOutcome {
  /// The objects came from the cache.
  bool hit = false;
  /// An entry was there but did not match its digest; it was replaced.
  bool damaged = false;
  /// Why the fresh objects could not be stored ("" when they were, or when
  /// there is no cache).
  std::string notStored;
};

class ObjectCache {
public:
  /// No cache: nothing is read or written.
  ObjectCache() = default;
  explicit ObjectCache(std::string dir) : dir_(std::move(dir)) {}

  /// $ATTNC_CACHE_DIR when set and not empty, else $HOME/.cache/attnc, else
  /// none.
  static ObjectCache fromEnvironment();

  bool enabled() const { return !dir_.empty(); }
  llvm::StringRef dir() const { return dir_; }
  /// The file of entry `name` ("kernels/halide-21.0.0/ab/abcd...").
  std::string entryPath(llvm::StringRef name) const;

  /// Writes entry `name`'s objects to `files` (as many as were stored) and
  /// returns true when the entry is there and sound; sets `damaged` when it
  /// is there and is not.
  bool fetch(llvm::StringRef name, llvm::ArrayRef<std::string> files,
             bool &damaged) const;
  /// Stores the bytes of `files` as entry `name`, replacing any.
  llvm::Error store(llvm::StringRef name,
                    llvm::ArrayRef<std::string> files) const;

private:
  void pruneOnceADay(llvm::StringRef entryDir) const;

  std::string dir_;
};

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_OBJECTCACHE_H
