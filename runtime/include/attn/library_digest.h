//===- runtime/include/attn/library_digest.h - model library digest -*- C++
//-*-===//
//
// attnc appends a digest to every model library it links; the runtime checks
// it before dlopen, so a library damaged after it was built (bit flips, a
// truncated copy) is an error rather than a crash or wrong outputs. The
// trailer, after the ELF file's last byte (loaders ignore what follows):
//
//   uint64 hash of every byte before the trailer (libraryDigest)
//   uint64 the number of those bytes
//   8 bytes "ATTNDGST"
//
// all little-endian. Shared by the driver and the runtime; not installed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LIBRARY_DIGEST_H
#define ATTN_LIBRARY_DIGEST_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace attn::digest {

constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'D', 'G', 'S', 'T'};
constexpr std::size_t kTrailerSize = 24;

/// A 64-bit hash of a byte stream, 8 bytes at a time over four independent
/// lanes (multiply, rotate, xor; so hashing keeps up with reading): every
/// bit of the input reaches the result. Not cryptographic: it detects
/// damage, not tampering.
class Hasher {
public:
  void update(const unsigned char *data, std::size_t size) {
    while (size > 0 && fill > 0) {
      takeByte(*data++);
      --size;
    }
    for (; size >= 8; data += 8, size -= 8) {
      uint64_t word = 0;
      for (int i = 0; i < 8; ++i) // little-endian, whatever the host
        word |= uint64_t(data[i]) << (8 * i);
      mix(word);
    }
    while (size-- > 0)
      takeByte(*data++);
  }
  uint64_t finish() {
    if (fill)
      mix(pending);
    uint64_t h = bytes;
    for (uint64_t lane : lanes)
      h = (h ^ avalanche(lane)) * 0x9e3779b97f4a7c15ull;
    return avalanche(h);
  }

private:
  void takeByte(unsigned char b) {
    pending |= uint64_t(b) << (8 * fill);
    if (++fill == 8)
      mix(pending);
  }
  void mix(uint64_t word) {
    uint64_t &lane = lanes[words++ & 3];
    uint64_t k = word * 0x87c37b91114253d5ull;
    k = (k << 31) | (k >> 33);
    lane ^= k * 0x4cf5ad432745937full;
    lane = ((lane << 27) | (lane >> 37)) * 5 + 0x52dce729;
    bytes += fill ? fill : 8;
    pending = 0;
    fill = 0;
  }
  static uint64_t avalanche(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
  }
  uint64_t lanes[4] = {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull,
                       0x94d049bb133111ebull, 0x2545f4914f6cdd1dull};
  uint64_t words = 0, bytes = 0, pending = 0;
  unsigned fill = 0;
};

inline void putLE(unsigned char *out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<unsigned char>(v >> (8 * i));
}

/// The trailer attnc appends to a library of `size` bytes at `data`.
inline void makeTrailer(const unsigned char *data, std::size_t size,
                        unsigned char (&trailer)[kTrailerSize]) {
  Hasher hasher;
  hasher.update(data, size);
  putLE(trailer, hasher.finish());
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
