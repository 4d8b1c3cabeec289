//===- test/unit/tools/SamplingTest.cpp - attn-run's token chooser --------===//
//
// tools/attn-run/Sampling against the goldens transformers' own processors
// made (python/tests/make_sampling_goldens.py: GenerationMixin.
// _get_logits_processor, so their order too) on fixed logits [4, 64]: the
// kept set token for token, the kept logits to 1e-6 relative and the
// probabilities to 1e-6, the cases python/tests/test_sampling.py checks.
// Which of several equal logits top-p keeps is torch.sort's (unstable)
// choice, so positions are compared only in rows without equal logits.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-run/Sampling.h"

#include "attn/safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace attn::run;
namespace st = attn::safetensors;

namespace {

struct Goldens {
  st::File file;
  nlohmann::json cases;
  int64_t rows = 0, vocab = 0;

  const float *logits(int64_t row) const {
    return floats("logits") + row * vocab;
  }
  std::vector<int64_t> seen(int64_t row) const {
    const st::Tensor *t = file.find("seen");
    const int32_t *data = static_cast<const int32_t *>(t->data);
    int64_t n = t->shape[1];
    return {data + row * n, data + (row + 1) * n};
  }
  const float *floats(const std::string &name) const {
    const st::Tensor *t = file.find(name);
    EXPECT_TRUE(t && t->dtype == st::DType::F32) << name;
    return static_cast<const float *>(t->data);
  }
  bool distinct(int64_t row) const {
    std::set<float> values(logits(row), logits(row) + vocab);
    return int64_t(values.size()) == vocab;
  }
};

const Goldens &goldens() {
  static const Goldens g = [] {
    st::Expected<st::File> file = st::File::open(SAMPLING_GOLDENS);
    if (!file)
      throw std::runtime_error(file.message());
    Goldens g{std::move(*file), {}};
    g.cases = nlohmann::json::parse(g.file.metadata().at("cases"));
    const st::Tensor *logits = g.file.find("logits");
    g.rows = logits->shape[0];
    g.vocab = logits->shape[1];
    const st::Tensor *seen = g.file.find("seen");
    if (!seen || seen->dtype != st::DType::I32 || seen->shape[0] != g.rows)
      throw std::runtime_error("goldens: 'seen' is not i32 [rows, n]");
    return g;
  }();
  return g;
}

/// transformers' GenerationConfig arguments as attn-run's: its defaults are
/// temperature 1 and top_k 50 when sampling; not sampling is greedy.
SamplingConfig ourConfig(const nlohmann::json &kwargs) {
  SamplingConfig c;
  c.repetitionPenalty = kwargs.value("repetition_penalty", 1.0);
  if (!kwargs.value("do_sample", false))
    return c;
  c.temperature = kwargs.value("temperature", 1.0);
  c.topK = kwargs.value("top_k", int64_t(50));
  c.topP = kwargs.value("top_p", 1.0);
  return c;
}

std::vector<float> keptSorted(const std::vector<float> &row) {
  std::vector<float> kept;
  for (float v : row)
    if (std::isfinite(v))
      kept.push_back(v);
  std::sort(kept.begin(), kept.end());
  return kept;
}

std::vector<bool> keptSet(const float *row, int64_t n) {
  std::vector<bool> kept(n);
  for (int64_t i = 0; i < n; ++i)
    kept[i] = std::isfinite(row[i]);
  return kept;
}

std::vector<std::string> caseNames() {
  std::vector<std::string> names;
  for (auto &item : goldens().cases.items())
    names.push_back(item.key());
  return names;
}

class FiltersMatchTransformers : public ::testing::TestWithParam<std::string> {
};

TEST_P(FiltersMatchTransformers, KeptSetsLogitsAndProbabilities) {
  const Goldens &g = goldens();
  const std::string name = GetParam();
  SamplingConfig config = ourConfig(g.cases.at(name));
  config.validate();
  const float *wantScores = g.floats(name + ".scores");
  const float *wantProbs = g.floats(name + ".probs");
  for (int64_t r = 0; r < g.rows; ++r) {
    SCOPED_TRACE(name + ", row " + std::to_string(r));
    std::vector<float> got =
        filteredLogits(g.logits(r), g.vocab, g.seen(r), config);
    std::vector<float> want(wantScores + r * g.vocab,
                            wantScores + (r + 1) * g.vocab);
    std::vector<float> gotKept = keptSorted(got), wantKept = keptSorted(want);
    ASSERT_EQ(gotKept.size(), wantKept.size());
    for (size_t i = 0; i < gotKept.size(); ++i)
      EXPECT_NEAR(gotKept[i], wantKept[i], 1e-6 * std::fabs(wantKept[i]));
    if (g.distinct(r))
      EXPECT_EQ(keptSet(got.data(), g.vocab), keptSet(want.data(), g.vocab));
    if (config.greedy())
      continue;
    std::vector<float> probs = softmax(got);
    std::vector<float> wantP(wantProbs + r * g.vocab,
                             wantProbs + (r + 1) * g.vocab);
    std::sort(probs.begin(), probs.end());
    std::sort(wantP.begin(), wantP.end());
    for (int64_t i = 0; i < g.vocab; ++i)
      EXPECT_NEAR(probs[i], wantP[i], 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, FiltersMatchTransformers,
                         ::testing::ValuesIn(caseNames()),
                         [](const auto &info) { return info.param; });

TEST(Sampling, GoldensCoverEveryFilter) {
  // The cases make_sampling_goldens.py writes, each filter among them, and
  // each sampling case but plain temperature removes tokens somewhere: a
  // test that keeps everything proves nothing.
  const Goldens &g = goldens();
  for (const char *name : {"greedy_penalty", "temperature", "top_k5", "top_k1",
                           "top_p09", "top_p05", "top_p001", "all", "hot"})
    EXPECT_TRUE(g.cases.contains(name)) << name;
  EXPECT_EQ(g.cases.at("all").at("processors"),
            nlohmann::json::parse(R"(["RepetitionPenaltyLogitsProcessor",
              "TemperatureLogitsWarper", "TopKLogitsWarper",
              "TopPLogitsWarper"])"));
  for (auto &[name, kwargs] : g.cases.items()) {
    if (!kwargs.value("do_sample", false) || name == "temperature")
      continue;
    const float *scores = g.floats(name + ".scores");
    int64_t fewest = g.vocab;
    for (int64_t r = 0; r < g.rows; ++r) {
      std::vector<bool> kept = keptSet(scores + r * g.vocab, g.vocab);
      fewest =
          std::min<int64_t>(fewest, std::count(kept.begin(), kept.end(), true));
    }
    EXPECT_LT(fewest, g.vocab) << name;
  }
}

TEST(Sampling, TopKComesBeforeTopP) {
  // With top-p applied first, then top-k, the "all" and "hot" cases keep
  // other tokens than transformers does in some row: the goldens tell the
  // two orders apart, and the order of filteredLogits is theirs.
  const Goldens &g = goldens();
  int differing = 0;
  for (const char *name : {"all", "hot"}) {
    SamplingConfig config = ourConfig(g.cases.at(name));
    const float *want = g.floats(std::string(name) + ".scores");
    for (int64_t r = 0; r < g.rows; ++r) {
      std::vector<float> swapped(g.logits(r), g.logits(r) + g.vocab);
      applyRepetitionPenalty(swapped, g.seen(r), config.repetitionPenalty);
      applyTemperature(swapped, config.temperature);
      applyTopP(swapped, config.topP);
      applyTopK(swapped, config.topK);
      if (keptSorted(swapped) !=
          keptSorted(
              std::vector<float>(want + r * g.vocab, want + (r + 1) * g.vocab)))
        ++differing;
    }
  }
  EXPECT_GT(differing, 0) << "no row tells top-k then top-p from the other "
                             "order: the test would pass either way";
}

TEST(Sampling, GreedyIsTheLargestAfterThePenalty) {
  const Goldens &g = goldens();
  SamplingConfig config = ourConfig(g.cases.at("greedy_penalty"));
  const float *want = g.floats("greedy_penalty.scores");
  TokenChooser chooser(config, 0);
  for (int64_t r = 0; r < g.rows; ++r) {
    const float *row = want + r * g.vocab;
    int64_t largest = std::max_element(row, row + g.vocab) - row;
    EXPECT_EQ(chooser.next(g.logits(r), g.vocab, g.seen(r)), largest);
  }
}

TEST(Sampling, AGreedyTieIsTwiceTheDifferenceStretchedByThePenalty) {
  // Logits 3.0 (token 0) and 2.96 (token 1): 0.04 apart.
  std::vector<float> logits = {3.0f, 2.96f, -1.0f};
  SamplingConfig config;
  GreedyTie close = greedyTie(logits.data(), 3, {}, config, 0, 1, 0.021);
  EXPECT_NEAR(close.gap, 0.04, 1e-6);
  EXPECT_DOUBLE_EQ(close.allowed, 0.042);
  EXPECT_TRUE(close.isTie());
  EXPECT_FALSE(greedyTie(logits.data(), 3, {}, config, 0, 1, 0.019).isTie());
  // A penalty of 2 on token 1 (seen) halves its logit: 3.0 - 1.48 = 1.52
  // apart, and a difference of d moves the gap by up to 2 * 2d.
  config.repetitionPenalty = 2;
  GreedyTie penalized = greedyTie(logits.data(), 3, {1}, config, 0, 1, 0.38);
  EXPECT_NEAR(penalized.gap, 1.52, 1e-6);
  EXPECT_DOUBLE_EQ(penalized.allowed, 1.52);
  EXPECT_TRUE(penalized.isTie());
  EXPECT_FALSE(greedyTie(logits.data(), 3, {1}, config, 0, 1, 0.37).isTie());
  // A penalty below 1 stretches by 1 / p as much.
  config.repetitionPenalty = 0.5;
  EXPECT_DOUBLE_EQ(greedyTie(logits.data(), 3, {}, config, 0, 1, 0.1).allowed,
                   0.4);
}

TEST(Sampling, DrawsFollowTheProbabilities) {
  // 20000 draws from row 3 of "hot" (top-k, top-p, penalty and a high
  // temperature: many tokens kept): only kept tokens come, each about as
  // often as transformers' probability says (4 standard deviations).
  const Goldens &g = goldens();
  SamplingConfig config = ourConfig(g.cases.at("hot"));
  const int64_t row = 3;
  const float *probs = g.floats("hot.probs") + row * g.vocab;
  TokenChooser chooser(config, 7);
  const int draws = 20000;
  std::vector<int> count(g.vocab);
  for (int i = 0; i < draws; ++i)
    ++count[chooser.next(g.logits(row), g.vocab, g.seen(row))];
  int kinds = 0;
  for (int64_t t = 0; t < g.vocab; ++t) {
    double p = probs[t], sd = std::sqrt(draws * p * (1 - p));
    if (p == 0)
      EXPECT_EQ(count[t], 0) << "token " << t << " was filtered out";
    EXPECT_NEAR(count[t], draws * p, 4 * sd + 1) << "token " << t;
    kinds += count[t] > 0;
  }
  EXPECT_GT(kinds, 5);
}

TEST(Sampling, ASeedRepeatsItsDraws) {
  const Goldens &g = goldens();
  SamplingConfig config;
  config.temperature = 1.5;
  auto drawTen = [&](uint64_t seed) {
    TokenChooser chooser(config, seed);
    std::vector<int64_t> ids;
    for (int i = 0; i < 10; ++i)
      ids.push_back(chooser.next(g.logits(0), g.vocab, g.seen(0)));
    return ids;
  };
  EXPECT_EQ(drawTen(42), drawTen(42));
  std::set<std::vector<int64_t>> others;
  for (uint64_t seed = 0; seed < 6; ++seed)
    others.insert(drawTen(seed));
  EXPECT_GT(others.size(), 1u) << "six seeds drew one sequence";
}

TEST(Sampling, NonsenseValuesNameTheOption) {
  auto message = [](SamplingConfig c) -> std::string {
    try {
      c.validate();
    } catch (const SamplingError &e) {
      return e.what();
    }
    return "";
  };
  SamplingConfig c;
  c.temperature = -1;
  EXPECT_NE(message(c).find("--temperature must be 0"), std::string::npos);
  c.temperature = NAN;
  EXPECT_NE(message(c).find("--temperature"), std::string::npos);
  c = SamplingConfig{1.0, -2};
  EXPECT_NE(message(c).find("--top-k must be an integer >= 0"),
            std::string::npos);
  for (double p : {0.0, -0.5, 1.5}) {
    c = SamplingConfig{1.0, 0, p};
    EXPECT_NE(message(c).find("--top-p must be in (0, 1]"), std::string::npos);
  }
  c = SamplingConfig{1.0, 0, 1.0, 0.0};
  EXPECT_NE(message(c).find("--repetition-penalty must be positive"),
            std::string::npos);
  c = SamplingConfig{0.0, 5};
  EXPECT_NE(message(c).find("give --temperature T"), std::string::npos);
  EXPECT_EQ(message(SamplingConfig{}), "");
  EXPECT_EQ(message(SamplingConfig{0.0, 0, 1.0, 1.3}), "");
}

} // namespace
