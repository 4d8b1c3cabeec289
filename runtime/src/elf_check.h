//===- runtime/src/elf_check.h - Is a file a loadable library? --*- C++ -*-===//
//
// dlopen trusts the file it maps: a truncated library dies of SIGBUS when
// its missing pages are touched, a damaged one may crash in its
// constructors. Before dlopen, the runtime checks the file's ELF header and
// program headers (an ELF shared object of this machine's class, byte order
// and architecture, whose every segment lies inside the file) and the digest
// attnc appended to it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_ELF_CHECK_H
#define ATTN_RUNTIME_SRC_ELF_CHECK_H

#include <string>

namespace attn::rt {

/// "" when `path` looks loadable and ends with attnc's digest
/// (attn/library_digest.h) matching every byte before it; otherwise what is
/// wrong with it, e.g. "it is truncated: segment 2 needs bytes [4096, 90112)
/// of a 20000-byte file". The file is opened once for both checks.
std::string libraryProblem(const std::string &path);

} // namespace attn::rt

#endif // ATTN_RUNTIME_SRC_ELF_CHECK_H
