//===- test/unit/runtime/concurrency_test.cpp - Threads and determinism ---===//
//
// Two real models (test/models/encoder.attn and decoder.attn, compiled by
// attnc for this build) run from 4 threads each at once, many times, on
// inputs of several shapes (so plans, arenas and workspaces are made, cached
// and reused concurrently); every output must be bit-identical to the serial
// run of the same input. The decoder's threads also generate with caches of
// their own. Outputs must also be bit-identical across thread pool sizes
// (every kernel's parallel loops split work that no two threads sum). The
// TSan job runs this file (CMakePresets.json, .ci/run).
//
//===----------------------------------------------------------------------===//
#include "test/unit/runtime/RealModels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace {

using namespace attn::test;

struct Case {
  Inputs inputs;
  std::vector<uint8_t> expected;
};

/// Inputs of several shapes for `model` and their serial outputs.
std::vector<Case> makeCases(attn::Model &model, unsigned seed) {
  const int64_t shapes[][2] = {{1, 1},  {1, 7}, {2, 5},
                               {3, 16}, {4, 3}, {2, 16}};
  std::vector<Case> cases;
  for (const auto &[b, s] : shapes) {
    Case c{makeInputs(model, b, s, seed++), {}};
    c.expected = runOnce(model, c.inputs);
    cases.push_back(std::move(c));
  }
  return cases;
}

/// Prefill `prompt` tokens, then decode `steps` greedy tokens, with states of
/// this call's own; returns every step's logits.
std::vector<uint8_t> generate(attn::Model &model, int64_t prompt, int64_t steps,
                              unsigned seed) {
  constexpr int64_t L = 16, F = 16, V = 24;
  int32_t numStates = attn_model_num_states(model.get());
  std::vector<std::vector<float>> cache(numStates,
                                        std::vector<float>(L * F, 0.0f));
  std::vector<int64_t> cacheDims = {1, L, F};
  std::vector<attn_tensor> states;
  for (auto &c : cache)
    states.push_back({nullptr, ATTN_F32, 3, cacheDims.data(), c.data()});
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(prompt);
  for (int32_t &id : ids)
    id = int32_t(rng() % V);
  std::vector<uint8_t> all;
  int32_t position = 0;
  for (int64_t step = 0; step <= steps; ++step) {
    int64_t s = int64_t(ids.size());
    std::vector<int64_t> idDims = {1, s}, posDims = {1}, outDims = {1, s, V};
    std::vector<float> logits(s * V);
    std::vector<attn_tensor> inputs = {
        {"ids", ATTN_I32, 2, idDims.data(), ids.data()}};
    if (step)
      inputs.push_back({"position", ATTN_I32, 1, posDims.data(), &position});
    attn_tensor out{nullptr, ATTN_F32, 3, outDims.data(), logits.data()};
    attn_run_options options{};
    options.size = sizeof options;
    options.entry = step ? "decode" : "prefill";
    options.states = states.data();
    options.num_states = numStates;
    EXPECT_EQ(attn_model_run_with_options(model.get(), &options, inputs.data(),
                                          int32_t(inputs.size()), &out, 1),
              ATTN_OK)
        << attn_last_error();
    const uint8_t *bytes = reinterpret_cast<const uint8_t *>(logits.data());
    all.insert(all.end(), bytes, bytes + logits.size() * 4);
    position += int32_t(s);
    const float *last = logits.data() + (s - 1) * V;
    ids = {int32_t(std::max_element(last, last + V) - last)};
  }
  return all;
}

TEST(Concurrency, TwoModelsFourThreadsEachMatchSerialRuns) {
  attn::Model encoder = loadModel("encoder"), decoder = loadModel("decoder");
  std::vector<Case> encoderCases = makeCases(encoder, 1);
  std::vector<Case> decoderCases = makeCases(decoder, 101);
  std::vector<std::vector<uint8_t>> serialGenerations;
  for (unsigned t = 0; t < 4; ++t)
    serialGenerations.push_back(generate(decoder, 3 + t, 5, 1000 + t));

  constexpr int Runs = 250;
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      bool isEncoder = t % 2 == 0;
      attn::Model &model = isEncoder ? encoder : decoder;
      std::vector<Case> &cases = isEncoder ? encoderCases : decoderCases;
      for (int i = 0; i < Runs; ++i) {
        // Every fourth iteration, a decoder thread generates instead.
        if (!isEncoder && i % 4 == 3) {
          unsigned g = t / 2;
          if (generate(decoder, 3 + g, 5, 1000 + g) != serialGenerations[g])
            ++mismatches;
          continue;
        }
        const Case &c = cases[(t + i) % cases.size()];
        try {
          if (runOnce(model, c.inputs) != c.expected)
            ++mismatches;
        } catch (const attn::Error &) {
          ++failures;
        }
      }
    });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Determinism, OutputsAreBitIdenticalAcrossThreadCounts) {
  for (const char *stem : {"encoder", "decoder"}) {
    attn::Model model = loadModel(stem);
    model.setThreads(1);
    std::vector<Case> cases = makeCases(model, 7);
    for (int32_t threads : {2, 3, 4, 8, 0}) {
      model.setThreads(threads);
      for (size_t i = 0; i < cases.size(); ++i)
        EXPECT_EQ(runOnce(model, cases[i].inputs), cases[i].expected)
            << stem << " case " << i << " with " << threads << " threads";
    }
  }
}

} // namespace
