//===- compiler/driver/LowPrecision.h - bf16 and f16 values -----*- C++ -*-===//
//
// Floats to the bits of bf16 and f16 weights, for the random weights of
// attnc --init-weights: rounded to nearest even, as torch's
// `.to(torch.bfloat16)` and numpy's `astype(float16)`.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_LOWPRECISION_H
#define ATTNC_COMPILER_DRIVER_LOWPRECISION_H

#include "attn/model_abi.h"

#include "llvm/ADT/bit.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace attnc::driver {

inline uint16_t floatToBF16(float f) {
  uint32_t x = llvm::bit_cast<uint32_t>(f);
  if (std::isnan(f))
    return uint16_t((x >> 16) | 0x40); // quiet, sign kept
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

inline uint16_t floatToF16(float f) {
  uint32_t x = llvm::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  x &= 0x7fffffff;
  if (x > 0x7f800000) // nan
    return sign | 0x7e00;
  if (x >= 0x477ff000) // rounds to 65536 or more: inf
    return sign | 0x7c00;
  if (x < 0x38800000) { // below 2^-14: subnormal, the FPU rounds it
    float magic = llvm::bit_cast<float>(uint32_t(126) << 23); // 0.5
    uint32_t r = llvm::bit_cast<uint32_t>(llvm::bit_cast<float>(x) + magic);
    return sign | uint16_t(r - (uint32_t(126) << 23));
  }
  uint32_t odd = (x >> 13) & 1;
  x -= uint32_t(112) << 23; // rebias 127 -> 15
  return sign | uint16_t((x + 0xfff + odd) >> 13);
}

/// `values` stored as `dtype` (F32, BF16 or F16), rounded to nearest even.
inline std::vector<uint8_t> narrow(const std::vector<float> &values,
                                   attn_model_dtype dtype) {
  if (dtype == ATTN_MODEL_F32) {
    std::vector<uint8_t> out(values.size() * sizeof(float));
    std::memcpy(out.data(), values.data(), out.size());
    return out;
  }
  std::vector<uint8_t> out(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t h = dtype == ATTN_MODEL_BF16 ? floatToBF16(values[i])
                                          : floatToF16(values[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_LOWPRECISION_H
