//===- runtime/src/elf_check.cpp - Is a file a loadable library? ----------===//
#include "elf_check.h"

#include "attn/library_digest.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace attn::rt {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
#else
constexpr uint16_t kMachine = EM_NONE; // not checked
#endif

/// Reads exactly `size` bytes at `offset`.
bool readAt(int fd, void *out, std::size_t size, uint64_t offset) {
  auto *p = static_cast<char *>(out);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= std::size_t(n);
    offset += uint64_t(n);
  }
  return true;
}

std::string range(uint64_t begin, uint64_t size) {
  return "[" + std::to_string(begin) + ", " + std::to_string(begin + size) +
         ")";
}

std::string checkElf(int fd, uint64_t fileSize) {
  ElfW(Ehdr) header;
  if (fileSize < sizeof header || !readAt(fd, &header, sizeof header, 0))
    return "it is too short to be an ELF shared library (" +
           std::to_string(fileSize) + " bytes)";
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return "it is not an ELF file";
  if (header.e_ident[EI_CLASS] !=
          (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
      header.e_ident[EI_DATA] != ELFDATA2LSB)
    return "it is an ELF file of another word size or byte order";
  if (kMachine != EM_NONE && header.e_machine != kMachine)
    return "it is built for another processor architecture (ELF machine " +
           std::to_string(header.e_machine) + ")";
  if (header.e_type != ET_DYN)
    return "it is not a shared library (ELF type " +
           std::to_string(header.e_type) + ")";
  if (header.e_phentsize != sizeof(ElfW(Phdr)) || header.e_phnum == 0)
    return "its program header table is damaged";
  uint64_t tableBytes = uint64_t(header.e_phnum) * sizeof(ElfW(Phdr));
  if (header.e_phoff > fileSize || tableBytes > fileSize - header.e_phoff)
    return "it is truncated: its program headers need bytes " +
           range(header.e_phoff, tableBytes) + " of a " +
           std::to_string(fileSize) + "-byte file";
  for (int i = 0; i < header.e_phnum; ++i) {
    ElfW(Phdr) segment;
    if (!readAt(fd, &segment, sizeof segment,
                header.e_phoff + uint64_t(i) * sizeof segment))
      return "its program headers cannot be read";
    if (segment.p_type != PT_LOAD && segment.p_type != PT_DYNAMIC)
      continue;
    if (segment.p_offset > fileSize ||
        segment.p_filesz > fileSize - segment.p_offset)
      return "it is truncated: segment " + std::to_string(i) + " needs bytes " +
             range(segment.p_offset, segment.p_filesz) + " of a " +
             std::to_string(fileSize) + "-byte file";
    if (segment.p_type == PT_LOAD && segment.p_filesz > segment.p_memsz)
      return "its segment " + std::to_string(i) + " is damaged";
  }
  return "";
}

/// The digest attnc appended (attn/library_digest.h) against the bytes
/// before it.
std::string checkDigest(int fd, uint64_t fileSize) {
  unsigned char trailer[digest::kTrailerSize];
  if (fileSize < digest::kTrailerSize ||
      !readAt(fd, trailer, sizeof trailer, fileSize - digest::kTrailerSize))
    return "it carries no attnc digest (attnc appends one to every library; "
           "this one was made by another tool, or its end is cut off)";
  if (std::memcmp(trailer + 16, digest::kOldMagic, 8) == 0)
    return "its digest is in an older attnc's format (before XXH3), which "
           "this runtime does not read";
  if (std::memcmp(trailer + 16, digest::kMagic, 8) != 0)
    return "it carries no attnc digest (attnc appends one to every library; "
           "this one was made by another tool, or its end is cut off)";
  uint64_t covered = digest::getLE(trailer + 8);
  if (covered != fileSize - digest::kTrailerSize)
    return "it is truncated or extended: its digest covers " +
           std::to_string(covered) + " bytes, the file has " +
           std::to_string(fileSize - digest::kTrailerSize);
  digest::Hasher hasher;
  std::vector<unsigned char> chunk(1 << 20);
  for (uint64_t offset = 0; offset < covered;) {
    std::size_t n =
        std::size_t(std::min<uint64_t>(covered - offset, chunk.size()));
    if (!readAt(fd, chunk.data(), n, offset))
      return "it cannot be read";
    hasher.update(chunk.data(), n);
    offset += n;
  }
  if (hasher.finish() != digest::getLE(trailer))
    return "it is damaged: its bytes do not match the digest attnc wrote";
  return "";
}

} // namespace

std::string libraryProblem(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::string("it cannot be opened: ") + std::strerror(errno);
  struct stat st;
  std::string problem;
  if (::fstat(fd, &st) != 0)
    problem = std::string("it cannot be read: ") + std::strerror(errno);
  else if (problem = checkElf(fd, uint64_t(st.st_size)); problem.empty())
    problem = checkDigest(fd, uint64_t(st.st_size));
  ::close(fd);
  return problem;
}

} // namespace attn::rt
