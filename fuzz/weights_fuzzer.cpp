//===- fuzz/weights_fuzzer.cpp - The load-time weight binder --------------===//
//
// Any bytes as the weights file of a real model library (test/models/
// decoder.attn, or ATTNC_FUZZ_LIBRARY): loadWeights either refuses the file
// with a message, or binds every tensor of the library's weights table to
// data of its dtype and shape and runs the library's "init" plan on them.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzFiles.h"

#include "model.h"

#include <string>

using attnc::fuzz::finding;
using attnc::fuzz::MemFile;

namespace {

constexpr const char *kTarget = "weights_fuzzer";

const attn_model_desc *original() {
  // Loaded once and kept for the whole run.
  static attn_model *loaded = nullptr;
  static const attn_model_desc *desc = [] {
    const char *path = std::getenv("ATTNC_FUZZ_LIBRARY");
    if (!path)
      path = ATTNC_FUZZ_MODEL_DIR "/decoder.so";
    attn_load_options options{sizeof options, nullptr, ATTN_LOAD_DESCRIBE_ONLY};
    if (attn_model_load_with_options(path, &options, &loaded) != ATTN_OK)
      finding(kTarget, std::string("cannot load the model library: ") +
                           attn_last_error());
    // The library's own thread pool: one thread, as a fuzzer runs.
    loaded->desc->set_num_threads(1);
    return loaded->desc;
  }();
  return desc;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const attn_model_desc &desc = *original();
  MemFile weights(data, size);
  attn_model model;
  attn::rt::adoptDescriptor(model, desc);
  model.path = "decoder.so";
  if (attn::rt::loadWeights(model, weights.path().c_str()) != ATTN_OK) {
    if (!*attn_last_error())
      finding(kTarget, "weights were refused without a message");
    return 0;
  }
  // The run kernels that read weights keep them; otherwise "init" was the
  // last reader and they are released.
  if (!model.weights.empty() &&
      model.weights.size() != size_t(desc.num_weights))
    finding(kTarget, "the weights table and the bound weights differ");
  for (const void *w : model.weights)
    if (!w)
      finding(kTarget, "a weight was accepted without data");
  if (desc.constants_size && !model.constants)
    finding(kTarget, "the weights were accepted but no constants computed");
  return 0;
}
