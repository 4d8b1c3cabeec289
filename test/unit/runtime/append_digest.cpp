//===- test/unit/runtime/append_digest.cpp - sign a fake model library ----===//
//
// append_digest LIB: appends attnc's digest trailer (attn/library_digest.h)
// to a hand-written model library, as attnc does to the libraries it links,
// so the runtime loads it.
//
//===----------------------------------------------------------------------===//
#include "attn/library_digest.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: append_digest LIB\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (!in.good() && !in.eof()) {
    std::fprintf(stderr, "append_digest: cannot read '%s'\n", argv[1]);
    return 1;
  }
  unsigned char trailer[attn::digest::kTrailerSize];
  attn::digest::makeTrailer(
      reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size(),
      trailer);
  std::ofstream out(argv[1], std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char *>(trailer), sizeof trailer);
  return out.good() ? 0 : 1;
}
