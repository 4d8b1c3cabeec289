//===- fuzz/inputs_fuzzer.cpp - The runtime's checks of run-time tensors --===//
//
// A real model (test/models/decoder.attn with its weights, or
// ATTNC_FUZZ_LIBRARY + ATTNC_FUZZ_WEIGHTS) run through the public C API on
// tensors the input describes: any entry name, any number of inputs, states
// and outputs with any names, dtypes, ranks and dims, and data of exactly the
// size those dims claim (or none) holding any values, token ids out of range
// and NaN included. attn_model_run_with_options either refuses them with a
// message before any kernel runs, or runs; a run reads and writes only the
// memory it was given (ASan sees every byte past an allocation).
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzFiles.h"
#include "fuzz/FuzzModel.h"

#include "attn/attn.h"
#include "attn/dtypes.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using attnc::fuzz::finding;

namespace {

constexpr const char *kTarget = "inputs_fuzzer";
/// Data is allocated only for tensors of at most this many bytes.
constexpr uint64_t kMaxBytes = 1 << 16;

/// The model with its weights, loaded once and kept for the whole run.
attn_model *model() {
  static attn_model *loaded = [] {
    attn_model *m = attnc::fuzz::loadFuzzModel(kTarget, true);
    attn_model_set_threads(m, 1);
    return m;
  }();
  return loaded;
}

/// The names a tensor may be given: the model's own, "position", others.
std::vector<std::string> knownNames(attn_model *m) {
  std::vector<std::string> names = {"position", "", "ids "};
  attn_tensor_info info;
  for (int32_t i = 0; i < attn_model_num_inputs(m); ++i)
    if (attn_model_input_info(m, i, &info) == ATTN_OK)
      names.push_back(info.name);
  for (int32_t i = 0; i < attn_model_num_outputs(m); ++i)
    if (attn_model_output_info(m, i, &info) == ATTN_OK)
      names.push_back(info.name);
  for (int32_t i = 0; i < attn_model_num_states(m); ++i)
    if (attn_model_state_info(m, i, &info) == ATTN_OK)
      names.push_back(info.name);
  return names;
}

/// The tensors of one call and the memory behind them.
struct Tensors {
  std::vector<attn_tensor> tensors;
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::unique_ptr<uint8_t[]>> data;
};

int64_t pickDim(FuzzedDataProvider &p) {
  static constexpr int64_t dims[] = {1,
                                     2,
                                     3,
                                     4,
                                     5,
                                     1,
                                     2,
                                     16,
                                     17,
                                     24,
                                     0,
                                     -1,
                                     1 << 20,
                                     std::numeric_limits<int32_t>::max(),
                                     std::numeric_limits<int64_t>::max(),
                                     std::numeric_limits<int64_t>::min()};
  return p.ConsumeBool() ? p.PickValueInArray(dims)
                         : p.ConsumeIntegralInRange<int64_t>(0, 20);
}

/// One tensor, with data of exactly the bytes its dims claim (when they are
/// valid and small), filled from the input.
void addTensor(FuzzedDataProvider &p, const std::vector<std::string> &known,
               Tensors &t) {
  std::string &name = t.names.emplace_back(
      p.ConsumeBool()
          ? known[p.ConsumeIntegralInRange<size_t>(0, known.size() - 1)]
          : p.ConsumeRandomLengthString(12));
  bool nullName = p.ConsumeIntegralInRange(0, 15) == 0;
  int32_t dtype = p.ConsumeIntegralInRange<int32_t>(-1, ATTN_NUM_DTYPES);
  int32_t rank = p.ConsumeIntegralInRange<int32_t>(-1, ATTN_MAX_RANK + 1);
  std::vector<int64_t> &dims = t.dims.emplace_back();
  for (int32_t k = 0; k < std::max(rank, 0); ++k)
    dims.push_back(pickDim(p));
  uint64_t bytes = 0;
  if (const attn_dtype_desc *d = attn_dtype_lookup(dtype)) {
    bytes = d->size;
    for (int64_t x : dims)
      if (x < 0 || __builtin_mul_overflow(bytes, uint64_t(x), &bytes))
        bytes = kMaxBytes + 1;
  }
  std::unique_ptr<uint8_t[]> &data = t.data.emplace_back();
  if (bytes && bytes <= kMaxBytes && p.ConsumeIntegralInRange(0, 15) != 0) {
    data.reset(new uint8_t[bytes]);
    // Integers (token ids, positions) mostly small, some past the
    // vocabulary or negative; floats as they come, NaN and Inf included.
    for (uint64_t i = 0; i < bytes; i += 4) {
      uint32_t bits = p.ConsumeIntegral<uint32_t>();
      if (dtype == ATTN_I32 && (bits >> 24) < 0xf0)
        bits %= 24;
      std::memcpy(&data[i], &bits, std::min<uint64_t>(4, bytes - i));
    }
  }
  t.tensors.push_back({nullName ? nullptr : name.c_str(), dtype, rank,
                       rank > 0 ? dims.data() : nullptr, data.get()});
}

/// Outputs: as the model computes their dims for these inputs (mostly), or
/// as the input says.
void addOutput(FuzzedDataProvider &p, attn_model *m, const Tensors &inputs,
               const std::vector<std::string> &known, Tensors &t) {
  attn_tensor_info info;
  int32_t index = int32_t(t.tensors.size());
  int64_t dims[ATTN_MAX_RANK];
  if (p.ConsumeIntegralInRange(0, 7) == 0 ||
      attn_model_output_info(m, index, &info) != ATTN_OK ||
      attn_model_output_dims(m, inputs.tensors.data(),
                             int32_t(inputs.tensors.size()), index, dims,
                             ATTN_MAX_RANK) != ATTN_OK) {
    addTensor(p, known, t);
    return;
  }
  uint64_t bytes = attn_dtype_lookup(info.dtype)->size;
  for (int32_t k = 0; k < info.rank; ++k)
    bytes *= uint64_t(dims[k]);
  t.names.emplace_back(info.name);
  t.dims.emplace_back(dims, dims + info.rank);
  t.data.emplace_back(bytes <= kMaxBytes ? new uint8_t[bytes] : nullptr);
  t.tensors.push_back({t.names.back().c_str(), info.dtype, info.rank,
                       t.dims.back().data(), t.data.back().get()});
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  attn_model *m = model();
  static const std::vector<std::string> known = knownNames(m);
  FuzzedDataProvider p(data, size);

  static const char *entries[] = {nullptr, "run", "prefill", "decode",
                                  "init",  "Run", ""};
  const char *entry = p.PickValueInArray(entries);
  Tensors inputs, states, outputs;
  // Reserved: the tensors point at names and dims kept beside them.
  for (Tensors *t : {&inputs, &states, &outputs}) {
    t->names.reserve(8);
    t->dims.reserve(8);
  }
  int numInputs = p.ConsumeIntegralInRange(0, 3);
  for (int i = 0; i < numInputs; ++i)
    addTensor(p, known, inputs);
  int numStates = p.ConsumeIntegralInRange(0, 3);
  for (int i = 0; i < numStates; ++i)
    addTensor(p, known, states);
  int numOutputs = p.ConsumeIntegralInRange(0, 2);
  for (int i = 0; i < numOutputs; ++i)
    addOutput(p, m, inputs, known, outputs);

  attn_run_options options{};
  options.size = sizeof options;
  options.entry = entry;
  options.states = states.tensors.empty() ? nullptr : states.tensors.data();
  options.num_states = int32_t(states.tensors.size());
  attn_status s = attn_model_run_with_options(
      m, &options, inputs.tensors.empty() ? nullptr : inputs.tensors.data(),
      numInputs, outputs.tensors.empty() ? nullptr : outputs.tensors.data(),
      numOutputs);
  if (s != ATTN_OK && !*attn_last_error())
    finding(kTarget, "a run was refused without a message");
  return 0;
}
