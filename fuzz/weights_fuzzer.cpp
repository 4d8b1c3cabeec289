//===- fuzz/weights_fuzzer.cpp - The load-time weight binder --------------===//
//
// Any bytes as the weights file of a real model library (test/models/
// decoder.attn, or ATTNC_FUZZ_LIBRARY): loadWeights either refuses the file
// with a message, or binds every tensor of the library's weights table to
// data of its dtype and shape and runs the library's "init" plan on them.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzFiles.h"
#include "fuzz/FuzzModel.h"

#include "model.h"

#include <string>

using attnc::fuzz::finding;
using attnc::fuzz::MemFile;

namespace {

constexpr const char *kTarget = "weights_fuzzer";

/// The library's descriptor, loaded once and kept for the whole run, with
/// the library's own thread pool at one thread, as a fuzzer runs.
const attn_model_desc &original() {
  static attn_model *loaded = [] {
    attn_model *m = attnc::fuzz::loadFuzzModel(kTarget, false);
    m->desc->set_num_threads(1);
    return m;
  }();
  return *loaded->desc;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const attn_model_desc &desc = original();
  MemFile weights(data, size);
  attn_model model;
  attn::rt::adoptDescriptor(model, desc);
  model.path = "decoder.so";
  // Half of the inputs also go through the NaN / Inf scan
  // (ATTN_LOAD_CHECK_WEIGHTS), chosen by the data so a replay is the same.
  bool checkFinite = size % 2 == 1;
  if (attn::rt::loadWeights(model, weights.path().c_str(), checkFinite) !=
      ATTN_OK) {
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
