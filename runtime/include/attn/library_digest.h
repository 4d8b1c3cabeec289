//===- runtime/include/attn/library_digest.h - model library digest -*- C++
//-*-===//
//
// attnc appends a digest to every model library it links; the runtime checks
// it before dlopen, so a library damaged after it was built (bit flips, a
// truncated copy) is an error rather than a crash or wrong outputs. The
// trailer, after the ELF file's last byte (loaders ignore what follows):
//
//   uint64 XXH3_64bits (xxHash, seed 0) of every byte before the trailer
//   uint64 the number of those bytes
//   8 bytes "ATTNXXH3"
//
// all little-endian. XXH3 is not cryptographic: it detects damage, not
// tampering. attnc before XXH3 wrote "ATTNDGST" and a hash of its own
// (kOldMagic), a format no release pinned: the runtime names it so a library
// of that format reads as one to rebuild, not as a damaged one. Shared by
// the driver and the runtime (each links libxxhash); not installed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIBRARY_DIGEST_H
#define ATTN_LIBRARY_DIGEST_H

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

namespace attn::digest {

constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'X', 'X', 'H', '3'};
constexpr char kOldMagic[8] = {'A', 'T', 'T', 'N', 'D', 'G', 'S', 'T'};
constexpr std::size_t kTrailerSize = 24;

/// XXH3_64bits over bytes given in pieces (the runtime reads a library in
/// chunks): the same value as one call over all of them.
class Hasher {
public:
  Hasher() : state(XXH3_createState()) {
    if (!state)
      throw std::bad_alloc();
    XXH3_64bits_reset(state);
  }
  ~Hasher() { XXH3_freeState(state); }
  Hasher(const Hasher &) = delete;
  Hasher &operator=(const Hasher &) = delete;

  void update(const unsigned char *data, std::size_t size) {
    XXH3_64bits_update(state, data, size);
  }
  uint64_t finish() const { return XXH3_64bits_digest(state); }

private:
  XXH3_state_t *state;
};

inline void putLE(unsigned char *out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<unsigned char>(v >> (8 * i));
}

/// The trailer attnc appends to a library of `size` bytes at `data`.
inline void makeTrailer(const unsigned char *data, std::size_t size,
                        unsigned char (&trailer)[kTrailerSize]) {
  putLE(trailer, XXH3_64bits(data, size));
  putLE(trailer + 8, size);
  std::memcpy(trailer + 16, kMagic, 8);
}

inline uint64_t getLE(const unsigned char *in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(in[i]) << (8 * i);
  return v;
}

} // namespace attn::digest

#endif // ATTN_LIBRARY_DIGEST_H
