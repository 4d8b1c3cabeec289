//===- tools/attn-run/Generate.h - greedy decoding with a KV cache -*- C++
//-*-===//
//
// `attn-run --generate N --prompt IDS`: prefill the prompt into the model's
// KV caches (its states, allocated here), then decode one token at a time,
// each the argmax of the last logits; prints the tokens and tokens/s of
// prefill and of decode. With --check, one "run" over the whole sequence
// must give the logits of every prefill and decode position.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_RUN_GENERATE_H
#define ATTN_TOOLS_ATTN_RUN_GENERATE_H

#include "attn/attn.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::run {

struct GenerateOptions {
  int tokens = 0;              ///< how many to generate
  std::vector<int32_t> prompt; ///< token ids, batch 1
  int64_t capacity = 0;        ///< cache rows; 0: prompt + tokens
  bool check = false;
};

/// A bad --generate request, or a failed call (with the runtime's message).
struct GenerateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "1,2,3" as ids; throws GenerateError on anything else.
std::vector<int32_t> parsePrompt(const std::string &text);

/// Generates with `model` (loaded with its weights); returns 0, or 1 when
/// --check finds a difference beyond the tolerance.
int generate(attn_model *model, const GenerateOptions &options);

} // namespace attn::run

#endif // ATTN_TOOLS_ATTN_RUN_GENERATE_H
