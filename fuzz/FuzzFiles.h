//===- fuzz/FuzzFiles.h - Fuzz inputs as files ------------------*- C++ -*-===//
//
// What every target shares: a broken contract reported as a finding, and,
// since the readers under test take paths and map files, a fuzz input as an
// anonymous in-memory file (memfd) named by its /proc/self/fd path.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_FUZZ_FUZZFILES_H
#define ATTNC_FUZZ_FUZZFILES_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace attnc::fuzz {

/// An in-memory file holding a copy of some bytes; closed when destroyed.
class MemFile {
public:
  MemFile(const uint8_t *data, size_t size) {
    fd = ::memfd_create("attnc-fuzz", MFD_CLOEXEC);
    if (fd < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    for (size_t done = 0; done < size;) {
      ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0) {
        std::perror("write to memfd");
        std::abort();
      }
      done += size_t(n);
    }
  }
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;
  ~MemFile() { ::close(fd); }

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }

private:
  int fd;
};

/// Reports a broken contract (not a rejected input) and stops the fuzzer.
[[noreturn]] inline void finding(const char *target, const std::string &what) {
  std::fprintf(stderr, "%s: %s\n", target, what.c_str());
  std::abort();
}

} // namespace attnc::fuzz

#endif // ATTNC_FUZZ_FUZZFILES_H
