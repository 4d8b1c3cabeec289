//===- test/unit/runtime/arena_test.cpp - The arena and concurrent runs ---===//
//
// Against fake_arena_model.c, a chain of temps t0 [S, 4] (steps 0-1),
// t1 [2*S, 4] (steps 1-2) and t2 [S, 6] (steps 2-3) computing
// y[i, c] = t2[i, c] * 0.5 + x[i, c % 4] with
// t2[i, c] = t0[i, c % 4] + 2 * t0[i, (c + 1) % 4], t0 = x + bias: the
// arena sizes the planner must reach, and runs of one model from several
// threads at once, each compared with a serial run bit for bit.
//
//===----------------------------------------------------------------------===//
#include "attn/attn.h"
#include "attn/attn.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <thread>
#include <vector>

using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

const float ArenaBias[4] = {0.5f, -1.0f, 2.0f, 0.0f};
const float Arena2Bias[4] = {10.0f, 20.0f, 30.0f, 40.0f};

/// One call of the fake: x [S, 4] in, y [S, 6] out.
struct ArenaCase {
  ArenaCase(int64_t s, int seed) : xDims{s, 4}, yDims{s, 6} {
    x.resize(s * 4);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = float(int((i + seed) * 13 % 17) - 8) * 0.375f;
    y.assign(s * 6, -99.0f);
  }

  std::vector<attn_tensor> inputs() {
    return {{"x", ATTN_F32, 2, xDims.data(), x.data()}};
  }
  attn_status run(attn_model *m) {
    auto in = inputs();
    attn_tensor out{"y", ATTN_F32, 2, yDims.data(), y.data()};
    return attn_model_run(m, in.data(), 1, &out, 1);
  }

  /// y as the model defines it. The inputs and biases are short binary
  /// fractions, so every step is exact and equality is the right test.
  float want(const float *bias, int64_t i, int c) const {
    float t0a = x[i * 4 + c % 4] + bias[c % 4];
    float t0b = x[i * 4 + (c + 1) % 4] + bias[(c + 1) % 4];
    return (t0a + 2.0f * t0b) * 0.5f + x[i * 4 + c % 4];
  }
  bool correct(const float *bias) const {
    for (int64_t i = 0; i < xDims[0]; ++i)
      for (int c = 0; c < 6; ++c)
        if (y[i * 6 + c] != want(bias, i, c))
          return false;
    return true;
  }
  void expectResult(const float *bias) const {
    for (int64_t i = 0; i < xDims[0]; ++i)
      for (int c = 0; c < 6; ++c)
        ASSERT_EQ(y[i * 6 + c], want(bias, i, c))
            << "y[" << i << ", " << c << "]";
  }

  std::vector<int64_t> xDims, yDims;
  std::vector<float> x, y;
};

class ArenaTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(attn_model_load(FAKE_ARENA, &model), ATTN_OK)
        << attn_last_error();
  }
  void TearDown() override { attn_model_free(model); }

  attn_model *model = nullptr;
};

struct Sizes {
  uint64_t arena = 0, largest = 0, temps = 0;
};

Sizes workspaceSize(attn_model *model, ArenaCase &c) {
  Sizes s;
  auto in = c.inputs();
  EXPECT_EQ(attn_model_workspace_size(model, in.data(), 1, &s.arena, &s.largest,
                                      &s.temps),
            ATTN_OK)
      << attn_last_error();
  return s;
}

// Greedy by size, by hand. With S = 3: t0 48 bytes, t1 96, t2 72. t1 (the
// largest) at 0; t2 lives with t1 (step 2): after it, at 128 (aligned);
// t0 lives with t1 (step 1) but not with t2: also at 128. The arena ends at
// 128 + 72 = 200, rounded to 256. The largest live set is step 2's,
// t1 + t2 = 168; without reuse 48 + 96 + 72 = 216.
TEST_F(ArenaTest, SizesFollowTheLifetimes) {
  ArenaCase small(3, 0);
  Sizes s = workspaceSize(model, small);
  EXPECT_EQ(s.arena, 256u);
  EXPECT_EQ(s.largest, 168u);
  EXPECT_EQ(s.temps, 216u);

  // S = 16: t0 256, t1 512, t2 384: t1 at 0, t2 and t0 at 512; the arena,
  // 896, is the largest live set: t1 + t2.
  ArenaCase large(16, 0);
  s = workspaceSize(model, large);
  EXPECT_EQ(s.arena, 896u);
  EXPECT_EQ(s.largest, 896u);
  EXPECT_EQ(s.temps, 1152u);

  // Any pointer may be NULL; inputs are checked as for output dims.
  auto in = large.inputs();
  uint64_t arena = 0;
  EXPECT_EQ(
      attn_model_workspace_size(model, in.data(), 1, &arena, nullptr, nullptr),
      ATTN_OK);
  EXPECT_EQ(arena, 896u);
  large.xDims[0] = 65;
  EXPECT_EQ(
      attn_model_workspace_size(model, in.data(), 1, &arena, nullptr, nullptr),
      ATTN_ERROR_DIM_OUT_OF_BOUNDS);
  EXPECT_THAT(std::string(attn_last_error()), HasSubstr("S <= 64"));
  EXPECT_EQ(attn_model_workspace_size(nullptr, in.data(), 1, &arena, nullptr,
                                      nullptr),
            ATTN_ERROR_INVALID_ARGUMENT);
}

TEST_F(ArenaTest, CppWrapperReportsTheSameSizes) {
  attn::Model m(FAKE_ARENA);
  ArenaCase c(3, 0);
  attn::WorkspaceSize w = m.workspaceSize(c.inputs());
  EXPECT_EQ(w.arenaBytes, 256u);
  EXPECT_EQ(w.largestLiveBytes, 168u);
  EXPECT_EQ(w.tempBytes, 216u);
}

// The fake's kernels refuse views that overlap or are misaligned, so every
// plan is checked by the runs as well as by their results.
TEST_F(ArenaTest, RunsFollowTheShapeUpAndDown) {
  for (int64_t s : {3, 16, 1, 64, 2, 16, 3, 64}) {
    ArenaCase c(s, int(s));
    ASSERT_EQ(c.run(model), ATTN_OK) << "S=" << s << ": " << attn_last_error();
    c.expectResult(ArenaBias);
  }
}

/// The test hooks of the fake library at `path`, which the runtime has
/// loaded: found without loading it again.
struct FakeHooks {
  explicit FakeHooks(const char *path)
      : handle(::dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    if (!handle)
      return;
    awaitOverlap = reinterpret_cast<void (*)(int)>(
        ::dlsym(handle, "fake_arena_await_overlap"));
    maxConcurrentCalls = reinterpret_cast<int (*)()>(
        ::dlsym(handle, "fake_arena_max_concurrent_calls"));
  }
  ~FakeHooks() {
    if (handle)
      ::dlclose(handle);
  }
  FakeHooks(const FakeHooks &) = delete;
  FakeHooks &operator=(const FakeHooks &) = delete;

  void *handle;
  void (*awaitOverlap)(int) = nullptr;
  int (*maxConcurrentCalls)() = nullptr;
};

/// The S of iteration `i` of thread `t`: every shape in 1..64, so threads
/// often run different shapes at once.
int64_t shapeOf(int t, int i) { return 1 + (t * 17 + i * 5) % 64; }

// 4 threads on each of 2 models, all at once, each with its own inputs and
// shapes: every result equals the serial run's bit for bit, and the fake
// libraries saw their kernels run concurrently.
TEST(ConcurrentRunTest, ThreadsShareAModelAndMatchSerialRuns) {
  constexpr int Threads = 4, Iterations = 40;
  const char *paths[2] = {FAKE_ARENA, FAKE_ARENA2};
  attn_model *models[2] = {nullptr, nullptr};
  for (int m = 0; m < 2; ++m)
    ASSERT_EQ(attn_model_load(paths[m], &models[m]), ATTN_OK)
        << attn_last_error();

  // cases[m][t][i], run serially first to get the reference results.
  std::vector<std::vector<std::vector<ArenaCase>>> cases(2);
  std::vector<std::vector<std::vector<std::vector<float>>>> serial(2);
  for (int m = 0; m < 2; ++m) {
    cases[m].resize(Threads);
    serial[m].resize(Threads);
    for (int t = 0; t < Threads; ++t)
      for (int i = 0; i < Iterations; ++i) {
        cases[m][t].emplace_back(shapeOf(t, i), m * 1000 + t * 100 + i);
        ArenaCase &c = cases[m][t].back();
        ASSERT_EQ(c.run(models[m]), ATTN_OK) << attn_last_error();
        if (t == 0 && i == 0) // the reference is right
          c.expectResult(m ? Arena2Bias : ArenaBias);
        serial[m][t].push_back(c.y);
        c.y.assign(c.y.size(), -99.0f);
      }
  }
  // From here on, kernel calls wait (a little) for each other to overlap.
  std::vector<std::unique_ptr<FakeHooks>> hooks;
  for (const char *path : paths) {
    hooks.push_back(std::make_unique<FakeHooks>(path));
    ASSERT_TRUE(hooks.back()->awaitOverlap && hooks.back()->maxConcurrentCalls)
        << path << " lacks its test hooks";
    hooks.back()->awaitOverlap(20);
  }

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int m = 0; m < 2; ++m)
    for (int t = 0; t < Threads; ++t)
      threads.emplace_back([&, m, t] {
        for (ArenaCase &c : cases[m][t])
          if (c.run(models[m]) != ATTN_OK)
            ++failures;
      });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0);

  for (int m = 0; m < 2; ++m)
    for (int t = 0; t < Threads; ++t)
      for (int i = 0; i < Iterations; ++i) {
        const std::vector<float> &got = cases[m][t][i].y;
        const std::vector<float> &want = serial[m][t][i];
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
            << paths[m] << " thread " << t << " iteration " << i
            << " S=" << shapeOf(t, i);
      }
  for (int m = 0; m < 2; ++m)
    EXPECT_GE(hooks[m]->maxConcurrentCalls(), 2)
        << paths[m] << ": its kernels never ran concurrently";
  for (attn_model *model : models)
    attn_model_free(model);
}

// A failing run gives its workspace back: later runs, concurrent or not,
// still work.
TEST(ConcurrentRunTest, ErrorsStayWithTheirThread) {
  attn::Model m(FAKE_ARENA);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        ArenaCase c(1 + (t + i) % 8, t);
        if (t % 2) { // a bad shape: the message must be this thread's own
          c.yDims[1] = 5;
          if (c.run(m.get()) != ATTN_ERROR_SHAPE_MISMATCH ||
              !std::strstr(attn_last_error(), "output 'y' has dims"))
            ++wrong;
        } else if (c.run(m.get()) != ATTN_OK || !c.correct(ArenaBias)) {
          ++wrong;
        }
      }
    });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(wrong.load(), 0);
  ArenaCase c(5, 1);
  ASSERT_EQ(c.run(m.get()), ATTN_OK) << attn_last_error();
  c.expectResult(ArenaBias);
}

/// The fake device's counts: allocations, frees, copies to the device and
/// to the host (fake_arena_model.c, FAKE_DEVICE).
struct DeviceCounts {
  int allocs = 0, frees = 0, toDevice = 0, toHost = 0, wraps = 0, unwraps = 0,
      crops = 0, releasedCrops = 0;
};

DeviceCounts deviceCounts() {
  void *handle = ::dlopen(FAKE_DEVICE, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr);
  auto counts = reinterpret_cast<void (*)(int *)>(
      handle ? ::dlsym(handle, "fake_device_counts") : nullptr);
  int c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (counts)
    counts(c);
  if (handle)
    ::dlclose(handle);
  return {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]};
}

// A library whose kernels run on a device keeps every buffer of a run there
// (the fake checks every view is a device view): the constant goes up once
// at load, each run copies its input in and its output out, and nothing
// else crosses; the buffers are allocated once per workspace and grow only
// for a larger binding; the temps are crops of one arena, placed by
// lifetime (the fake's kernels refuse an argument that overlaps their
// result, and a crop off a 4096-byte boundary); attn_model_free releases
// them all.
TEST(DeviceBuffersTest, OnlyTheEdgesCrossAndEverythingIsFreed) {
  attn_model *m = nullptr;
  ASSERT_EQ(attn_model_load(FAKE_DEVICE, &m), ATTN_OK) << attn_last_error();
  DeviceCounts load = deviceCounts();
  EXPECT_EQ(load.allocs, 1); // the bias
  EXPECT_EQ(load.toDevice, 1);
  EXPECT_EQ(load.toHost, 0);

  for (int run = 0; run < 3; ++run) {
    ArenaCase c(3, run);
    ASSERT_EQ(c.run(m), ATTN_OK) << attn_last_error();
    c.expectResult(ArenaBias);
  }
  // On the device each temp starts on a 4096-byte boundary: t0 and t2
  // share the first slot, t1 has the second.
  {
    ArenaCase c(3, 0);
    auto in = c.inputs();
    uint64_t arena = 0;
    ASSERT_EQ(
        attn_model_workspace_size(m, in.data(), 1, &arena, nullptr, nullptr),
        ATTN_OK);
    EXPECT_EQ(arena, 8192u);
  }
  DeviceCounts three = deviceCounts();
  // x, the temps' arena and y: once, in the first run; a crop per temp.
  EXPECT_EQ(three.allocs - load.allocs, 3);
  EXPECT_EQ(three.crops, 3);
  EXPECT_EQ(three.toDevice - load.toDevice, 3); // x, per run
  EXPECT_EQ(three.toHost, 3);                   // y, per run
  EXPECT_EQ(three.frees, 0);

  // A longer sequence grows x and y once; a shorter one reuses them. The
  // temps' arena keeps its size: each temp starts on a 4096-byte boundary,
  // and this model's are smaller than that.
  ArenaCase longer(7, 5), shorter(2, 6);
  ASSERT_EQ(longer.run(m), ATTN_OK) << attn_last_error();
  longer.expectResult(ArenaBias);
  ASSERT_EQ(shorter.run(m), ATTN_OK) << attn_last_error();
  shorter.expectResult(ArenaBias);
  DeviceCounts grown = deviceCounts();
  EXPECT_EQ(grown.allocs - three.allocs, 2);
  EXPECT_EQ(grown.frees, 2);
  // Crops for each new binding, the previous binding's released first.
  EXPECT_EQ(grown.crops - three.crops, 6);
  EXPECT_EQ(grown.releasedCrops, 6);
  EXPECT_EQ(grown.toDevice - three.toDevice, 2);
  EXPECT_EQ(grown.toHost - three.toHost, 2);

  // Runs on several threads, each with a workspace of its own on the
  // device, give the serial results.
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        ArenaCase c(1 + (t + i) % 8, t);
        if (c.run(m) != ATTN_OK || !c.correct(ArenaBias))
          ++wrong;
      }
    });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(wrong.load(), 0);

  // Keep the library loaded past attn_model_free to read its counts.
  void *keep = ::dlopen(FAKE_DEVICE, RTLD_NOW);
  attn_model_free(m);
  DeviceCounts freed = deviceCounts();
  EXPECT_EQ(freed.frees, freed.allocs);
  EXPECT_EQ(freed.releasedCrops, freed.crops);
  ::dlclose(keep);
}

// Tensors the caller gives in device memory (attn_run_options
// .device_tensors) are read and written where they are: a run copies
// nothing in or out. Memory of attn_model_device_alloc is used as it is;
// the application's own is wrapped for the run and forgotten after it.
TEST(DeviceBuffersTest, TensorsOnTheDeviceCrossNothing) {
  attn_model *m = nullptr;
  ASSERT_EQ(attn_model_load(FAKE_DEVICE, &m), ATTN_OK) << attn_last_error();
  attn_device_info info{};
  info.size = sizeof info;
  ASSERT_EQ(attn_model_device_info(m, &info), ATTN_OK) << attn_last_error();
  EXPECT_EQ(info.device, ATTN_DEVICE_CUDA);
  EXPECT_NE(info.context, nullptr);

  ArenaCase c(5, 1);
  uint64_t xBytes = c.x.size() * sizeof(float);
  uint64_t yBytes = c.y.size() * sizeof(float);
  void *x = nullptr, *y = nullptr;
  ASSERT_EQ(attn_model_device_alloc(m, xBytes, &x), ATTN_OK);
  ASSERT_EQ(attn_model_device_alloc(m, yBytes, &y), ATTN_OK);
  ASSERT_EQ(attn_model_copy_to_device(m, x, c.x.data(), xBytes), ATTN_OK)
      << attn_last_error();

  attn_run_options options{};
  options.size = sizeof options;
  options.device_tensors = ATTN_ON_DEVICE_INPUTS | ATTN_ON_DEVICE_OUTPUTS;
  attn_tensor in{"x", ATTN_F32, 2, c.xDims.data(), x};
  attn_tensor out{"y", ATTN_F32, 2, c.yDims.data(), y};
  DeviceCounts before = deviceCounts();
  ASSERT_EQ(attn_model_run_with_options(m, &options, &in, 1, &out, 1), ATTN_OK)
      << attn_last_error();
  DeviceCounts after = deviceCounts();
  EXPECT_EQ(after.toDevice - before.toDevice, 0);
  EXPECT_EQ(after.toHost - before.toHost, 0);
  EXPECT_EQ(after.allocs - before.allocs, 1); // the temps' arena only
  EXPECT_EQ(after.wraps - before.wraps, 0);   // ours, found by address
  ASSERT_EQ(attn_model_copy_to_host(m, c.y.data(), y, yBytes), ATTN_OK);
  c.expectResult(ArenaBias);

  // The application's own device memory (the fake's: host memory at
  // address + 1), wrapped for the run and forgotten after it.
  ArenaCase own(4, 2);
  std::vector<float> ownY(own.y.size(), -99.0f);
  alignas(64) static float ownX[64 * 4];
  std::copy(own.x.begin(), own.x.end(), ownX);
  auto native = [](const void *p) {
    return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(p) + 1);
  };
  // A 64-byte aligned copy of y: the fake's device memory is aligned.
  alignas(64) static float ownYDevice[64 * 6];
  attn_tensor ownIn{"x", ATTN_F32, 2, own.xDims.data(), native(ownX)};
  attn_tensor ownOut{"y", ATTN_F32, 2, own.yDims.data(), native(ownYDevice)};
  before = deviceCounts();
  ASSERT_EQ(attn_model_run_with_options(m, &options, &ownIn, 1, &ownOut, 1),
            ATTN_OK)
      << attn_last_error();
  after = deviceCounts();
  EXPECT_EQ(after.wraps - before.wraps, 2);
  EXPECT_EQ(after.unwraps - before.unwraps, 2);
  EXPECT_EQ(after.toDevice - before.toDevice, 0);
  EXPECT_EQ(after.toHost - before.toHost, 0);
  std::copy(ownYDevice, ownYDevice + own.y.size(), own.y.begin());
  own.expectResult(ArenaBias);

  // Only the output on the device: the input crosses, the output does not.
  ArenaCase mixed(5, 3);
  attn_tensor hostIn{"x", ATTN_F32, 2, mixed.xDims.data(), mixed.x.data()};
  options.device_tensors = ATTN_ON_DEVICE_OUTPUTS;
  before = deviceCounts();
  ASSERT_EQ(attn_model_run_with_options(m, &options, &hostIn, 1, &out, 1),
            ATTN_OK)
      << attn_last_error();
  after = deviceCounts();
  EXPECT_EQ(after.toDevice - before.toDevice, 1);
  EXPECT_EQ(after.toHost - before.toHost, 0);
  ASSERT_EQ(attn_model_copy_to_host(m, mixed.y.data(), y, yBytes), ATTN_OK);
  mixed.expectResult(ArenaBias);

  // Refused, each before any kernel runs or anything is wrapped: bits this
  // runtime does not know; an allocation too small for the output; memory
  // the library cannot use; freeing memory that is not the model's.
  options.device_tensors = 8;
  EXPECT_EQ(attn_model_run_with_options(m, &options, &in, 1, &out, 1),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(attn_last_error(), HasSubstr("bits 8"));
  options.device_tensors = ATTN_ON_DEVICE_INPUTS | ATTN_ON_DEVICE_OUTPUTS;
  attn_tensor small{"y", ATTN_F32, 2, c.yDims.data(), x};
  EXPECT_EQ(attn_model_run_with_options(m, &options, &in, 1, &small, 1),
            ATTN_ERROR_SHAPE_MISMATCH);
  EXPECT_THAT(attn_last_error(), HasSubstr("output 'y' needs 120 bytes"));
  attn_tensor hostOut{"y", ATTN_F32, 2, c.yDims.data(), c.y.data()};
  EXPECT_EQ(attn_model_run_with_options(m, &options, &in, 1, &hostOut, 1),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(attn_last_error(), HasSubstr("is not device memory"));
  EXPECT_EQ(attn_model_device_free(m, c.y.data()), ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(attn_last_error(), HasSubstr("did not allocate"));
  after = deviceCounts();
  EXPECT_EQ(after.wraps, after.unwraps);

  ASSERT_EQ(attn_model_device_free(m, x), ATTN_OK);
  // y is left for attn_model_free. Keep the library loaded past it to read
  // its counts.
  void *keep = ::dlopen(FAKE_DEVICE, RTLD_NOW);
  attn_model_free(m);
  DeviceCounts freed = deviceCounts();
  EXPECT_EQ(freed.frees, freed.allocs);
  EXPECT_EQ(freed.releasedCrops, freed.crops);
  ::dlclose(keep);
}

// A GPU library gives every device memory function of the ABI: one
// without the crops its temps are placed with is corrupt, refused at load.
TEST(DeviceBuffersTest, MissingDeviceFunctionsAreRefused) {
  attn_model *m = nullptr;
  EXPECT_EQ(attn_model_load(FAKE_DEVICE_NOCROP, &m),
            ATTN_ERROR_INVALID_LIBRARY);
  EXPECT_EQ(m, nullptr);
  EXPECT_THAT(attn_last_error(),
              AllOf(HasSubstr(FAKE_DEVICE_NOCROP), HasSubstr("is corrupt"),
                    HasSubstr("its kernels run on a GPU but its device "
                              "memory functions are missing"),
                    HasSubstr("rebuild it with attnc")));
}

// A model on the host has no device memory: asking for it is refused with
// the fix, and its device is the host.
TEST(DeviceBuffersTest, HostModelsRefuseDeviceMemory) {
  attn_model *m = nullptr;
  ASSERT_EQ(attn_model_load(FAKE_ARENA, &m), ATTN_OK) << attn_last_error();
  attn_device_info info{};
  info.size = sizeof info;
  ASSERT_EQ(attn_model_device_info(m, &info), ATTN_OK);
  EXPECT_EQ(info.device, ATTN_DEVICE_HOST);
  EXPECT_EQ(info.context, nullptr);
  void *memory = nullptr;
  EXPECT_EQ(attn_model_device_alloc(m, 64, &memory),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(attn_last_error(), HasSubstr("runs on the host"));
  EXPECT_EQ(memory, nullptr);
  ArenaCase c(2, 0);
  auto in = c.inputs();
  attn_tensor out{"y", ATTN_F32, 2, c.yDims.data(), c.y.data()};
  attn_run_options options{};
  options.size = sizeof options;
  options.device_tensors = ATTN_ON_DEVICE_INPUTS;
  EXPECT_EQ(attn_model_run_with_options(m, &options, in.data(), 1, &out, 1),
            ATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(attn_last_error(),
              HasSubstr("build it for a GPU (attnc --target=host-cuda"));
  attn_model_free(m);
}

// attn.hpp's side of the same: device(), deviceAlloc and a run with
// options, its errors as attn::Error with the status.
TEST(DeviceBuffersTest, CppWrapperRunsOnDeviceMemory) {
  attn::Model m(FAKE_DEVICE);
  EXPECT_EQ(m.device().device, ATTN_DEVICE_CUDA);
  ArenaCase c(6, 7);
  uint64_t xBytes = c.x.size() * sizeof(float);
  uint64_t yBytes = c.y.size() * sizeof(float);
  attn::DeviceMemory x = m.deviceAlloc(xBytes), y = m.deviceAlloc(yBytes);
  x.upload(c.x.data(), xBytes);
  attn_run_options options{};
  options.size = sizeof options;
  options.device_tensors = ATTN_ON_DEVICE_INPUTS | ATTN_ON_DEVICE_OUTPUTS;
  m.run({{"x", ATTN_F32, 2, c.xDims.data(), x.get()}},
        {{"y", ATTN_F32, 2, c.yDims.data(), y.get()}}, options);
  y.download(c.y.data(), yBytes);
  c.expectResult(ArenaBias);

  attn::Model host(FAKE_ARENA);
  EXPECT_EQ(host.device().device, ATTN_DEVICE_HOST);
  try {
    host.deviceAlloc(64);
    FAIL() << "a host model allocated device memory";
  } catch (const attn::Error &e) {
    EXPECT_EQ(e.status(), ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("runs on the host"));
  }
}

} // namespace
