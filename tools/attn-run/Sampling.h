//===- tools/attn-run/Sampling.h - choosing the next token ------*- C++ -*-===//
//
// How `attn-run --generate` picks each token from a decoder's logits, with
// the rules and the order of Hugging Face transformers' logits processors
// (as python/attnc/sampling.py): the repetition penalty over the ids a
// sequence has seen, then, when sampling (temperature > 0), temperature,
// top-k and top-p, then a draw from the softmax of what is left; greedy
// (temperature 0) takes the largest logit after the penalty. A filtered-out
// token gets -inf, as transformers' `filter_value`.
//
// The draw is std::mt19937_64 seeded by --seed, turned into a double in
// [0, 1) by hand (std::uniform_real_distribution differs between standard
// libraries): the same seed draws the same tokens again from the same
// logits, but not the tokens torch's or numpy's generator would draw.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_RUN_SAMPLING_H
#define ATTN_TOOLS_ATTN_RUN_SAMPLING_H

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::run {

/// A sampling value that makes no sense; the message names the option.
struct SamplingError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// How the next token is chosen. Doubles, as Python's floats: transformers
/// rounds each to float32 where it meets the logits, and top-p compares
/// with float32(1 - top_p) computed in double.
struct SamplingConfig {
  double temperature = 0;       ///< 0: greedy
  int64_t topK = 0;             ///< 0: off
  double topP = 1;              ///< 1: off
  double repetitionPenalty = 1; ///< 1: none

  bool greedy() const { return temperature == 0; }
  /// Throws SamplingError naming the --option and its range.
  void validate() const;
};

/// transformers' RepetitionPenaltyLogitsProcessor on one row: each id of
/// `seen` (in the vocabulary) has its logit divided by `penalty` when
/// positive, multiplied when negative; once however often it was seen.
void applyRepetitionPenalty(std::vector<float> &logits,
                            const std::vector<int64_t> &seen, double penalty);
/// TemperatureLogitsWarper: the logits divided by float32(t).
void applyTemperature(std::vector<float> &logits, double t);
/// TopKLogitsWarper: tokens below the k-th largest logit go (ties with it
/// stay); 0 or k >= the vocabulary keeps all.
void applyTopK(std::vector<float> &logits, int64_t k);
/// TopPLogitsWarper: sorted ascending, the tokens whose cumulative
/// probability is <= 1 - p go; the largest always stays. 1 keeps all.
void applyTopP(std::vector<float> &logits, double p);
/// float32 softmax; -inf logits get 0.
std::vector<float> softmax(const std::vector<float> &logits);

/// The logits after the penalty and, when sampling, the warpers in
/// transformers' order: what `TokenChooser::next` draws from.
std::vector<float> filteredLogits(const float *logits, int64_t vocab,
                                  const std::vector<int64_t> &seen,
                                  const SamplingConfig &config);

/// Two greedy choices from logits that differ by at most `difference` an
/// element (a decode's and one run's over the same ids): `best` is the
/// largest of `logits` after the penalty and `other` the other side's.
/// Both are right when `logits` put `other` at most `allowed` below `best`:
/// twice the difference, times max(p, 1/p) for a repetition penalty p,
/// the most the penalty stretches a logit by.
struct GreedyTie {
  double gap;     ///< penalized logits[best] - logits[other]
  double allowed; ///< 2 * difference * max(p, 1 / p)
  bool isTie() const { return gap <= allowed; }
};
GreedyTie greedyTie(const float *logits, int64_t vocab,
                    const std::vector<int64_t> &seen,
                    const SamplingConfig &config, int64_t best, int64_t other,
                    double difference);

/// Picks tokens for every sequence of a generation from one seeded stream.
class TokenChooser {
public:
  TokenChooser(const SamplingConfig &config, uint64_t seed);
  /// The next token of a sequence that has seen `seen` (prompt and
  /// generated ids) from its last logits: the largest (the first of equal
  /// ones) when greedy, else a draw.
  int64_t next(const float *logits, int64_t vocab,
               const std::vector<int64_t> &seen);

private:
  SamplingConfig config;
  std::mt19937_64 engine;
};

} // namespace attn::run

#endif // ATTN_TOOLS_ATTN_RUN_SAMPLING_H
