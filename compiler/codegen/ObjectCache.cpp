//===- compiler/codegen/ObjectCache.cpp - compiled objects kept between builds
////
#include "compiler/codegen/ObjectCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <xxhash.h>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace attnc::codegen {
namespace {

/// The first word of every entry: its format.
constexpr llvm::StringLiteral kMagic = "attnc-cache-1";
constexpr auto kUnusedFor = std::chrono::hours(24 * 30);
constexpr auto kPruneEvery = std::chrono::hours(24);

/// A temporary file renamed into place: a reader sees all of it or none.
llvm::Error writeFile(llvm::StringRef file, llvm::StringRef bytes) {
  return llvm::writeToOutput(file, [&](llvm::raw_ostream &os) {
    os << bytes;
    return llvm::Error::success();
  });
}

/// The objects of an entry's bytes, or nothing when the header or the digest
/// does not match them.
std::optional<std::vector<llvm::StringRef>> parseEntry(llvm::StringRef bytes) {
  auto [header, payload] = bytes.split('\n');
  llvm::SmallVector<llvm::StringRef> words;
  header.split(words, ' ');
  size_t count = 0;
  if (words.size() < 3 || words[0] != kMagic ||
      words[2].getAsInteger(10, count) || words.size() != 3 + count ||
      xxh3Digest(payload) != words[1])
    return std::nullopt;
  std::vector<llvm::StringRef> objects;
  for (llvm::StringRef word : llvm::ArrayRef(words).drop_front(3)) {
    size_t size = 0;
    if (word.getAsInteger(10, size) || size > payload.size())
      return std::nullopt;
    objects.push_back(payload.take_front(size));
    payload = payload.drop_front(size);
  }
  if (!payload.empty())
    return std::nullopt;
  return objects;
}

} // namespace

std::string xxh3Digest(llvm::StringRef bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return llvm::utohexstr(h.high64, /*LowerCase=*/true, 16) +
         llvm::utohexstr(h.low64, /*LowerCase=*/true, 16);
}

ObjectCache ObjectCache::fromEnvironment() {
  std::optional<std::string> dir =
      llvm::sys::Process::GetEnv("ATTNC_CACHE_DIR");
  if (dir && !dir->empty())
    return ObjectCache(*dir);
  llvm::SmallString<128> home;
  if (!path::home_directory(home))
    return ObjectCache();
  path::append(home, ".cache", "attnc");
  return ObjectCache(std::string(home));
}

std::string ObjectCache::entryPath(llvm::StringRef name) const {
  llvm::SmallString<256> file(dir_);
  path::append(file, name);
  return std::string(file);
}

bool ObjectCache::fetch(llvm::StringRef name, llvm::ArrayRef<std::string> files,
                        bool &damaged) const {
  damaged = false;
  if (!enabled())
    return false;
  std::string file = entryPath(name);
  auto bytes = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!bytes)
    return false;
  std::optional<std::vector<llvm::StringRef>> objects =
      parseEntry((*bytes)->getBuffer());
  if (!objects || objects->size() != files.size()) {
    damaged = true;
    return false;
  }
  for (auto [object, to] : llvm::zip(*objects, files))
    if (llvm::Error err = writeFile(to, object)) {
      llvm::consumeError(std::move(err));
      return false;
    }
  // Used now: pruning keeps it.
  if (int fd; !fs::openFileForWrite(file, fd, fs::CD_OpenExisting)) {
    (void)fs::setLastAccessAndModificationTime(
        fd, llvm::sys::toTimePoint(std::time(nullptr)));
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  }
  return true;
}

llvm::Error ObjectCache::store(llvm::StringRef name,
                               llvm::ArrayRef<std::string> files) const {
  std::string header = (kMagic + " ").str(), payload;
  std::string sizes;
  for (const std::string &from : files) {
    auto bytes = llvm::MemoryBuffer::getFile(from, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
    if (!bytes)
      return llvm::createFileError(from, bytes.getError());
    sizes += " " + std::to_string((*bytes)->getBufferSize());
    payload += (*bytes)->getBuffer();
  }
  header += xxh3Digest(payload) + " " + std::to_string(files.size()) + sizes;
  std::string file = entryPath(name);
  llvm::StringRef entryDir = path::parent_path(file);
  if (std::error_code ec = fs::create_directories(entryDir))
    return llvm::createFileError(entryDir, ec);
  if (llvm::Error err = writeFile(file, header + "\n" + payload))
    return err;
  pruneOnceADay(entryDir);
  return llvm::Error::success();
}

/// Removes the entries beside `entryDir`'s (the same kind: its parent's
/// parent) not used for kUnusedFor, at most every kPruneEvery (a stamp file
/// records the last time).
void ObjectCache::pruneOnceADay(llvm::StringRef entryDir) const {
  llvm::StringRef kindDir = path::parent_path(entryDir);
  std::string stamp = (kindDir + "/.pruned").str();
  auto now = std::chrono::system_clock::now();
  fs::file_status status;
  if (!fs::status(stamp, status) &&
      now - status.getLastModificationTime() < kPruneEvery)
    return;
  if (llvm::Error err = writeFile(stamp, "")) {
    llvm::consumeError(std::move(err));
    return;
  }
  std::error_code ec;
  for (fs::recursive_directory_iterator it(kindDir, ec), end; it != end && !ec;
       it.increment(ec)) {
    fs::file_status entry;
    if (it->path() == stamp || fs::status(it->path(), entry) ||
        entry.type() != fs::file_type::regular_file)
      continue;
    if (now - entry.getLastModificationTime() > kUnusedFor)
      (void)fs::remove(it->path());
  }
}

} // namespace attnc::codegen
