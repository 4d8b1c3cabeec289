//===- test/unit/runtime/attn_run_test.cpp - attn-run end to end ----------===//
//
// Runs the attn-run binary on fake_model.c and fake_weights_model.c with
// safetensors files written here, and checks its outputs, its messages and
// its exit codes.
//
//===----------------------------------------------------------------------===//
#include "attn/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sys/wait.h>

namespace fs = std::filesystem;
using namespace attn::safetensors;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

struct Result {
  int exitCode;
  std::string output; ///< stdout and stderr together
};

Result attnRun(const std::string &args) {
  std::string cmd = std::string(ATTN_RUN) + " " + args + " 2>&1";
  FILE *p = ::popen(cmd.c_str(), "r");
  Result r{-1, ""};
  if (!p)
    return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p))
    r.output.append(buf, n);
  int status = ::pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class AttnRunTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "attn_run_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
    for (int i = 0; i < 24; ++i)
      x.push_back(float(i % 5) - 2.0f);
    mask = {1, 0, -1, 2, 1, 1};
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string path(const std::string &name) const {
    return (dir / name).string();
  }

  /// Writes x: [2, 3, 4] and (optionally) mask: [2, 3].
  std::string writeInputs(bool withMask) {
    Writer w;
    EXPECT_TRUE(w.add("x", DType::F32, {2, 3, 4}, x.data(), 96).ok());
    if (withMask) {
      EXPECT_TRUE(w.add("mask", DType::F32, {2, 3}, mask.data(), 24).ok());
    }
    std::string p = path(withMask ? "in.safetensors" : "x_only.safetensors");
    EXPECT_TRUE(w.write(p).ok());
    return p;
  }

  fs::path dir;
  std::vector<float> x, mask;
};

TEST_F(AttnRunTest, RunsAndWritesOutputsByName) {
  std::string in = writeInputs(true), out = path("out.safetensors");
  Result r = attnRun(std::string(FAKE_MODEL) + " --inputs " + in +
                     " --outputs " + out + " --threads 1");
  ASSERT_EQ(r.exitCode, 0) << r.output;

  Expected<File> f = File::open(out);
  ASSERT_TRUE(f.ok()) << f.message();
  const Tensor *z = f->find("z");
  const Tensor *count = f->find("count");
  ASSERT_TRUE(z && count) << f->tensorNames();
  EXPECT_EQ(z->shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(count->dtype, DType::I32);
  EXPECT_EQ(count->shape, (std::vector<int64_t>{2}));
  const float bias[4] = {0.5f, -1.0f, 2.0f, 0.0f};
  const auto *zp = static_cast<const float *>(z->data);
  const auto *cp = static_cast<const int32_t *>(count->data);
  int32_t positives[2] = {0, 0};
  for (int i = 0; i < 24; ++i) {
    float want = std::max(0.0f, x[i] * mask[i / 4] + bias[i % 4]);
    EXPECT_FLOAT_EQ(zp[i], want) << "z element " << i;
    positives[i / 12] += want > 0.0f;
  }
  EXPECT_EQ(cp[0], positives[0]);
  EXPECT_EQ(cp[1], positives[1]);
}

TEST_F(AttnRunTest, MissingInputIsNamed) {
  Result r = attnRun(std::string(FAKE_MODEL) + " --inputs " +
                     writeInputs(false) + " --outputs " + path("o"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, AllOf(HasSubstr("attn-run: error:"),
                              HasSubstr("no tensor named 'mask'"),
                              HasSubstr("it has x")));
  EXPECT_FALSE(fs::exists(path("o")));
}

TEST_F(AttnRunTest, InputOfAnotherDtypeIsRefused) {
  Writer w;
  std::vector<int64_t> wide(6, 1);
  EXPECT_TRUE(w.add("x", DType::F32, {2, 3, 4}, x.data(), 96).ok());
  EXPECT_TRUE(w.add("mask", DType::I64, {2, 3}, wide.data(), 48).ok());
  std::string in = path("i64.safetensors");
  ASSERT_TRUE(w.write(in).ok());
  Result r = attnRun(std::string(FAKE_MODEL) + " --inputs " + in +
                     " --outputs " + path("o"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, AllOf(HasSubstr("tensor 'mask' has dtype I64"),
                              HasSubstr("convert it to F32")));
  EXPECT_FALSE(fs::exists(path("o")));
}

TEST_F(AttnRunTest, InfoShowsDynamicDims) {
  Result r = attnRun(std::string(FAKE_MODEL) + " --info");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("model fake"),
                              HasSubstr("x: F32 [B <= 8, S <= 16, 4]"),
                              HasSubstr("count: I32 [B <= 8]")));
}

TEST_F(AttnRunTest, Bench) {
  Result r = attnRun(std::string(FAKE_MODEL) + " --inputs " +
                     writeInputs(true) + " --bench 5");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("5 runs"), HasSubstr("median"),
                              HasSubstr("min")));
}

// --profile lists each kind of kernel once per run, with its share of the
// time; --bench gives tokens/s from the first input's dynamic dims (B x S).
TEST_F(AttnRunTest, ProfileAndTokens) {
  Result r = attnRun(std::string(FAKE_MODEL) + " --random B=2,S=3 --bench 3 "
                                               "--profile");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("(6 tokens per run)"),
                              HasSubstr("profile: 3 run(s)"),
                              HasSubstr("peak extra memory")));
  // Only scale_bias has a flop count in the library, so a GFLOP/s and an
  // intensity: 48 flops over its buffers' 232 bytes. Every kernel has GB/s.
  EXPECT_THAT(r.output,
              ::testing::ContainsRegex("\nscale_bias +1 +[0-9.]+ +[0-9.]+ "
                                       "+[0-9.]+ +[0-9.]+ +0\\.21\n"));
  for (const char *kernel : {"relu", "count_positive"})
    EXPECT_THAT(r.output, ::testing::ContainsRegex(
                              std::string("\n") + kernel +
                              " +1 +[0-9.]+ +[0-9.]+ +- +[0-9.]+ +-\n"))
        << kernel;
  EXPECT_THAT(r.output, HasSubstr("(4.8e-08 GFLOP per run)"));
  r = attnRun(std::string(FAKE_MODEL) + " --info --profile");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(
      r.output,
      HasSubstr("--heatmap and --device-memory need --inputs or --random"));
}

// Without --outputs each output is summarised; --random makes the inputs
// from bound dims; options take "--name=value" too.
TEST_F(AttnRunTest, RandomInputsAndSummary) {
  Result r = attnRun(std::string(FAKE_MODEL) + " --random B=2,S=3 --threads=1");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("output"), HasSubstr("mean"),
                              HasSubstr("z"), HasSubstr("[2, 3, 4]"),
                              HasSubstr("count"), HasSubstr("[2]")));
  // The one temp, y: [2, 3, 4] F32, is 96 bytes, in an arena of 128.
  EXPECT_THAT(r.output, HasSubstr("workspace: 128 bytes arena (largest live "
                                  "set 96 bytes; 96 bytes without reuse)"));
  // The summary is computed from the outputs: z = relu(...) >= 0.
  std::string zLine = r.output.substr(r.output.find("\nz "));
  EXPECT_EQ(zLine.find(" -"), std::string::npos) << zLine;

  r = attnRun(std::string(FAKE_MODEL) + " --random B=2");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, HasSubstr("--random needs a value for dim S"));
  r = attnRun(std::string(FAKE_MODEL) + " --random B=2,S=99");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, HasSubstr("beyond its bound S <= 16"));
  // A flag takes =true or =false (as attnc's do), nothing else.
  r = attnRun(std::string(FAKE_MODEL) + " --info=maybe");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, HasSubstr("Could not convert: --info = maybe"));
  r = attnRun(std::string(FAKE_MODEL) + " --version");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_THAT(r.output, HasSubstr("model ABI"));
}

TEST_F(AttnRunTest, ErrorsExitWithOne) {
  Result r = attnRun(path("missing.so") + " --info");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, HasSubstr("attn-run: error: cannot open model"));
  r = attnRun(std::string(FAKE_MODEL) + " --bogus");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "attn-run: error: unknown option '--bogus' (see "
                      "attn-run --help)\n");
  r = attnRun(std::string(FAKE_MODEL) + " --inputs " + writeInputs(true) +
              " --bench 0");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, HasSubstr("--bench: wants an integer >= 1, got '0'"));
}

// fake_weights_model.c reads bias and scale at load: c = 2 * bias,
// y = x * scale + c + u, p = [c; y] with x: [S, 4], u: [2*S, 2].
class AttnRunWeightsTest : public AttnRunTest {
protected:
  std::string writeWeights() {
    Writer w;
    EXPECT_TRUE(w.add("bias", DType::F32, {4}, bias, 16).ok());
    EXPECT_TRUE(w.add("scale", DType::F32, {4}, scale, 16).ok());
    std::string p = path("w.safetensors");
    EXPECT_TRUE(w.write(p).ok());
    return p;
  }
  std::string writeWeightsInputs() {
    Writer w;
    EXPECT_TRUE(w.add("x", DType::F32, {2, 4}, x.data(), 32).ok());
    EXPECT_TRUE(w.add("u", DType::F32, {4, 2}, x.data() + 8, 32).ok());
    std::string p = path("wx.safetensors");
    EXPECT_TRUE(w.write(p).ok());
    return p;
  }

  const float bias[4] = {1.0f, -2.0f, 0.5f, 0.0f};
  const float scale[4] = {2.0f, 1.0f, -1.0f, 3.0f};
};

TEST_F(AttnRunWeightsTest, WeightsFileIsReadAtLoad) {
  std::string out = path("out.safetensors");
  Result r =
      attnRun(std::string(FAKE_WEIGHTS) + " --weights " + writeWeights() +
              " --inputs " + writeWeightsInputs() + " --outputs " + out);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  Expected<File> f = File::open(out);
  ASSERT_TRUE(f.ok()) << f.message();
  const Tensor *y = f->find("y");
  const Tensor *p = f->find("p");
  ASSERT_TRUE(y && p) << f->tensorNames();
  EXPECT_EQ(y->shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(p->shape, (std::vector<int64_t>{3, 4}));
  const auto *yp = static_cast<const float *>(y->data);
  const auto *pp = static_cast<const float *>(p->data);
  for (int i = 0; i < 8; ++i) {
    float want = x[i] * scale[i % 4] + 2.0f * bias[i % 4] + x[8 + i];
    EXPECT_FLOAT_EQ(yp[i], want) << "y element " << i;
    EXPECT_FLOAT_EQ(pp[4 + i], want) << "p element " << 4 + i;
  }
  for (int c = 0; c < 4; ++c)
    EXPECT_FLOAT_EQ(pp[c], 2.0f * bias[c]) << "p element " << c;
}

TEST_F(AttnRunWeightsTest, SummaryWithWeightsAsInlineValue) {
  Result r =
      attnRun(std::string(FAKE_WEIGHTS) + " --weights=" + writeWeights() +
              " --inputs=" + writeWeightsInputs());
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("\ny "), HasSubstr("[2, 4]"),
                              HasSubstr("\np "), HasSubstr("[3, 4]")));
  // The summary is computed from the outputs: p's min and max.
  float lo = 2.0f * bias[0], hi = lo;
  for (int i = 0; i < 12; ++i) {
    float v = i < 4 ? 2.0f * bias[i]
                    : x[i - 4] * scale[i % 4] + 2.0f * bias[i % 4] + x[i + 4];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  char range[64];
  std::snprintf(range, sizeof range, " %g ", double(lo));
  std::string pLine = r.output.substr(r.output.find("\np "));
  EXPECT_THAT(pLine, HasSubstr(range));
  std::snprintf(range, sizeof range, " %g ", double(hi));
  EXPECT_THAT(pLine, HasSubstr(range));

  // attn_dim_info cannot describe u: [2*S, 2], so --random sizes it as S
  // and the runtime says what the dim must be.
  r = attnRun(std::string(FAKE_WEIGHTS) + " --weights=" + writeWeights() +
              " --random S=3");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, HasSubstr("declares it 2*S, which is 6 with S=3"));
}

// --info alone loads the model only to describe it: no weights needed.
TEST_F(AttnRunWeightsTest, InfoNeedsNoWeights) {
  Result r = attnRun(std::string(FAKE_WEIGHTS) + " --info");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_THAT(r.output, AllOf(HasSubstr("model fake_weights"),
                              HasSubstr("x: F32 [S <= 16, 4]"),
                              HasSubstr("p: F32 [S, 4]")));
  EXPECT_THAT(r.output, Not(HasSubstr("workspace")));
}

TEST_F(AttnRunWeightsTest, MissingWeightsIsTheRuntimesMessage) {
  Result r = attnRun(std::string(FAKE_WEIGHTS) + " --random S=3");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output,
              AllOf(HasSubstr("attn-run: error: model 'fake_weights'"),
                    HasSubstr("reads its 2 weights"),
                    HasSubstr("attn-run --weights FILE")));
  r = attnRun(std::string(FAKE_MODEL) + " --weights " + writeWeights() +
              " --info");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, HasSubstr("embeds its weights"));
  r = attnRun(std::string(FAKE_WEIGHTS) + " --weights");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.output, HasSubstr("--weights needs a value"));
}

} // namespace
