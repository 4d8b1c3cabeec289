//===- test/unit/runtime/extreme_inputs_test.cpp - Inputs at the edges ----===//
//
// Real models (test/models/) on inputs at the edges of what they take: dims
// at their bounds and one past them, NaN and Inf values, and an arena larger
// than the memory the process may have.
//
//===----------------------------------------------------------------------===//
#include "test/unit/runtime/RealModels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sys/resource.h>

namespace {

using namespace attn::test;
using ::testing::HasSubstr;

/// Output element `i` of raw f32 bytes.
float at(const std::vector<uint8_t> &bytes, int64_t i) {
  float v;
  std::memcpy(&v, &bytes[i * 4], 4);
  return v;
}

TEST(ExtremeInputs, DimsAtTheirBoundsRunAndOnePastIsRefused) {
  attn::Model encoder = loadModel("encoder"); // B <= 8, S <= 32
  Inputs full = makeInputs(encoder, 8, 32, 1);
  std::vector<uint8_t> y = runOnce(encoder, full);
  EXPECT_EQ(y.size(), size_t(8 * 32 * 32 * 4));
  for (size_t i = 0; i < y.size() / 4; ++i)
    ASSERT_TRUE(std::isfinite(at(y, i))) << "element " << i;

  for (auto [b, s] : {std::pair<int64_t, int64_t>{9, 4}, {2, 33}}) {
    Inputs past = makeInputs(encoder, b, s, 2);
    int64_t dims[3] = {b, s, 32};
    std::vector<uint8_t> out(b * s * 32 * 4);
    attn_tensor output{nullptr, ATTN_F32, 3, dims, out.data()};
    EXPECT_EQ(attn_model_run(encoder.get(), past.tensors.data(), 2, &output, 1),
              ATTN_ERROR_DIM_OUT_OF_BOUNDS)
        << "B=" << b << " S=" << s;
    EXPECT_THAT(attn_last_error(),
                HasSubstr(b > 8 ? "(B) is 9, beyond its bound B <= 8"
                                : "(S) is 33, beyond its bound S <= 32"));
  }
}

/// NaN and Inf in one sequence reach that sequence's outputs and no other:
/// the other sequence's outputs are bit-identical to a run without them.
TEST(ExtremeInputs, NaNAndInfPropagateWithinTheirSequence) {
  attn::Model encoder = loadModel("encoder");
  Inputs clean = makeInputs(encoder, 2, 6, 3);
  std::vector<int32_t> lengths = {6, 6};
  std::memcpy(clean.data[1].data(), lengths.data(), 8);
  std::vector<uint8_t> expected = runOnce(encoder, clean);
  const int64_t perSequence = 6 * 32;
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    Inputs dirty = makeInputs(encoder, 2, 6, 3);
    std::memcpy(dirty.data[1].data(), lengths.data(), 8);
    std::memcpy(&dirty.data[0][(2 * 32 + 5) * 4], &bad, 4); // x[0, 2, 5]
    std::vector<uint8_t> y = runOnce(encoder, dirty);
    EXPECT_TRUE(std::equal(y.begin() + perSequence * 4, y.end(),
                           expected.begin() + perSequence * 4))
        << "sequence 1 changed with " << bad << " in sequence 0";
    // Token 2 of sequence 0 is itself not finite after its layer norms.
    for (int64_t f = 0; f < 32; ++f)
      EXPECT_FALSE(std::isfinite(at(y, 2 * 32 + f))) << bad << " feature " << f;
  }
}

/// An arena larger than the process may map is ATTN_ERROR_OUT_OF_MEMORY,
/// and the model still runs smaller inputs afterwards. In a child process,
/// whose address space is capped with setrlimit.
TEST(ExtremeInputs, ArenaLargerThanMemoryIsOutOfMemory) {
#ifdef ATTNC_SANITIZED
  GTEST_SKIP() << "ASan and TSan reserve terabytes of address space, so "
                  "RLIMIT_AS cannot cap it; the plain build runs this test";
#endif
  // The child runs this test again from the start, so it has no threads it
  // did not start itself.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  attn::Model wide = loadModel("wide");
  // x: [1, 32768, 8] is 1 MiB; the hidden layer [1, 32768, 4096] is 512 MiB.
  Inputs big = makeInputs(wide, 1, 32768, 4);
  std::vector<uint8_t> out(32768 * 8 * 4);
  int64_t outDims[3] = {1, 32768, 8};
  attn_tensor output{nullptr, ATTN_F32, 3, outDims, out.data()};
  EXPECT_EXIT(
      {
        rlimit limit;
        getrlimit(RLIMIT_AS, &limit);
        std::FILE *f = std::fopen("/proc/self/statm", "r");
        unsigned long pages = 0;
        if (!f || std::fscanf(f, "%lu", &pages) != 1)
          std::_Exit(100);
        std::fclose(f);
        // What the process maps now, and 256 MiB more.
        limit.rlim_cur = pages * 4096 + (256ul << 20);
        if (setrlimit(RLIMIT_AS, &limit) != 0)
          std::_Exit(101);
        attn_status s =
            attn_model_run(wide.get(), big.tensors.data(), 1, &output, 1);
        std::fprintf(stderr, "%s\n", attn_last_error());
        if (s != ATTN_ERROR_OUT_OF_MEMORY)
          std::_Exit(102);
        Inputs small = makeInputs(wide, 1, 4, 5);
        std::vector<uint8_t> y = runOnce(wide, small);
        std::_Exit(y.size() == 4 * 8 * 4 ? 0 : 103);
      },
      ::testing::ExitedWithCode(0), "cannot allocate the [0-9]+-byte arena");
}

} // namespace
