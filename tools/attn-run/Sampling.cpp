//===- tools/attn-run/Sampling.cpp - choosing the next token --------------===//
#include "Sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

namespace attn::run {
namespace {

constexpr float Filtered = -std::numeric_limits<float>::infinity();

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

} // namespace

void SamplingConfig::validate() const {
  if (!std::isfinite(temperature) || temperature < 0)
    throw SamplingError("--temperature must be 0 (greedy, the default) or "
                        "positive, got " +
                        number(temperature));
  if (topK < 0)
    throw SamplingError("--top-k must be an integer >= 0 (0: no top-k), got " +
                        std::to_string(topK));
  if (!(topP > 0 && topP <= 1))
    throw SamplingError("--top-p must be in (0, 1] (1: no top-p), got " +
                        number(topP));
  if (!std::isfinite(repetitionPenalty) || repetitionPenalty <= 0)
    throw SamplingError("--repetition-penalty must be positive (1: none), "
                        "got " +
                        number(repetitionPenalty));
  if (greedy() && (topK != 0 || topP != 1))
    throw SamplingError("--top-k and --top-p filter what a draw picks from: "
                        "give --temperature T (e.g. 1) to sample, or drop "
                        "them for greedy decoding");
}

void applyRepetitionPenalty(std::vector<float> &logits,
                            const std::vector<int64_t> &seen, double penalty) {
  if (penalty == 1)
    return;
  const float p = float(penalty);
  std::vector<bool> done(logits.size());
  for (int64_t id : seen) {
    if (id < 0 || id >= int64_t(logits.size()) || done[id])
      continue;
    done[id] = true;
    float &v = logits[id];
    v = v < 0 ? v * p : v / p;
  }
}

void applyTemperature(std::vector<float> &logits, double t) {
  if (t == 1)
    return;
  const float divisor = float(t);
  for (float &v : logits)
    v /= divisor;
}

void applyTopK(std::vector<float> &logits, int64_t k) {
  if (k == 0 || k >= int64_t(logits.size()))
    return;
  std::vector<float> sorted = logits;
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(),
                   std::greater<float>());
  const float kth = sorted[k - 1];
  for (float &v : logits)
    if (v < kth)
      v = Filtered;
}

void applyTopP(std::vector<float> &logits, double p) {
  if (p >= 1)
    return;
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logits[a] < logits[b]; });
  std::vector<float> ordered(logits.size());
  for (size_t i = 0; i < order.size(); ++i)
    ordered[i] = logits[order[i]];
  std::vector<float> probs = softmax(ordered);
  const float cut = float(1 - p);
  // Accumulated in double, as torch's cumsum on the CPU, each sum rounded
  // to float32 before the comparison; the last (largest) token stays.
  double cumulative = 0;
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    cumulative += probs[i];
    if (float(cumulative) <= cut)
      logits[order[i]] = Filtered;
  }
}

std::vector<float> softmax(const std::vector<float> &logits) {
  float largest = Filtered;
  for (float v : logits)
    largest = std::max(largest, v);
  std::vector<float> e(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    e[i] = logits[i] == Filtered ? 0.0f : std::exp(logits[i] - largest);
    sum += e[i];
  }
  for (float &v : e)
    v = float(v / sum);
  return e;
}

std::vector<float> filteredLogits(const float *logits, int64_t vocab,
                                  const std::vector<int64_t> &seen,
                                  const SamplingConfig &config) {
  std::vector<float> row(logits, logits + vocab);
  applyRepetitionPenalty(row, seen, config.repetitionPenalty);
  if (config.greedy())
    return row;
  applyTemperature(row, config.temperature);
  applyTopK(row, config.topK);
  applyTopP(row, config.topP);
  return row;
}

GreedyTie greedyTie(const float *logits, int64_t vocab,
                    const std::vector<int64_t> &seen,
                    const SamplingConfig &config, int64_t best, int64_t other,
                    double difference) {
  std::vector<float> row(logits, logits + vocab);
  applyRepetitionPenalty(row, seen, config.repetitionPenalty);
  double p = config.repetitionPenalty;
  return {double(row[best]) - double(row[other]),
          2 * difference * std::max(p, 1 / p)};
}

TokenChooser::TokenChooser(const SamplingConfig &config, uint64_t seed)
    : config(config), engine(seed) {
  config.validate();
}

int64_t TokenChooser::next(const float *logits, int64_t vocab,
                           const std::vector<int64_t> &seen) {
  std::vector<float> scores = filteredLogits(logits, vocab, seen, config);
  if (config.greedy())
    return std::max_element(scores.begin(), scores.end()) - scores.begin();
  std::vector<float> probs = softmax(scores);
  // 53 random bits as a double in [0, 1): the same with any standard library.
  const double u = double(engine() >> 11) * 0x1.0p-53;
  double total = 0;
  for (float q : probs)
    total += q;
  double cumulative = 0;
  int64_t last = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    if (probs[i] <= 0)
      continue;
    last = i;
    cumulative += probs[i] / total;
    if (u < cumulative)
      return i;
  }
  return last; // u past the rounded total: the last token that can be drawn
}

} // namespace attn::run
