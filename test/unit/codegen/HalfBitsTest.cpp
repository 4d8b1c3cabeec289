//===- test/unit/codegen/HalfBitsTest.cpp - bf16 / f16 bit conversions ----===//
//
// codegen/HalfBits.h against Halide's own bfloat16_t and float16_t (software
// conversions in its C++ headers, not the code under test), over every one
// of the 65536 bit patterns, JIT-compiled for the host. Narrowing f32 values
// that need rounding (KV caches in f16 / bf16) is checked against the
// compiler's _Float16 conversion and, for bf16, the nearer of the two
// neighbours in double, ties to even; both as bits and as the half types a
// cache has on the CPU.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/HalfBits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

using namespace Halide;

namespace {

/// widenHalfBits of every pattern, then narrowToHalfBits of that.
struct AllPatterns {
  Buffer<float> wide;
  Buffer<uint16_t> narrowed;
};

AllPatterns convertAll(bool bfloat) {
  Var x("x");
  Func wide("wide"), narrowed("narrowed");
  wide(x) = attnc::codegen::widenHalfBits(cast(UInt(16), x), bfloat);
  narrowed(x) = attnc::codegen::narrowToHalfBits(wide(x), bfloat);
  wide.compute_root();
  Realization r = Pipeline({wide, narrowed}).realize({65536});
  return {r[0], r[1]};
}

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

template <typename Half> void checkAll(bool bfloat) {
  AllPatterns all = convertAll(bfloat);
  int mismatches = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float expected = float(Half::make_from_bits(uint16_t(bits)));
    float got = all.wide(int(bits));
    if (std::isnan(expected)) {
      // Any NaN widens to a NaN; its payload is not kept by every path.
      if (!std::isnan(got) && ++mismatches < 5)
        ADD_FAILURE() << "bits " << bits << " widened to " << got;
      continue;
    }
    if (bitsOf(got) != bitsOf(expected) && ++mismatches < 5)
      ADD_FAILURE() << "bits " << bits << " widened to " << got << ", expected "
                    << expected;
    if (all.narrowed(int(bits)) != bits && ++mismatches < 5)
      ADD_FAILURE() << "bits " << bits << " came back as "
                    << all.narrowed(int(bits));
  }
  EXPECT_EQ(mismatches, 0);
}

float floatOf(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// f32 values that need rounding: every half value's midpoint to the next
/// one (ties), one f32 step either side of it, and a sweep over the f32
/// patterns; each with both signs, and infinities and NaNs.
std::vector<float> roundingCases(bool bfloat) {
  std::vector<float> cases;
  // Up to the largest finite value (65520 and its neighbours are below).
  uint32_t largest = bfloat ? 0x7f7f : 0x7bff;
  for (uint32_t h = 0; h < largest; ++h) {
    float lo = bfloat ? floatOf(h << 16)
                      : float(float16_t::make_from_bits(uint16_t(h)));
    float hi = bfloat ? floatOf((h + 1) << 16)
                      : float(float16_t::make_from_bits(uint16_t(h + 1)));
    float mid = float((double(lo) + double(hi)) / 2);
    for (float v : {mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, std::numeric_limits<float>::max())})
      cases.push_back(v);
  }
  for (uint64_t bits = 0; bits < (uint64_t(1) << 31); bits += 4093)
    cases.push_back(floatOf(uint32_t(bits)));
  cases.push_back(std::numeric_limits<float>::infinity());
  cases.push_back(std::numeric_limits<float>::max());
  cases.push_back(65519.996f);
  cases.push_back(65520.0f);
  cases.push_back(std::nanf(""));
  cases.push_back(floatOf(0x7f800001)); // a NaN that rounding could carry
  size_t n = cases.size();
  for (size_t i = 0; i < n; ++i)
    cases.push_back(-cases[i]);
  return cases;
}

/// `v` rounded to nearest even: for f16 by the compiler's conversion, for
/// bf16 the nearer neighbour in double (ties: the even one).
uint16_t reference(float v, bool bfloat) {
  if (!bfloat) {
    _Float16 h = _Float16(v);
    uint16_t bits;
    std::memcpy(&bits, &h, sizeof bits);
    return bits;
  }
  uint32_t down = bitsOf(v) & 0xffff0000u;
  if (std::isinf(v) || std::isnan(v))
    return uint16_t(down >> 16);
  // Past the largest finite bf16, the next value is 2^128 (infinity).
  double below = floatOf(down),
         above = ((down + 0x10000u) & 0x7fffffffu) == 0x7f800000u
                     ? std::copysign(std::ldexp(1.0, 128), v)
                     : floatOf(down + 0x10000u);
  double dBelow = std::fabs(v - below), dAbove = std::fabs(above - v);
  bool up = dAbove < dBelow || (dAbove == dBelow && ((down >> 16) & 1));
  return uint16_t((up ? down + 0x10000u : down) >> 16);
}

/// `narrow` of each case, JIT-compiled for the host; mismatches reported.
void checkRounding(bool bfloat, const char *what,
                   const std::function<Expr(Expr)> &narrow) {
  std::vector<float> cases = roundingCases(bfloat);
  Buffer<float> in(int(cases.size()));
  for (size_t i = 0; i < cases.size(); ++i)
    in(int(i)) = cases[i];
  Var x("x");
  Func rounded("rounded");
  rounded(x) = narrow(in(x));
  Buffer<uint16_t> out = rounded.realize({int(cases.size())});
  int mismatches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    float v = cases[i];
    uint16_t got = out(int(i)), expected = reference(v, bfloat);
    uint16_t exponent = bfloat ? 0x7f80 : 0x7c00;
    bool gotNan = (got & exponent) == exponent && (got & ~exponent & 0x7fff);
    if (std::isnan(v) ? !gotNan : got != expected) {
      if (++mismatches < 20)
        ADD_FAILURE() << what << ": " << v << " (bits " << std::hex << bitsOf(v)
                      << ") became " << got << ", expected " << expected;
    }
  }
  EXPECT_EQ(mismatches, 0) << what << " of " << cases.size() << " values";
}

TEST(HalfBits, NarrowingRoundsToNearestEven) {
  for (bool bfloat : {true, false})
    checkRounding(
        bfloat, bfloat ? "narrowToHalfBits bf16" : "narrowToHalfBits f16",
        [&](Expr v) { return attnc::codegen::narrowToHalfBits(v, bfloat); });
}

/// What an f16 or bf16 KV cache stores on the CPU (Halide's f16 cast).
TEST(HalfBits, NarrowingToHalfTypesRoundsToNearestEven) {
  checkRounding(true, "narrowToHalf BFloat(16)", [](Expr v) {
    return reinterpret(
        UInt(16), attnc::codegen::narrowToHalf(v, BFloat(16), /*bfloat=*/true));
  });
  checkRounding(false, "narrowToHalf Float(16)", [](Expr v) {
    return reinterpret(
        UInt(16), attnc::codegen::narrowToHalf(v, Float(16), /*bfloat=*/false));
  });
}

TEST(HalfBits, EveryBFloat16PatternWidensExactlyAndNarrowsBack) {
  checkAll<bfloat16_t>(/*bfloat=*/true);
}

TEST(HalfBits, EveryFloat16PatternWidensExactlyAndNarrowsBack) {
  checkAll<float16_t>(/*bfloat=*/false);
}

} // namespace
