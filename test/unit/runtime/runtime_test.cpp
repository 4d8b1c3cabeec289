//===- test/unit/runtime/runtime_test.cpp - libattnrt tests ---------------===//
//
// Drives the C API (and the C++ wrapper) against fake_model.c: the model
// y = x * mask[..., None] + bias, z = relu(y), count[b] = #{z[b] > 0} with
// x: [B, S, 4], mask: [B, S], B <= 8, S <= 16; and against
// fake_weights_model.c, which reads its weights from a safetensors file at
// load: c = 2 * bias (its "init" entry), t = x * scale + c, y = t,
// p = [c; t] with x: [S, 4], t: [2*S, 2], p: [S + 1, 4].
//
//===----------------------------------------------------------------------===//
#include "attn/attn.h"
#include "attn/attn.hpp"
#include "attn/library_digest.h"
#include "attn/model_abi.h"
#include "attn/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
namespace st = attn::safetensors;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

const float FakeBias[4] = {0.5f, -1.0f, 2.0f, 0.0f};
const float Fake2Bias[4] = {10.0f, 20.0f, 30.0f, 40.0f};

/// Inputs and outputs of one call of the fake model, with the expected
/// values computed here in plain C++.
struct Case {
  Case(int64_t b, int64_t s)
      : xDims{b, s, 4}, maskDims{b, s}, zDims{b, s, 4}, countDims{b} {
    x.resize(b * s * 4);
    mask.resize(b * s);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = float(int(i * 7 % 11) - 5) * 0.5f;
    for (std::size_t i = 0; i < mask.size(); ++i)
      mask[i] = float(int(i % 3) - 1);
    z.assign(x.size(), -99.0f);
    count.assign(b, -1);
  }

  std::vector<attn_tensor> inputs() {
    return {{"x", ATTN_F32, 3, xDims.data(), x.data()},
            {"mask", ATTN_F32, 2, maskDims.data(), mask.data()}};
  }
  std::vector<attn_tensor> outputs() {
    return {{"z", ATTN_F32, 3, zDims.data(), z.data()},
            {"count", ATTN_I32, 1, countDims.data(), count.data()}};
  }
  attn_status run(attn_model *m) {
    auto in = inputs();
    auto out = outputs();
    return attn_model_run(m, in.data(), 2, out.data(), 2);
  }

  void expectResult(const float *bias) const {
    int64_t perBatch = xDims[1] * 4;
    for (int64_t b = 0; b < xDims[0]; ++b) {
      int32_t positives = 0;
      for (int64_t i = 0; i < perBatch; ++i) {
        int64_t e = b * perBatch + i;
        float want = std::max(0.0f, x[e] * mask[e / 4] + bias[e % 4]);
        ASSERT_FLOAT_EQ(z[e], want) << "at element " << e;
        positives += want > 0.0f;
      }
      EXPECT_EQ(count[b], positives) << "batch " << b;
    }
  }

  std::vector<int64_t> xDims, maskDims, zDims, countDims;
  std::vector<float> x, mask, z;
  std::vector<int32_t> count;
};

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(attn_model_load(FAKE_MODEL, &model), ATTN_OK)
        << attn_last_error();
  }
  void TearDown() override { attn_model_free(model); }

  std::string error() const { return attn_last_error(); }

  attn_model *model = nullptr;
};

TEST_F(RuntimeTest, InfoSize) {
  attn_model_info info{};
  for (uint32_t size : {0u, 2u}) {
    info.size = size;
    EXPECT_EQ(attn_model_get_info(model, &info), ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_THAT(error(),
                AllOf(HasSubstr("info->size is " + std::to_string(size)),
                      HasSubstr("sizeof(attn_model_info)")));
  }
  // An older caller's struct ends before `precision`: only its `size` bytes
  // are written, so the field past them keeps the caller's value.
  const char *untouched = "untouched";
  info.size = offsetof(attn_model_info, precision);
  info.precision = untouched;
  ASSERT_EQ(attn_model_get_info(model, &info), ATTN_OK) << error();
  EXPECT_STREQ(info.name, "fake");
  EXPECT_EQ(info.size, offsetof(attn_model_info, precision));
  EXPECT_EQ(info.precision, untouched);
  // A newer caller's larger struct: the fields this runtime lacks are left.
  struct {
    attn_model_info known;
    uint64_t later;
  } newer{};
  newer.known.size = sizeof newer;
  newer.later = 7;
  ASSERT_EQ(attn_model_get_info(model, &newer.known), ATTN_OK) << error();
  EXPECT_STREQ(newer.known.precision, "f32");
  EXPECT_EQ(newer.known.size, sizeof newer);
  EXPECT_EQ(newer.later, 7u);
}

TEST_F(RuntimeTest, Info) {
  attn_model_info info{};
  info.size = sizeof info;
  ASSERT_EQ(attn_model_get_info(model, &info), ATTN_OK);
  EXPECT_STREQ(info.name, "fake");
  EXPECT_STREQ(info.compiler_version, "fake-compiler 1.0");
  EXPECT_STREQ(info.target, "host");
  EXPECT_STREQ(info.path, FAKE_MODEL);
  EXPECT_STREQ(info.precision, "f32");
  EXPECT_EQ(attn_runtime_abi_version(), ATTN_MODEL_ABI_VERSION);

  ASSERT_EQ(attn_model_num_inputs(model), 2);
  ASSERT_EQ(attn_model_num_outputs(model), 2);
  attn_tensor_info x;
  ASSERT_EQ(attn_model_input_info(model, 0, &x), ATTN_OK);
  EXPECT_STREQ(x.name, "x");
  EXPECT_EQ(x.dtype, ATTN_F32);
  ASSERT_EQ(x.rank, 3);
  EXPECT_EQ(x.dims[0].is_dynamic, 1);
  EXPECT_STREQ(x.dims[0].symbol, "B");
  EXPECT_EQ(x.dims[0].max, 8);
  EXPECT_EQ(x.dims[0].extent, -1);
  EXPECT_STREQ(x.dims[1].symbol, "S");
  EXPECT_EQ(x.dims[1].max, 16);
  EXPECT_EQ(x.dims[2].is_dynamic, 0);
  EXPECT_EQ(x.dims[2].extent, 4);
  EXPECT_EQ(x.dims[2].symbol, nullptr);

  attn_tensor_info count;
  ASSERT_EQ(attn_model_output_info(model, 1, &count), ATTN_OK);
  EXPECT_STREQ(count.name, "count");
  EXPECT_EQ(count.dtype, ATTN_I32);
  ASSERT_EQ(count.rank, 1);
  EXPECT_STREQ(count.dims[0].symbol, "B");

  EXPECT_EQ(attn_model_output_info(model, 2, &count),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(error(), HasSubstr("has 2 outputs"));
}

TEST_F(RuntimeTest, RunComputesTheModel) {
  Case c(2, 3);
  ASSERT_EQ(c.run(model), ATTN_OK) << error();
  c.expectResult(FakeBias);
}

TEST_F(RuntimeTest, TempBuffersFollowTheShapeAcrossRuns) {
  for (auto [b, s] :
       {std::pair<int64_t, int64_t>{1, 2}, {8, 16}, {3, 1}, {8, 16}, {2, 1}}) {
    Case c(b, s);
    ASSERT_EQ(c.run(model), ATTN_OK) << error();
    c.expectResult(FakeBias);
  }
}

TEST_F(RuntimeTest, InputsByPositionAndInAnyOrder) {
  Case c(2, 5);
  auto in = c.inputs();
  auto out = c.outputs();
  std::swap(in[0], in[1]);
  std::swap(out[0], out[1]);
  ASSERT_EQ(attn_model_run(model, in.data(), 2, out.data(), 2), ATTN_OK)
      << error();
  c.expectResult(FakeBias);

  Case p(1, 4);
  in = p.inputs();
  out = p.outputs();
  for (auto *list : {&in, &out})
    for (attn_tensor &t : *list)
      t.name = nullptr;
  ASSERT_EQ(attn_model_run(model, in.data(), 2, out.data(), 2), ATTN_OK)
      << error();
  p.expectResult(FakeBias);
}

TEST_F(RuntimeTest, OutputDims) {
  Case c(3, 7);
  auto in = c.inputs();
  in[0].data = in[1].data = nullptr; // only dims are needed here
  int64_t dims[ATTN_MAX_RANK];
  ASSERT_EQ(attn_model_output_dims(model, in.data(), 2, 0, dims, ATTN_MAX_RANK),
            ATTN_OK)
      << error();
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 3),
            (std::vector<int64_t>{3, 7, 4}));
  ASSERT_EQ(attn_model_output_dims(model, in.data(), 2, 1, dims, 1), ATTN_OK);
  EXPECT_EQ(dims[0], 3);
  EXPECT_EQ(attn_model_output_dims(model, in.data(), 2, 0, dims, 2),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(error(), HasSubstr("max_rank"));
  c.xDims[1] = 99;
  EXPECT_EQ(attn_model_output_dims(model, in.data(), 2, 0, dims, 8),
            ATTN_ERROR_DIM_OUT_OF_BOUNDS);
}

TEST_F(RuntimeTest, WrongDtype) {
  Case c(2, 3);
  auto in = c.inputs();
  auto out = c.outputs();
  in[0].dtype = ATTN_I32;
  EXPECT_EQ(attn_model_run(model, in.data(), 2, out.data(), 2),
            ATTN_ERROR_DTYPE_MISMATCH);
  EXPECT_THAT(error(), AllOf(HasSubstr("input 'x'"), HasSubstr("I32"),
                             HasSubstr("expects F32")));
  in = c.inputs();
  out[1].dtype = ATTN_F32;
  EXPECT_EQ(attn_model_run(model, in.data(), 2, out.data(), 2),
            ATTN_ERROR_DTYPE_MISMATCH);
  EXPECT_THAT(error(), HasSubstr("output 'count'"));
}

TEST_F(RuntimeTest, WrongRank) {
  Case c(2, 3);
  auto in = c.inputs();
  auto out = c.outputs();
  in[1].rank = 1;
  EXPECT_EQ(attn_model_run(model, in.data(), 2, out.data(), 2),
            ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(error(), AllOf(HasSubstr("input 'mask' has rank 1"),
                             HasSubstr("rank 2 [B, S]")));
}

TEST_F(RuntimeTest, WrongFixedDim) {
  Case c(2, 3);
  c.xDims[2] = 5;
  EXPECT_EQ(c.run(model), ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(error(), AllOf(HasSubstr("input 'x' dim 2 is 5"),
                             HasSubstr("fixes it to 4")));
}

TEST_F(RuntimeTest, DimBeyondItsBound) {
  Case c(2, 17);
  EXPECT_EQ(c.run(model), ATTN_ERROR_DIM_OUT_OF_BOUNDS);
  EXPECT_THAT(error(), AllOf(HasSubstr("input 'x' dim 1 (S) is 17"),
                             HasSubstr("S <= 16")));
}

// An empty batch and an empty sequence are refused alike, before any kernel
// runs (S = 0 used to fail inside a kernel, B = 0 to run).
TEST_F(RuntimeTest, ZeroSizedDimsAreRefused) {
  Case batch(0, 3);
  EXPECT_EQ(batch.run(model), ATTN_ERROR_DIM_OUT_OF_BOUNDS);
  EXPECT_THAT(error(), AllOf(HasSubstr("input 'x' dim 0 (B) is 0"),
                             HasSubstr("at least one B")));
  Case sequence(2, 0);
  EXPECT_EQ(sequence.run(model), ATTN_ERROR_DIM_OUT_OF_BOUNDS);
  EXPECT_THAT(error(), AllOf(HasSubstr("input 'x' dim 1 (S) is 0"),
                             HasSubstr("at least one S")));
}

TEST_F(RuntimeTest, InconsistentSymbolBinding) {
  Case c(2, 3);
  c.maskDims[1] = 4;
  EXPECT_EQ(c.run(model), ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(error(), AllOf(HasSubstr("symbol S is 3 in input 'x' dim 1"),
                             HasSubstr("but 4 in input 'mask' dim 1")));
}

TEST_F(RuntimeTest, WrongOutputShape) {
  Case c(2, 3);
  c.zDims[1] = 4;
  EXPECT_EQ(c.run(model), ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(error(),
              AllOf(HasSubstr("output 'z' has dims [2, 4, 4]"),
                    HasSubstr("make it [2, 3, 4]"), HasSubstr("B=2, S=3")));
}

TEST_F(RuntimeTest, MissingUnknownAndDuplicateTensors) {
  Case c(2, 3);
  auto in = c.inputs();
  auto out = c.outputs();
  EXPECT_EQ(attn_model_run(model, in.data(), 1, out.data(), 2),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(error(), HasSubstr("has 2 inputs (x, mask) but 1 were given"));
  in[1].name = "mask2";
  EXPECT_EQ(attn_model_run(model, in.data(), 2, out.data(), 2),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(error(), HasSubstr("no input named 'mask2'"));
  in[1].name = "x";
  EXPECT_EQ(attn_model_run(model, in.data(), 2, out.data(), 2),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(error(), HasSubstr("'x' is given twice"));
  in = c.inputs();
  in[0].data = nullptr;
  EXPECT_EQ(attn_model_run(model, in.data(), 2, out.data(), 2),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(error(), HasSubstr("input 'x' has NULL data"));
}

TEST_F(RuntimeTest, KernelErrorCarriesItsMessage) {
  Case c(2, 3);
  c.mask[4] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(c.run(model), ATTN_ERROR_KERNEL_FAILED);
  EXPECT_THAT(error(), AllOf(HasSubstr("kernel 'scale_bias' (step 0)"),
                             HasSubstr("mask contains NaN")));
  // The model stays usable after a failed run.
  Case ok(1, 1);
  ASSERT_EQ(ok.run(model), ATTN_OK) << error();
  ok.expectResult(FakeBias);
}

// A profiler sees every kernel call of a run, in plan order, with its name
// and a time, until it stops listening.
TEST_F(RuntimeTest, StepCallbackSeesEveryKernelCall) {
  std::vector<attn_step_event> events;
  std::vector<std::string> names;
  auto record = [](void *user, const attn_step_event *e) {
    auto *seen = static_cast<std::vector<attn_step_event> *>(user);
    seen->push_back(*e);
  };
  ASSERT_EQ(attn_model_set_step_callback(model, record, &events), ATTN_OK);
  Case c(2, 3);
  ASSERT_EQ(c.run(model), ATTN_OK) << error();
  ASSERT_EQ(c.run(model), ATTN_OK) << error();
  ASSERT_EQ(events.size(), 6u);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].step, int32_t(i % 3));
    EXPECT_EQ(events[i].num_steps, 3);
    EXPECT_GE(events[i].seconds, 0.0);
    // The library counts scale_bias's flops as 8 * B * S; the others none.
    EXPECT_EQ(events[i].flops, i % 3 == 0 ? 8.0 * 2 * 3 : 0.0);
    // Its buffers' bytes: x, mask, bias, y (f32 [2, 3, 4], [2, 3], [4],
    // [2, 3, 4]); y, z; z and the i32 count [2].
    const double bytes[] = {4.0 * (24 + 6 + 4 + 24), 4.0 * (24 + 24),
                            4.0 * 24 + 4 * 2};
    EXPECT_EQ(events[i].bytes, bytes[i % 3]);
    names.push_back(events[i].kernel);
  }
  EXPECT_THAT(names,
              ::testing::ElementsAre("scale_bias", "relu", "count_positive",
                                     "scale_bias", "relu", "count_positive"));
  ASSERT_EQ(attn_model_set_step_callback(model, nullptr, nullptr), ATTN_OK);
  ASSERT_EQ(c.run(model), ATTN_OK) << error();
  EXPECT_EQ(events.size(), 6u);
  EXPECT_EQ(attn_model_set_step_callback(nullptr, record, &events),
            ATTN_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, SetThreads) {
  EXPECT_EQ(attn_model_set_threads(model, 2), ATTN_OK);
  EXPECT_EQ(attn_model_set_threads(model, -1), ATTN_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeTest, TwoModelsAtOnceAreIndependent) {
  attn_model *second = nullptr;
  ASSERT_EQ(attn_model_load(FAKE_MODEL2, &second), ATTN_OK) << error();
  attn_model_info info{};
  info.size = sizeof info;
  ASSERT_EQ(attn_model_get_info(second, &info), ATTN_OK);
  EXPECT_STREQ(info.name, "fake2");

  Case a(2, 3), b(4, 2);
  ASSERT_EQ(a.run(model), ATTN_OK) << error();
  ASSERT_EQ(b.run(second), ATTN_OK) << error();
  a.expectResult(FakeBias);
  b.expectResult(Fake2Bias);

  attn_model_free(second);
  Case again(1, 5);
  ASSERT_EQ(again.run(model), ATTN_OK) << error();
  again.expectResult(FakeBias);
}

TEST_F(RuntimeTest, SameLibraryTwice) {
  attn_model *twin = nullptr;
  ASSERT_EQ(attn_model_load(FAKE_MODEL, &twin), ATTN_OK) << error();
  attn_model_free(twin);
  Case c(2, 2);
  ASSERT_EQ(c.run(model), ATTN_OK) << error();
  c.expectResult(FakeBias);
}

attn_status loadFails(const char *path, std::string &message) {
  attn_model *m = reinterpret_cast<attn_model *>(&message); // must be reset
  attn_status s = attn_model_load(path, &m);
  EXPECT_EQ(m, nullptr);
  message = attn_last_error();
  return s;
}

TEST(RuntimeLoadTest, MissingFile) {
  std::string msg;
  EXPECT_EQ(loadFails("/nonexistent/model.so", msg), ATTN_ERROR_IO);
  EXPECT_THAT(msg, HasSubstr("/nonexistent/model.so"));
}

TEST(RuntimeLoadTest, NotASharedLibrary) {
  std::string path = ::testing::TempDir() + "attn_not_a_library.so";
  std::ofstream(path) << "this is text, not ELF\n";
  std::string msg;
  EXPECT_EQ(loadFails(path.c_str(), msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, AllOf(HasSubstr(path), HasSubstr("not a loadable")));
  std::remove(path.c_str());
}

// A truncated library (a copy cut short, as an interrupted download leaves
// it) is refused before dlopen maps it: touching its missing pages would
// kill the process with SIGBUS.
TEST(RuntimeLoadTest, TruncatedLibrary) {
  std::string path = ::testing::TempDir() + "attn_truncated.so";
  std::ifstream in(FAKE_MODEL, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 8000u);
  // (Bytes past the last loaded segment, the section headers, are not
  // needed to load it; a digest of the whole file would catch their loss.)
  for (std::size_t size :
       {std::size_t(100), std::size_t(8000), bytes.size() / 2}) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), size);
    std::string msg;
    EXPECT_EQ(loadFails(path.c_str(), msg), ATTN_ERROR_INVALID_LIBRARY) << size;
    EXPECT_THAT(msg, AllOf(HasSubstr(path), HasSubstr("truncated"))) << size;
  }
  // Another architecture's library is refused by its ELF header.
  std::string foreign = bytes;
  foreign[18] = 0x28; // e_machine: EM_ARM
  foreign[19] = 0;
  std::ofstream(path, std::ios::binary).write(foreign.data(), foreign.size());
  std::string msg;
  EXPECT_EQ(loadFails(path.c_str(), msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, HasSubstr("another processor architecture"));
  std::remove(path.c_str());
}

// attnc appends a digest to every library it links: a bit flipped anywhere,
// a byte cut off the end, or no digest at all is refused before dlopen.
TEST(RuntimeLoadTest, DamagedLibrary) {
  std::string path = ::testing::TempDir() + "attn_damaged.so";
  std::ifstream in(FAKE_MODEL, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto write = [&](const std::string &content) {
    std::ofstream(path, std::ios::binary).write(content.data(), content.size());
  };
  // The same bytes load.
  write(bytes);
  attn_model *m = nullptr;
  ASSERT_EQ(attn_model_load(path.c_str(), &m), ATTN_OK) << attn_last_error();
  attn_model_free(m);
  // The trailer: XXH3_64bits of every byte before it, their count, the magic.
  const std::size_t body = bytes.size() - attn::digest::kTrailerSize;
  const auto *data = reinterpret_cast<const unsigned char *>(bytes.data());
  EXPECT_EQ(attn::digest::getLE(data + body), XXH3_64bits(data, body));
  EXPECT_EQ(attn::digest::getLE(data + body + 8), body);
  EXPECT_EQ(bytes.substr(body + 16), "ATTNXXH3");
  // A flipped bit in the ELF header's padding (which the ELF check does not
  // read), the code, the last byte hashed, or the stored hash itself.
  for (std::size_t at : {std::size_t(EI_PAD), bytes.size() / 3,
                         bytes.size() * 3 / 4, body - 1, body + 3}) {
    std::string flipped = bytes;
    flipped[at] ^= 0x10;
    write(flipped);
    std::string msg;
    EXPECT_EQ(loadFails(path.c_str(), msg), ATTN_ERROR_INVALID_LIBRARY) << at;
    EXPECT_THAT(msg, HasSubstr("do not match the digest")) << at;
  }
  std::string cut = bytes;
  cut.erase(body - 1, 1); // one byte before the trailer
  write(cut);
  std::string msg;
  EXPECT_EQ(loadFails(path.c_str(), msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, HasSubstr("its digest covers"));
  write(bytes.substr(0, bytes.size() - attn::digest::kTrailerSize));
  EXPECT_EQ(loadFails(path.c_str(), msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, HasSubstr("carries no attnc digest"));
  // attnc's digest before XXH3 (magic ATTNDGST): named, not "damaged".
  std::string older = bytes;
  older.replace(body + 16, 8, "ATTNDGST");
  write(older);
  EXPECT_EQ(loadFails(path.c_str(), msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, HasSubstr("its digest is in an older attnc's format"));
  std::remove(path.c_str());
}

TEST(RuntimeLoadTest, DescriptorSymbolThatIsData) {
  std::string msg;
  EXPECT_EQ(loadFails(DATA_SYMBOL, msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, HasSubstr("attn_model_descriptor is not a function"));
}

TEST(RuntimeLoadTest, LibraryWithoutEntrySymbol) {
  std::string msg;
  EXPECT_EQ(loadFails(NOT_A_MODEL, msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, AllOf(HasSubstr("not an attnc model"),
                         HasSubstr("exports no attn_model_descriptor:")));
}

// Until the first release the runtime reads one model ABI: a descriptor of
// any other version, earlier or later, is refused.
TEST(RuntimeLoadTest, WrongAbiVersion) {
  const std::string reads = "this runtime reads model ABI " +
                            std::to_string(ATTN_MODEL_ABI_VERSION) + " only";
  struct {
    const char *path, *built;
  } cases[] = {{FAKE_MODEL_ABI4, "' was built for model ABI 4; "},
               {FAKE_MODEL_ABI99, "' was built for model ABI 99; "}};
  for (const auto &c : cases) {
    std::string msg;
    EXPECT_EQ(loadFails(c.path, msg), ATTN_ERROR_ABI_MISMATCH) << c.path;
    EXPECT_THAT(msg, AllOf(HasSubstr(std::string(c.path) + c.built),
                           HasSubstr(reads),
                           HasSubstr("rebuild it with this attnc")));
  }
}

// A library with a device this runtime does not know is corrupt.
TEST(RuntimeLoadTest, UnknownDeviceIsRefused) {
  std::string msg;
  EXPECT_EQ(loadFails(FAKE_MODEL_BADDEVICE, msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, HasSubstr("its kernels run on device 99, which this "
                             "runtime does not know"));
}

// The precision field, by attnc --precision's names; an unknown one is
// corrupt.
TEST(RuntimeLoadTest, PrecisionIsNamedAndAnUnknownOneRefused) {
  attn_model *model = nullptr;
  ASSERT_EQ(attn_model_load(FAKE_MODEL_BF16, &model), ATTN_OK)
      << attn_last_error();
  attn_model_info info{};
  info.size = sizeof info;
  ASSERT_EQ(attn_model_get_info(model, &info), ATTN_OK);
  EXPECT_STREQ(info.precision, "bf16");
  attn_model_free(model);

  std::string msg;
  EXPECT_EQ(loadFails(FAKE_MODEL_BADPRECISION, msg),
            ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, AllOf(HasSubstr("is corrupt"),
                         HasSubstr("its linears multiply at precision 7, "
                                   "which this runtime does not know")));
}

// Only a quantized matrix says how it is stored (and only [out, in] or
// [in, out]); anything else is a corrupt table.
TEST(RuntimeLoadTest, LayoutOfAFloatWeightIsCorrupt) {
  std::string msg;
  EXPECT_EQ(loadFails(FAKE_WEIGHTS_BADLAYOUT, msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, AllOf(HasSubstr("is corrupt"),
                         HasSubstr("weight 0 ('bias') has layout 2, which "
                                   "only a quantized matrix (I8 or U8, rank "
                                   "2) has")));
}

TEST(RuntimeLoadTest, WrongMagic) {
  std::string msg;
  EXPECT_EQ(loadFails(FAKE_MODEL_BADMAGIC, msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg, HasSubstr("wrong magic"));
}

TEST(RuntimeLoadTest, ConstantOutsideTheBlock) {
  std::string msg;
  EXPECT_EQ(loadFails(FAKE_MODEL_BADCONSTANT, msg), ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_THAT(msg,
              AllOf(HasSubstr("corrupt"), HasSubstr("entry 'run' buffer 2"),
                    HasSubstr("64-byte constants block"),
                    HasSubstr("rebuild it with attnc")));
}

TEST(RuntimeLoadTest, CorruptTablesAreNamed) {
  struct {
    const char *path, *what;
  } cases[] = {
      {FAKE_MODEL_NORUN, "no entry point named 'run'"},
      {FAKE_MODEL_WRITESCONSTANT,
       "entry 'run' step 1 lets kernel 'relu' write buffer 2, a CONSTANT"},
      {FAKE_MODEL_UNBOUND,
       "entry 'run' buffer 3 uses symbol T, which no input dim binds"},
  };
  for (const auto &c : cases) {
    std::string msg;
    EXPECT_EQ(loadFails(c.path, msg), ATTN_ERROR_INVALID_LIBRARY) << c.path;
    EXPECT_THAT(msg, AllOf(HasSubstr(c.path), HasSubstr("is corrupt"),
                           HasSubstr(c.what), HasSubstr("rebuild it")));
  }
}

// Libraries exporting an earlier entry symbol are refused by that name,
// without a call into them (earlier_abi_model.c aborts when called).
TEST(RuntimeLoadTest, EarlierEntrySymbolsAreRefusedByName) {
  struct {
    const char *path, *built;
  } cases[] = {
      {ABI1_MODEL, "' was built by an earlier attnc for model ABI 1 (it "
                   "exports attn_model_descriptor_v1); "},
      {ABI2_MODEL, "' was built by an earlier attnc for model ABI 2 to 4 (it "
                   "exports attn_model_descriptor_v2); "}};
  for (const auto &c : cases) {
    std::string msg;
    EXPECT_EQ(loadFails(c.path, msg), ATTN_ERROR_ABI_MISMATCH) << c.path;
    EXPECT_THAT(msg, HasSubstr(std::string(c.path) + c.built +
                               "this runtime reads model ABI " +
                               std::to_string(ATTN_MODEL_ABI_VERSION) +
                               " only: rebuild it with this attnc"));
  }
}

TEST(RuntimeLoadTest, NullArguments) {
  attn_model *m = nullptr;
  EXPECT_EQ(attn_model_load(nullptr, &m), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(attn_model_load(FAKE_MODEL, nullptr), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(attn_model_run(nullptr, nullptr, 0, nullptr, 0),
            ATTN_ERROR_INVALID_ARGUMENT);
  attn_model_free(nullptr);
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_DIM_OUT_OF_BOUNDS),
               "dim out of bounds");
}

TEST(RuntimeCppTest, WrapperRunsAndThrows) {
  attn::Model m(FAKE_MODEL);
  EXPECT_STREQ(m.info().name, "fake");
  EXPECT_STREQ(m.input(1).name, "mask");
  Case c(2, 6);
  EXPECT_EQ(m.outputDims(c.inputs(), 0), (std::vector<int64_t>{2, 6, 4}));
  m.run(c.inputs(), c.outputs());
  c.expectResult(FakeBias);

  attn::Model moved = std::move(m);
  c.xDims[0] = 3;
  try {
    moved.run(c.inputs(), c.outputs());
    FAIL() << "expected attn::Error";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_SHAPE_MISMATCH);
    EXPECT_THAT(e.what(), HasSubstr("symbol B"));
  }
  EXPECT_THROW(attn::Model(FAKE_MODEL_ABI99), attn::Error);
}

//===----------------------------------------------------------------------===//
// Weights read at load (fake_weights_model.c)
//===----------------------------------------------------------------------===//

const float Bias[4] = {0.5f, -1.0f, 2.0f, 3.0f};
const float Scale[4] = {1.0f, 2.0f, -1.0f, 0.5f};

/// Inputs and outputs of one call of fake_weights_model.c, with the expected
/// values computed here.
struct WeightsCase {
  explicit WeightsCase(int64_t s)
      : xDims{s, 4}, uDims{2 * s, 2}, yDims{s, 4}, pDims{s + 1, 4} {
    x.resize(s * 4);
    u.resize(s * 4);
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = float(int(i * 5 % 7) - 3);
      u[i] = float(i % 3) * 0.25f;
    }
    y.assign(x.size(), -99.0f);
    p.assign(x.size() + 4, -99.0f);
  }

  std::vector<attn_tensor> inputs() {
    return {{"x", ATTN_F32, 2, xDims.data(), x.data()},
            {"u", ATTN_F32, 2, uDims.data(), u.data()}};
  }
  std::vector<attn_tensor> outputs() {
    return {{"y", ATTN_F32, 2, yDims.data(), y.data()},
            {"p", ATTN_F32, 2, pDims.data(), p.data()}};
  }
  attn_status run(attn_model *m) {
    auto in = inputs();
    auto out = outputs();
    return attn_model_run(m, in.data(), 2, out.data(), 2);
  }

  void expectResult(const float *bias, const float *scale) const {
    for (int c = 0; c < 4; ++c)
      EXPECT_FLOAT_EQ(p[c], 2.0f * bias[c]) << "p row 0, column " << c;
    for (std::size_t i = 0; i < x.size(); ++i) {
      float want = x[i] * scale[i % 4] + 2.0f * bias[i % 4] + u[i];
      ASSERT_FLOAT_EQ(y[i], want) << "y element " << i;
      ASSERT_FLOAT_EQ(p[i + 4], want) << "p element " << i + 4;
    }
  }

  std::vector<int64_t> xDims, uDims, yDims, pDims;
  std::vector<float> x, u, y, p;
};

attn_status loadWith(const char *library, const char *weights,
                     attn_model **model) {
  attn_load_options options{};
  options.size = sizeof options;
  options.weights = weights;
  return attn_model_load_with_options(library, &options, model);
}

/// Whether `path` is mapped into this process.
bool isMapped(const std::string &path) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(path) != std::string::npos;
}

class WeightsTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl =
        (fs::temp_directory_path() / "attn_weights_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    attn_model_free(model);
    fs::remove_all(dir);
  }

  struct Entry {
    std::string name;
    st::DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  static Entry f32(std::string name, std::vector<int64_t> shape,
                   const float *values, std::size_t count) {
    const auto *b = reinterpret_cast<const uint8_t *>(values);
    return {std::move(name), st::DType::F32, std::move(shape),
            std::vector<uint8_t>(b, b + count * 4)};
  }
  static std::vector<Entry> goodEntries() {
    return {f32("bias", {4}, Bias, 4), f32("scale", {4}, Scale, 4)};
  }

  /// Writes `entries` (in this order) as `name` in the test's directory.
  std::string write(const std::vector<Entry> &entries,
                    const std::string &name = "w.safetensors") {
    st::Writer w;
    for (const Entry &e : entries)
      EXPECT_TRUE(
          w.add(e.name, e.dtype, e.shape, e.bytes.data(), e.bytes.size()).ok());
    std::string p = (dir / name).string();
    EXPECT_TRUE(w.write(p).ok());
    return p;
  }

  /// Loads `library` with `weights`, which must fail; returns the status.
  attn_status loadFails(const char *library, const std::string &weights) {
    attn_status s = loadWith(library, weights.c_str(), &model);
    EXPECT_EQ(model, nullptr);
    message = attn_last_error();
    return s;
  }

  fs::path dir;
  attn_model *model = nullptr;
  std::string message;
};

TEST_F(WeightsTest, RunComputesFromTheFile) {
  ASSERT_EQ(loadWith(FAKE_WEIGHTS, write(goodEntries()).c_str(), &model),
            ATTN_OK)
      << attn_last_error();
  for (int64_t s : {3, 16, 1, 5}) {
    WeightsCase c(s);
    ASSERT_EQ(c.run(model), ATTN_OK) << attn_last_error();
    c.expectResult(Bias, Scale);
  }
}

TEST_F(WeightsTest, AffineDimsAreComputedAndChecked) {
  ASSERT_EQ(loadWith(FAKE_WEIGHTS, write(goodEntries()).c_str(), &model),
            ATTN_OK)
      << attn_last_error();
  attn_tensor_info p;
  ASSERT_EQ(attn_model_output_info(model, 1, &p), ATTN_OK);
  ASSERT_EQ(p.rank, 2);
  EXPECT_EQ(p.dims[0].is_dynamic, 1);
  EXPECT_EQ(p.dims[0].extent, -1);
  EXPECT_STREQ(p.dims[0].symbol, "S");
  EXPECT_EQ(p.dims[0].max, 0); // S + 1 is not bounded by S <= 16
  EXPECT_EQ(p.dims[1].extent, 4);

  WeightsCase c(3);
  auto in = c.inputs();
  int64_t dims[ATTN_MAX_RANK];
  ASSERT_EQ(attn_model_output_dims(model, in.data(), 2, 1, dims, 2), ATTN_OK)
      << attn_last_error();
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 2), (std::vector<int64_t>{4, 4}));

  c.pDims[0] = 3;
  EXPECT_EQ(c.run(model), ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("output 'p' has dims [3, 4]"),
                    HasSubstr("make it [4, 4] ([S + 1, 4] with S=3)")));
  c.pDims[0] = 4;
  c.uDims[0] = 5;
  EXPECT_EQ(c.run(model), ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("input 'u' dim 0 is 5"),
                    HasSubstr("declares it 2*S, which is 6 with S=3"),
                    HasSubstr("[2*S, 2]")));
  c.uDims[0] = 6;
  ASSERT_EQ(c.run(model), ATTN_OK) << attn_last_error();
  c.expectResult(Bias, Scale);
}

TEST_F(WeightsTest, FileStaysMappedOnlyWhileRunReadsIt) {
  std::string path = write(goodEntries());
  ASSERT_EQ(loadWith(FAKE_WEIGHTS, path.c_str(), &model), ATTN_OK)
      << attn_last_error();
  EXPECT_TRUE(isMapped(path)) << "'run' reads weight 'scale' from the file";
  attn_model_free(model);
  model = nullptr;
  EXPECT_FALSE(isMapped(path));

  ASSERT_EQ(loadWith(FAKE_WEIGHTS_INITONLY, path.c_str(), &model), ATTN_OK)
      << attn_last_error();
  EXPECT_FALSE(isMapped(path)) << "only 'init' reads the file";
  WeightsCase c(4);
  ASSERT_EQ(c.run(model), ATTN_OK) << attn_last_error();
  c.expectResult(Bias, Scale);
}

// A tensor whose data the file leaves misaligned for its dtype is copied:
// the fake's kernels refuse misaligned views.
TEST_F(WeightsTest, MisalignedTensorsAreCopied) {
  std::vector<Entry> entries = goodEntries();
  uint16_t half = 0x3C00;
  entries.insert(
      entries.begin(),
      {"odd", st::DType::F16, {1}, {uint8_t(half), uint8_t(half >> 8)}});
  std::string path = write(entries);
  st::Expected<st::File> file = st::File::open(path);
  ASSERT_TRUE(file.ok()) << file.message();
  ASSERT_NE(reinterpret_cast<uintptr_t>(file->find("scale")->data) % 4, 0u);
  ASSERT_EQ(loadWith(FAKE_WEIGHTS, path.c_str(), &model), ATTN_OK)
      << attn_last_error();
  WeightsCase c(2);
  ASSERT_EQ(c.run(model), ATTN_OK) << attn_last_error();
  c.expectResult(Bias, Scale);
}

TEST_F(WeightsTest, WeightsFileIsRequired) {
  EXPECT_EQ(attn_model_load(FAKE_WEIGHTS, &model), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("model 'fake_weights'"), HasSubstr(FAKE_WEIGHTS),
                    HasSubstr("reads its 2 weights from a safetensors file"),
                    HasSubstr("attn-run --weights FILE"),
                    HasSubstr("attn_load_options.weights")));
  EXPECT_EQ(loadWith(FAKE_WEIGHTS, nullptr, &model),
            ATTN_ERROR_INVALID_ARGUMENT);
}

TEST_F(WeightsTest, EmbeddedModelRefusesAWeightsFile) {
  EXPECT_EQ(loadFails(FAKE_MODEL, write(goodEntries())),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(message,
              AllOf(HasSubstr("model 'fake'"), HasSubstr("embeds its weights"),
                    HasSubstr("load it without a weights file")));
}

TEST_F(WeightsTest, MissingWeightNamesTheClosestOnes) {
  std::vector<Entry> entries = {
      f32("bias", {4}, Bias, 4), f32("sclae", {4}, Scale, 4),
      f32("shift", {4}, Scale, 4), f32("unrelated.tensor", {4}, Scale, 4)};
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, write(entries)),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(message,
              AllOf(HasSubstr("weight 'scale' is not in '" +
                              (dir / "w.safetensors").string() + "'"),
                    HasSubstr("closest names there: 'sclae', 'bias', 'shift'"),
                    HasSubstr("fix the name in the model or export the "
                              "weight")));
  EXPECT_THAT(message, Not(HasSubstr("unrelated")));
}

/// model.safetensors.index.json in `dir` mapping each name to its shard.
std::string
writeIndex(const fs::path &dir,
           const std::vector<std::pair<std::string, std::string>> &weightMap) {
  std::string p = (dir / "model.safetensors.index.json").string();
  std::ofstream out(p);
  out << R"({"metadata": {}, "weight_map": {)";
  for (std::size_t i = 0; i < weightMap.size(); ++i)
    out << (i ? ", " : "") << '"' << weightMap[i].first << R"(": ")"
        << weightMap[i].second << '"';
  out << "}}";
  return p;
}

TEST_F(WeightsTest, ShardedCheckpointLoadsAcrossShards) {
  std::string one = write({f32("bias", {4}, Bias, 4)}, "model-1.safetensors");
  std::string two = write({f32("scale", {4}, Scale, 4)}, "model-2.safetensors");
  std::string index = writeIndex(
      dir, {{"bias", "model-1.safetensors"}, {"scale", "model-2.safetensors"}});
  ASSERT_EQ(loadWith(FAKE_WEIGHTS, index.c_str(), &model), ATTN_OK)
      << attn_last_error();
  // 'run' reads 'scale' from its shard; 'bias' is read by 'init' only, but
  // the shards are released together.
  EXPECT_TRUE(isMapped(two));
  WeightsCase c(3);
  ASSERT_EQ(c.run(model), ATTN_OK) << attn_last_error();
  c.expectResult(Bias, Scale);
  attn_model_free(model);
  model = nullptr;
  EXPECT_FALSE(isMapped(one));
  EXPECT_FALSE(isMapped(two));

  // --check-weights scans every shard, and names the one with the NaN.
  float nan[4] = {1, 2, std::nanf(""), 4};
  write({f32("scale", {4}, nan, 4)}, "model-2.safetensors");
  attn_load_options options{};
  options.size = sizeof options;
  options.weights = index.c_str();
  options.flags = ATTN_LOAD_CHECK_WEIGHTS;
  EXPECT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_ERROR_NON_FINITE);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("weight 'scale' in '" + two + "' holds NaN"),
                    HasSubstr("at [2]")));
}

TEST_F(WeightsTest, ShardedMissingWeightNamesTheClosestAcrossShards) {
  write({f32("bias", {4}, Bias, 4), f32("shift", {4}, Scale, 4)},
        "model-1.safetensors");
  write({f32("sclae", {4}, Scale, 4)}, "model-2.safetensors");
  std::string index = writeIndex(dir, {{"bias", "model-1.safetensors"},
                                       {"shift", "model-1.safetensors"},
                                       {"sclae", "model-2.safetensors"}});
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, index), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(message,
              AllOf(HasSubstr("weight 'scale' is not in '" + index + "'"),
                    HasSubstr("closest names there: 'sclae', 'bias', "
                              "'shift'")));
}

TEST_F(WeightsTest, ShardedMismatchNamesTheShard) {
  write({f32("bias", {4}, Bias, 4)}, "model-1.safetensors");
  std::string two =
      write({f32("scale", {2, 2}, Scale, 4)}, "model-2.safetensors");
  std::string index = writeIndex(
      dir, {{"bias", "model-1.safetensors"}, {"scale", "model-2.safetensors"}});
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, index), ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(message, HasSubstr("weight 'scale' in '" + two +
                                 "' has shape [2, 2] but the model "
                                 "declares it [4]"));
}

TEST_F(WeightsTest, ShardedRefusalsFailTheLoad) {
  write({f32("bias", {4}, Bias, 4), f32("scale", {4}, Scale, 4)},
        "model-1.safetensors");
  std::string index = writeIndex(
      dir, {{"bias", "model-1.safetensors"}, {"scale", "model-2.safetensors"}});
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, index), ATTN_ERROR_IO);
  EXPECT_THAT(message,
              AllOf(HasSubstr("safetensors index '" + index + "'"),
                    HasSubstr("shard 'model-2.safetensors' (which holds "
                              "tensor 'scale') cannot be read")));
  index = writeIndex(dir, {{"bias", "model-1.safetensors"},
                           {"scale", "../model-1.safetensors"}});
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, index), ATTN_ERROR_IO);
  EXPECT_THAT(message, HasSubstr("shards must lie beside their index"));
}

TEST_F(WeightsTest, FileWithoutTensorsReportsEveryWeight) {
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, write({})), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(message,
              AllOf(HasSubstr("2 problems with its weights"),
                    HasSubstr("weight 'bias' is not in"),
                    HasSubstr("weight 'scale' is not in"),
                    HasSubstr("which holds no tensors: give the model's "
                              "weights file")));
}

TEST_F(WeightsTest, WrongDtype) {
  std::vector<Entry> entries = goodEntries();
  entries[1] = {"scale", st::DType::F16, {4}, std::vector<uint8_t>(8, 0)};
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, write(entries)), ATTN_ERROR_DTYPE_MISMATCH);
  EXPECT_THAT(message, AllOf(HasSubstr("weight 'scale' in '"),
                             HasSubstr("has dtype F16 but the model reads F32"),
                             HasSubstr("convert it to F32 when exporting")));
}

TEST_F(WeightsTest, WrongShape) {
  std::vector<Entry> entries = goodEntries();
  entries[0] = f32("bias", {2, 2}, Bias, 4);
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, write(entries)), ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(message,
              AllOf(HasSubstr("weight 'bias' in '"),
                    HasSubstr("has shape [2, 2] but the model declares it [4]"),
                    HasSubstr("fix the declaration or the exported tensor")));
}

// Every problem is reported; the status is the first one's.
TEST_F(WeightsTest, AllProblemsAtOnceFirstStatusWins) {
  std::vector<Entry> entries = {
      {"bias", st::DType::I32, {4}, std::vector<uint8_t>(16, 0)}};
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, write(entries)), ATTN_ERROR_DTYPE_MISMATCH);
  EXPECT_THAT(message, AllOf(HasSubstr("2 problems"), HasSubstr("'bias' in '"),
                             HasSubstr("dtype I32"),
                             HasSubstr("weight 'scale' is not in")));
}

TEST_F(WeightsTest, TruncatedOrMissingFile) {
  std::string path = write(goodEntries());
  fs::resize_file(path, fs::file_size(path) - 8);
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, path), ATTN_ERROR_IO);
  EXPECT_THAT(message, AllOf(HasSubstr(path), HasSubstr("truncated")));
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, (dir / "none.safetensors").string()),
            ATTN_ERROR_IO);
  EXPECT_THAT(message, HasSubstr("cannot open it"));
}

TEST_F(WeightsTest, InitKernelFailure) {
  float bias[4] = {1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f};
  std::vector<Entry> entries = {f32("bias", {4}, bias, 4),
                                f32("scale", {4}, Scale, 4)};
  EXPECT_EQ(loadFails(FAKE_WEIGHTS, write(entries)), ATTN_ERROR_KERNEL_FAILED);
  EXPECT_THAT(message,
              AllOf(HasSubstr("model 'fake_weights': init kernel 'prepare' "
                              "(step 0) failed"),
                    HasSubstr("prepare: bias contains NaN")));
}

TEST_F(WeightsTest, StatesAreDescribedAndCheckedPerEntry) {
  ASSERT_EQ(loadWith(FAKE_WEIGHTS_STATE, write(goodEntries()).c_str(), &model),
            ATTN_OK)
      << attn_last_error();
  ASSERT_EQ(attn_model_num_states(model), 1);
  attn_tensor_info info;
  ASSERT_EQ(attn_model_state_info(model, 0, &info), ATTN_OK);
  EXPECT_STREQ(info.name, "cache");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(attn_model_state_info(model, 1, &info),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(attn_model_has_entry(model, "run"), 1);
  EXPECT_EQ(attn_model_has_entry(model, "decode"), 0);
  EXPECT_EQ(attn_model_has_entry(model, "init"), 0);
  // This library's "run" takes no state, and it has no "decode".
  float cache[4] = {};
  int64_t dims[2] = {1, 4};
  attn_tensor state = {"cache", ATTN_F32, 2, dims, cache};
  attn_run_options o{};
  o.size = sizeof o;
  o.states = &state;
  o.num_states = 1;
  EXPECT_EQ(attn_model_run_with_options(model, &o, nullptr, 0, nullptr, 0),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              HasSubstr("takes no states but 1 were given"));
  o.entry = "decode";
  EXPECT_EQ(attn_model_run_with_options(model, &o, nullptr, 0, nullptr, 0),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              HasSubstr("has no entry 'decode'"));
}

// An entry with inputs of its own (an encoder-decoder's decode takes no
// encoder input): listed per entry, checked against that entry's list.
TEST_F(WeightsTest, EntriesListAndCheckTheirOwnInputs) {
  ASSERT_EQ(loadWith(FAKE_WEIGHTS_DECODE, write(goodEntries()).c_str(), &model),
            ATTN_OK)
      << attn_last_error();
  // "run" answers as attn_model_num_inputs / attn_model_input_info do.
  ASSERT_EQ(attn_model_entry_num_inputs(model, "run"), 2);
  attn_tensor_info info, plain;
  ASSERT_EQ(attn_model_entry_input_info(model, "run", 1, &info), ATTN_OK);
  ASSERT_EQ(attn_model_input_info(model, 1, &plain), ATTN_OK);
  EXPECT_STREQ(info.name, "u");
  EXPECT_STREQ(info.name, plain.name);
  ASSERT_EQ(info.rank, plain.rank);
  for (int32_t d = 0; d < info.rank; ++d) {
    EXPECT_EQ(info.dims[d].is_dynamic, plain.dims[d].is_dynamic);
    EXPECT_EQ(info.dims[d].extent, plain.dims[d].extent);
    EXPECT_STREQ(info.dims[d].symbol, plain.dims[d].symbol);
  }
  ASSERT_EQ(attn_model_entry_num_inputs(model, "decode"), 2);
  ASSERT_EQ(attn_model_entry_input_info(model, "decode", 0, &info), ATTN_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, ATTN_F32);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0].is_dynamic, 1);
  EXPECT_STREQ(info.dims[0].symbol, "S");
  EXPECT_EQ(info.dims[0].max, 16);
  EXPECT_EQ(info.dims[1].extent, 4);
  ASSERT_EQ(attn_model_entry_input_info(model, "decode", 1, &info), ATTN_OK);
  EXPECT_STREQ(info.name, "position");
  EXPECT_EQ(info.dtype, ATTN_I32);
  // Out of range, an unknown entry, "init" (the runtime's own), NULLs.
  for (int32_t index : {-1, 2}) {
    EXPECT_EQ(attn_model_entry_input_info(model, "decode", index, &info),
              ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_THAT(std::string(attn_last_error()),
                HasSubstr("index " + std::to_string(index) +
                          " is out of range: entry 'decode' of model "
                          "'fake_weights' has 2 inputs"));
  }
  for (const char *entry : {"prefill", "init"}) {
    EXPECT_EQ(attn_model_entry_num_inputs(model, entry), -1);
    EXPECT_THAT(std::string(attn_last_error()),
                HasSubstr(std::string("has no entry '") + entry +
                          "': its entries are run, prefill and decode"));
    EXPECT_EQ(attn_model_entry_input_info(model, entry, 0, &info),
              ATTN_ERROR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(attn_model_entry_num_inputs(nullptr, "run"), -1);
  EXPECT_EQ(attn_model_entry_num_inputs(model, nullptr), -1);
  EXPECT_EQ(attn_model_entry_input_info(model, "run", 0, nullptr),
            ATTN_ERROR_INVALID_ARGUMENT);

  // A decode is checked against its own inputs: run's 'u' is refused with
  // the reason, and a missing input names the entry and what it takes.
  float x[8] = {}, y[8] = {}, cache[8] = {};
  int32_t position[4] = {};
  int64_t xDims[2] = {2, 4}, positionDims[1] = {4};
  attn_tensor state = {"cache", ATTN_F32, 2, xDims, cache};
  attn_tensor out = {"y", ATTN_F32, 2, xDims, y};
  attn_run_options o{};
  o.size = sizeof o;
  o.entry = "decode";
  o.states = &state;
  o.num_states = 1;
  attn_tensor withU[] = {{"x", ATTN_F32, 2, xDims, x},
                         {"u", ATTN_F32, 2, xDims, x}};
  EXPECT_EQ(attn_model_run_with_options(model, &o, withU, 2, &out, 1),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(attn_last_error()),
            "entry 'decode' of model 'fake_weights' has no input named 'u': "
            "its inputs are x, position ('u' is an input of 'run' that "
            "'decode' does not read: leave it out)");
  EXPECT_EQ(attn_model_run_with_options(model, &o, withU, 1, &out, 1),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              HasSubstr("entry 'decode' of model 'fake_weights' takes 2 inputs "
                        "(x, position) but 1 were given"));
  attn_tensor inputs[] = {{"position", ATTN_I32, 1, positionDims, position},
                          {"x", ATTN_F32, 2, xDims, x}};
  EXPECT_EQ(attn_model_run_with_options(model, &o, inputs, 2, &out, 1), ATTN_OK)
      << attn_last_error();
  // Outputs sized for the entry, its inputs and states.
  int64_t dims[2] = {};
  EXPECT_EQ(
      attn_model_output_dims_with_options(model, &o, inputs, 2, 0, dims, 2),
      ATTN_OK)
      << attn_last_error();
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 4);
  EXPECT_EQ(
      attn_model_output_dims_with_options(model, &o, inputs, 2, 1, dims, 2),
      ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              HasSubstr("output 1 is out of range"));
  o.entry = "prefill";
  EXPECT_EQ(
      attn_model_output_dims_with_options(model, &o, inputs, 2, 0, dims, 2),
      ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()), HasSubstr("has no entry"));
  // The states' dims and the inputs' must agree on a symbol.
  int64_t longer[2] = {3, 4};
  state.dims = longer;
  o.entry = "decode";
  EXPECT_EQ(attn_model_run_with_options(model, &o, inputs, 2, &out, 1),
            ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(std::string(attn_last_error()),
              HasSubstr("symbol S is 2 in input 'x' dim 0 but 3 in state "
                        "'cache' dim 0: give every input and state the same "
                        "S"));
}

TEST_F(WeightsTest, OptionsSize) {
  std::string path = write(goodEntries());
  attn_load_options options{};
  options.weights = path.c_str();
  for (uint32_t size : {0u, 2u}) {
    options.size = size;
    EXPECT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
              ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_THAT(std::string(attn_last_error()),
                AllOf(HasSubstr("options->size is " + std::to_string(size)),
                      HasSubstr("sizeof(attn_load_options)")));
  }
  // Only `size` bytes are read: the weights field lies beyond 4.
  options.size = sizeof options.size;
  EXPECT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()), HasSubstr("reads its 2 weights"));
  ASSERT_EQ(attn_model_load_with_options(FAKE_MODEL, &options, &model), ATTN_OK)
      << attn_last_error();
  attn_model_free(model);
  model = nullptr;
  // A caller with a newer, larger struct: fields this runtime lacks are
  // ignored.
  struct {
    attn_load_options known;
    uint64_t later;
  } newer{};
  newer.known.size = sizeof newer;
  newer.known.weights = path.c_str();
  newer.later = 1;
  ASSERT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &newer.known, &model),
            ATTN_OK)
      << attn_last_error();
  attn_model_free(model);
  model = nullptr;
  // NULL options equal attn_model_load.
  ASSERT_EQ(attn_model_load_with_options(FAKE_MODEL, nullptr, &model), ATTN_OK)
      << attn_last_error();
}

attn_status loadDescribeOnly(const char *library, attn_model **model) {
  attn_load_options options{};
  options.size = sizeof options;
  options.flags = ATTN_LOAD_DESCRIBE_ONLY;
  return attn_model_load_with_options(library, &options, model);
}

// A model that reads its weights at load, loaded without them: described,
// sized, never run.
TEST_F(WeightsTest, DescribeOnlyNeedsNoWeights) {
  ASSERT_EQ(loadDescribeOnly(FAKE_WEIGHTS, &model), ATTN_OK)
      << attn_last_error();
  attn_model_info info{};
  info.size = sizeof info;
  ASSERT_EQ(attn_model_get_info(model, &info), ATTN_OK);
  EXPECT_STREQ(info.name, "fake_weights");
  attn_tensor_info x;
  ASSERT_EQ(attn_model_input_info(model, 0, &x), ATTN_OK);
  EXPECT_STREQ(x.dims[0].symbol, "S");
  EXPECT_EQ(x.dims[0].max, 16);

  WeightsCase c(3);
  auto in = c.inputs();
  int64_t dims[ATTN_MAX_RANK];
  ASSERT_EQ(attn_model_output_dims(model, in.data(), 2, 1, dims, 2), ATTN_OK)
      << attn_last_error();
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 2), (std::vector<int64_t>{4, 4}));
  // Its one temp, t: [2*S, 2] F32, is 48 bytes at S = 3.
  uint64_t arena = 0, largest = 0, temps = 0;
  ASSERT_EQ(
      attn_model_workspace_size(model, in.data(), 2, &arena, &largest, &temps),
      ATTN_OK)
      << attn_last_error();
  EXPECT_EQ(arena, 64u);
  EXPECT_EQ(largest, 48u);
  EXPECT_EQ(temps, 48u);

  EXPECT_EQ(c.run(model), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("model 'fake_weights' ('" +
                              std::string(FAKE_WEIGHTS) + "')"),
                    HasSubstr("loaded to describe it only "
                              "(ATTN_LOAD_DESCRIBE_ONLY)"),
                    HasSubstr("reads its 2 weights ('bias', 'scale') from a "
                              "safetensors file"),
                    HasSubstr("attn_load_options.weights"),
                    HasSubstr("attn-run --weights FILE")));
  EXPECT_EQ(c.y[0], -99.0f) << "no kernel may run";
}

TEST_F(WeightsTest, DescribeOnlyOfAnEmbeddingModel) {
  ASSERT_EQ(loadDescribeOnly(FAKE_MODEL, &model), ATTN_OK) << attn_last_error();
  Case c(2, 3);
  EXPECT_EQ(c.run(model), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("model 'fake'"),
                    HasSubstr("load it without ATTN_LOAD_DESCRIBE_ONLY")));
}

TEST_F(WeightsTest, CheckWeightsNamesTheFirstNonFiniteElement) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float scale[4] = {Scale[0], Scale[1], nan, -nan};
  std::string path =
      write({f32("bias", {4}, Bias, 4), f32("scale", {4}, scale, 4)});
  attn_load_options options{};
  options.size = sizeof options;
  options.weights = path.c_str();
  options.flags = ATTN_LOAD_CHECK_WEIGHTS;
  EXPECT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_ERROR_NON_FINITE);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(std::string(attn_last_error()),
            "weight 'scale' in '" + path +
                "' holds NaN at [2] (shape [4]): the checkpoint is damaged; "
                "export it again from a model whose weights are finite");
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_NON_FINITE), "non-finite weight");
  // Without the flag the same file loads: the kernels propagate the value.
  options.flags = 0;
  ASSERT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_OK)
      << attn_last_error();
  attn_model_free(model);
  model = nullptr;
  // The clean file passes the check.
  options.flags = ATTN_LOAD_CHECK_WEIGHTS;
  std::string clean = write(goodEntries(), "clean.safetensors");
  options.weights = clean.c_str();
  EXPECT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_OK)
      << attn_last_error();
}

TEST_F(WeightsTest, LoadFlagsAreChecked) {
  std::string path = write(goodEntries());
  attn_load_options options{};
  options.size = sizeof options;
  options.weights = path.c_str();
  options.flags = ATTN_LOAD_DESCRIBE_ONLY;
  EXPECT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("ATTN_LOAD_DESCRIBE_ONLY reads no weights"),
                    HasSubstr(path)));
  options.flags = ATTN_LOAD_DESCRIBE_ONLY | ATTN_LOAD_CHECK_WEIGHTS;
  options.weights = nullptr;
  EXPECT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              HasSubstr("ATTN_LOAD_CHECK_WEIGHTS has none to check"));
  options.weights = path.c_str();
  options.flags = 12;
  EXPECT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(std::string(attn_last_error()),
              HasSubstr("options->flags has bits 12 this runtime does not "
                        "know"));
  EXPECT_EQ(model, nullptr);
  // A caller built before `flags` existed passes the smaller size: whatever
  // lies beyond it is not read.
  options.flags = 0xFFFFFFFFu;
  options.size = offsetof(attn_load_options, flags);
  ASSERT_EQ(attn_model_load_with_options(FAKE_WEIGHTS, &options, &model),
            ATTN_OK)
      << attn_last_error();
  WeightsCase c(2);
  ASSERT_EQ(c.run(model), ATTN_OK) << attn_last_error();
  c.expectResult(Bias, Scale);
}

TEST_F(WeightsTest, CppWrapperDescribesOnly) {
  attn::Model m = attn::Model::describeOnly(FAKE_WEIGHTS);
  EXPECT_STREQ(m.info().name, "fake_weights");
  WeightsCase c(2);
  EXPECT_EQ(m.workspaceSize(c.inputs()).tempBytes, 32u); // t: [4, 2] F32
  try {
    m.run(c.inputs(), c.outputs());
    FAIL() << "expected attn::Error";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("ATTN_LOAD_DESCRIBE_ONLY"));
  }
}

TEST_F(WeightsTest, CppWrapperLoadsWithAWeightsFile) {
  attn::Model m(FAKE_WEIGHTS, write(goodEntries()));
  WeightsCase c(2);
  EXPECT_EQ(m.outputDims(c.inputs(), 1), (std::vector<int64_t>{3, 4}));
  m.run(c.inputs(), c.outputs());
  c.expectResult(Bias, Scale);
  try {
    attn::Model without(FAKE_WEIGHTS);
    FAIL() << "expected attn::Error";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("--weights"));
  }
}

} // namespace
