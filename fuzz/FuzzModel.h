//===- fuzz/FuzzModel.h - The model the runtime's targets load --*- C++ -*-===//
//
// test/models/decoder.attn as this build compiled it (ATTNC_FUZZ_LIBRARY and
// ATTNC_FUZZ_WEIGHTS name another library and its weights), loaded once and
// kept for the whole run.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_FUZZ_FUZZMODEL_H
#define ATTNC_FUZZ_FUZZMODEL_H

#include "fuzz/FuzzFiles.h"

#include "attn/attn.h"

#include <cstdlib>
#include <string>

namespace attnc::fuzz {

/// The model, loaded to be described only (no weights, no runs) or with its
/// weights; `target` names the fuzz target in the message if it cannot be.
inline attn_model *loadFuzzModel(const char *target, bool withWeights) {
  const char *path = std::getenv("ATTNC_FUZZ_LIBRARY");
  const char *weights = std::getenv("ATTNC_FUZZ_WEIGHTS");
  if (!path) {
    path = ATTNC_FUZZ_MODEL_DIR "/decoder.so";
    weights = ATTNC_FUZZ_MODEL_DIR "/decoder.safetensors";
  }
  attn_load_options options{sizeof options, withWeights ? weights : nullptr,
                            withWeights ? 0u : ATTN_LOAD_DESCRIBE_ONLY};
  attn_model *model = nullptr;
  if (attn_model_load_with_options(path, &options, &model) != ATTN_OK)
    finding(target,
            std::string("cannot load the model library: ") + attn_last_error());
  return model;
}

} // namespace attnc::fuzz

#endif // ATTNC_FUZZ_FUZZMODEL_H
