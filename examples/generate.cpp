//===- examples/generate.cpp - greedy generation of token ids from C++ ----===//
//
// generate MODEL.so [WEIGHTS.safetensors] N IDS
//
// Greedy generation at the level of token ids with a decoder attnc built
// (one with KV caches, e.g. `attnc hf-model-dir -o model.so`): loads the
// library (with the weights file it reads at load, if it reads one),
// allocates its KV caches, prefills the prompt IDS (e.g. 27,39,29), which
// gives the first new token, then decodes the others one at a time from the
// caches, each the largest logit, and prints the N tokens on one line.
// Tokenizing text into IDS and the ids back into text is the application's
// (e.g. Hugging Face's tokenizers). Everything here is the public C API of
// attn.h.
//
//===----------------------------------------------------------------------===//
#include "attn/attn.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

/// A failed call: the runtime's message.
struct Failed {
  std::string message;
};

void check(attn_status status) {
  if (status != ATTN_OK)
    throw Failed{attn_last_error()};
}

std::vector<int32_t> parseIds(const std::string &text) {
  std::vector<int32_t> ids;
  for (size_t at = 0; at <= text.size();) {
    size_t end = std::min(text.find(',', at), text.size());
    char *rest = nullptr;
    long id = std::strtol(text.c_str() + at, &rest, 10);
    if (end == at || rest != text.c_str() + end || id < 0 || id > INT32_MAX)
      throw Failed{"IDS are token ids such as 1,2,3: '" + text + "'"};
    ids.push_back(int32_t(id));
    at = end + 1;
  }
  return ids;
}

/// One prefill or decode of `ids` (batch 1): the logits of its last token.
std::vector<float> step(attn_model *model, const char *entry,
                        std::vector<int32_t> ids, int32_t position,
                        std::vector<attn_tensor> &states, int64_t vocab) {
  attn_tensor_info input, output;
  check(attn_model_input_info(model, 0, &input));
  check(attn_model_output_info(model, 0, &output));
  int64_t idDims[2] = {1, int64_t(ids.size())}, batch = 1;
  attn_tensor inputs[2] = {
      {input.name, ATTN_I32, 2, idDims, ids.data()},
      {"position", ATTN_I32, 1, &batch, &position}}; // decode only
  std::vector<float> logits(ids.size() * vocab);
  int64_t logitDims[3] = {1, int64_t(ids.size()), vocab};
  attn_tensor out = {output.name, ATTN_F32, 3, logitDims, logits.data()};
  attn_run_options options = {sizeof options};
  options.entry = entry;
  options.states = states.data();
  options.num_states = int32_t(states.size());
  bool decode = std::string(entry) == "decode";
  check(attn_model_run_with_options(model, &options, inputs, decode ? 2 : 1,
                                    &out, 1));
  return std::vector<float>(logits.end() - vocab, logits.end());
}

int run(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr,
                 "usage: generate MODEL.so [WEIGHTS.safetensors] N IDS\n");
    return 2;
  }
  attn_load_options load = {sizeof load};
  load.weights = argc == 5 ? argv[2] : nullptr;
  const int tokens = std::atoi(argv[argc - 2]);
  std::vector<int32_t> prompt = parseIds(argv[argc - 1]);
  if (tokens < 1)
    throw Failed{
        std::string("N is how many tokens to generate, at least 1: '") +
        argv[argc - 2] + "'"};
  attn_model *raw = nullptr;
  check(attn_model_load_with_options(argv[1], &load, &raw));
  std::unique_ptr<attn_model, decltype(&attn_model_free)> owner(
      raw, &attn_model_free);
  attn_model *model = owner.get();

  // "decode" tells a decoder; its logits [B, S, V] give the vocabulary.
  if (!attn_model_has_entry(model, "decode"))
    throw Failed{"the model has no KV caches: attnc builds them for decoders"};
  attn_tensor_info logitsInfo;
  check(attn_model_output_info(model, 0, &logitsInfo));
  const int64_t vocab = logitsInfo.dims[2].extent;

  // The KV caches: each state is [B, L, F] of its dtype (f32, or f16 / bf16
  // for a cache kept in half the bytes); B = 1 and L = the prompt plus the
  // new tokens, zeroed. The runtime writes each step's keys and values into
  // them in place.
  const int64_t capacity = int64_t(prompt.size()) + tokens;
  int32_t numStates = attn_model_num_states(model);
  std::vector<std::vector<int64_t>> dims(numStates);
  std::vector<std::vector<unsigned char>> memory(numStates);
  std::vector<attn_tensor> states;
  for (int32_t i = 0; i < numStates; ++i) {
    attn_tensor_info info;
    check(attn_model_state_info(model, i, &info));
    dims[i] = {1, capacity, info.dims[2].extent};
    size_t element = info.dtype == ATTN_F32 ? 4 : 2;
    memory[i].assign(size_t(capacity * info.dims[2].extent) * element, 0);
    states.push_back(
        {info.name, info.dtype, 3, dims[i].data(), memory[i].data()});
  }

  // Prefill the prompt, then decode one token at a time at its position.
  std::vector<float> logits = step(model, "prefill", prompt, 0, states, vocab);
  int32_t position = int32_t(prompt.size());
  for (int t = 0; t < tokens; ++t) {
    int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) -
                           logits.begin());
    std::printf(t ? " %d" : "%d", next);
    if (t + 1 < tokens)
      logits = step(model, "decode", {next}, position++, states, vocab);
  }
  std::printf("\n");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const Failed &f) {
    std::fprintf(stderr, "generate: %s\n", f.message.c_str());
    return 1;
  }
}
