//===- tools/attn-run/Generate.h - decoding with a KV cache -----*- C++ -*-===//
//
// `attn-run --generate N --prompt IDS [--prompt IDS ...]`: prefill the
// prompts into the model's KV caches (its states, allocated here: one row
// per prompt), then decode one token at a time for all of them as one
// batch, each sequence at its own position, choosing each token with
// Sampling.h (greedy by default; transformers' rules and order). Prompts of
// one length prefill together; prompts of different lengths are prefilled
// one by one, each into its row of the caches (a [1, L, F] view of each
// state). A sequence ends after N tokens or at an --eos id (kept), and then
// leaves the batch: the others' rows of the caches move up. Prints one line
// of tokens per prompt and tokens/s of prefill and of decode. With --check,
// one "run" over each whole sequence alone must give the logits its prefill
// and decode steps gave, and, greedy, the same tokens.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_RUN_GENERATE_H
#define ATTN_TOOLS_ATTN_RUN_GENERATE_H

#include "Sampling.h"
#include "attn/attn.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::run {

struct GenerateOptions {
  int tokens = 0; ///< how many to generate per prompt
  /// Token ids, one prompt per sequence of the batch (checked against the
  /// model's vocabulary by generate).
  std::vector<std::vector<int64_t>> prompts;
  int64_t capacity = 0; ///< cache rows; 0: the longest prompt + tokens
  bool check = false;
  bool profile = false; ///< time the decode steps' kernels
  SamplingConfig sampling;
  uint64_t seed = 0;
  std::vector<int64_t> eos; ///< ids that end a sequence
};

/// A bad --generate request, or a failed call (with the runtime's message).
struct GenerateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "1,2,3" as ids; throws GenerateError on anything else. `option` names
/// where the text came from in the message.
std::vector<int64_t> parsePrompt(const std::string &text,
                                 const std::string &option = "--prompt");

/// The prompts of a text file, one a line, ids separated by commas or
/// spaces; blank lines are skipped.
std::vector<std::vector<int64_t>> readPrompts(const std::string &path);

/// Generates with `model` (loaded with its weights); returns 0, or 1 when
/// --check finds a difference beyond the tolerance.
int generate(attn_model *model, const GenerateOptions &options);

} // namespace attn::run

#endif // ATTN_TOOLS_ATTN_RUN_GENERATE_H
