//===- test/unit/codegen/HalfBitsTest.cpp - bf16 / f16 bit conversions ----===//
//
// codegen/HalfBits.h against Halide's own bfloat16_t and float16_t (software
// conversions in its C++ headers, not the code under test), over every one
// of the 65536 bit patterns, JIT-compiled for the host.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/HalfBits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

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

TEST(HalfBits, EveryBFloat16PatternWidensExactlyAndNarrowsBack) {
  checkAll<bfloat16_t>(/*bfloat=*/true);
}

TEST(HalfBits, EveryFloat16PatternWidensExactlyAndNarrowsBack) {
  checkAll<float16_t>(/*bfloat=*/false);
}

} // namespace
