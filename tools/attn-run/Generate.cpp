//===- tools/attn-run/Generate.cpp - greedy decoding with a KV cache ------===//
#include "Generate.h"
#include "Device.h"
#include "Profile.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace attn::run {
namespace {

void check(attn_status status) {
  if (status != ATTN_OK)
    throw GenerateError(attn_last_error());
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// The model's ids input (i32 [B, S]) and logits output (f32 [B, S, V]).
struct Shape {
  std::string ids, logits;
  int64_t vocab = 0;
};

Shape modelShape(const attn_model *model) {
  Shape s;
  attn_tensor_info info;
  if (attn_model_num_inputs(model) != 1 || attn_model_num_outputs(model) < 1)
    throw GenerateError("--generate needs a model with one input (token ids) "
                        "and logits as its first output");
  check(attn_model_input_info(model, 0, &info));
  if (info.dtype != ATTN_I32 || info.rank != 2)
    throw GenerateError(std::string("--generate needs token ids i32[B, S] as "
                                    "the input; '") +
                        info.name + "' is not");
  s.ids = info.name;
  check(attn_model_output_info(model, 0, &info));
  if (info.dtype != ATTN_F32 || info.rank != 3 || info.dims[2].is_dynamic)
    throw GenerateError(std::string("--generate needs logits f32[B, S, V] as "
                                    "the first output; '") +
                        info.name + "' is not");
  s.logits = info.name;
  s.vocab = info.dims[2].extent;
  return s;
}

/// One call of `entry` on `ids` (batch 1), returning its logits.
std::vector<float> call(attn_model *model, const Shape &shape,
                        const char *entry, const std::vector<int32_t> &ids,
                        const int32_t *position,
                        std::vector<attn_tensor> &states,
                        uint32_t deviceTensors) {
  int64_t idDims[2] = {1, int64_t(ids.size())}, one = 1;
  std::vector<attn_tensor> inputs = {{shape.ids.c_str(), ATTN_I32, 2, idDims,
                                      const_cast<int32_t *>(ids.data())}};
  if (position)
    inputs.push_back(
        {"position", ATTN_I32, 1, &one, const_cast<int32_t *>(position)});
  std::vector<float> logits(ids.size() * std::size_t(shape.vocab));
  int64_t outDims[3] = {1, int64_t(ids.size()), shape.vocab};
  attn_tensor out = {shape.logits.c_str(), ATTN_F32, 3, outDims, logits.data()};
  attn_run_options o{};
  o.size = sizeof o;
  o.entry = entry;
  o.states = states.data();
  o.num_states = int32_t(states.size());
  o.device_tensors = deviceTensors;
  if (std::string(entry) == "run") {
    o.num_states = 0;
    o.device_tensors = 0;
  }
  check(attn_model_run_with_options(model, &o, inputs.data(),
                                    int32_t(inputs.size()), &out, 1));
  return logits;
}

int32_t argmax(const float *row, int64_t n) {
  return int32_t(std::max_element(row, row + n) - row);
}

} // namespace

std::vector<int32_t> parsePrompt(const std::string &text) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    std::string item = text.substr(at, end == text.npos ? text.npos : end - at);
    char *rest = nullptr;
    long v = std::strtol(item.c_str(), &rest, 10);
    if (item.empty() || *rest || v < 0 || v > INT32_MAX)
      throw GenerateError("--prompt takes token ids such as 1,2,3; '" + item +
                          "' is not one");
    ids.push_back(int32_t(v));
    if (end == text.npos)
      break;
    at = end + 1;
  }
  if (ids.empty())
    throw GenerateError("--prompt needs at least one token id");
  return ids;
}

int generate(attn_model *model, const GenerateOptions &o) {
  if (!attn_model_has_entry(model, "decode"))
    throw GenerateError("--generate needs a model with a KV cache (declare "
                        "its caches with 'state' and give them to its "
                        "attention as 'cache = P'); this one has only 'run'");
  Shape shape = modelShape(model);
  int64_t capacity =
      o.capacity ? o.capacity : int64_t(o.prompt.size()) + o.tokens;
  // The states, zeroed: [1, capacity, F] each (batch 1). On a GPU they live
  // in its memory, where prefill and decode update them in place: the
  // caches never cross to the host.
  int32_t n = attn_model_num_states(model);
  const int32_t device = modelDevice(model);
  std::vector<attn::DeviceMemory> onDevice;
  std::vector<std::vector<float>> memory(n);
  std::vector<std::vector<int64_t>> dims(n);
  std::vector<attn_tensor> states;
  for (int32_t i = 0; i < n; ++i) {
    attn_tensor_info info;
    check(attn_model_state_info(model, i, &info));
    std::size_t count = 1;
    for (int32_t d = 0; d < info.rank; ++d) {
      int64_t extent = info.dims[d].is_dynamic ? (d == 0 ? 1 : capacity)
                                               : info.dims[d].extent;
      dims[i].push_back(extent);
      count *= std::size_t(extent);
    }
    memory[i].assign(count, 0.0f);
    void *data = memory[i].data();
    if (device != ATTN_DEVICE_HOST) {
      onDevice.emplace_back(model, count * sizeof(float));
      onDevice.back().upload(memory[i].data(), count * sizeof(float));
      data = onDevice.back().get();
      std::vector<float>().swap(memory[i]);
    }
    states.push_back({info.name, info.dtype, info.rank, dims[i].data(), data});
  }
  const uint32_t deviceTensors =
      device != ATTN_DEVICE_HOST ? ATTN_ON_DEVICE_STATES : 0;
  if (device != ATTN_DEVICE_HOST)
    fmt::print("states: {} KV caches in {} device memory\n", n,
               deviceName(device));

  std::vector<int32_t> sequence = o.prompt;
  // The logits of every position, as prefill and decode gave them.
  std::vector<float> seen;
  auto start = std::chrono::steady_clock::now();
  std::vector<float> logits =
      call(model, shape, "prefill", o.prompt, nullptr, states, deviceTensors);
  double prefillMs = msSince(start);
  seen = logits;
  double decodeMs = 0;
  std::optional<attnrun::Profile> profile;
  if (o.profile)
    profile.emplace(model);
  for (int t = 0; t < o.tokens; ++t) {
    int32_t next =
        argmax(logits.data() + logits.size() - shape.vocab, shape.vocab);
    sequence.push_back(next);
    if (t + 1 == o.tokens)
      break;
    int32_t position = int32_t(sequence.size() - 1);
    start = std::chrono::steady_clock::now();
    logits =
        call(model, shape, "decode", {next}, &position, states, deviceTensors);
    decodeMs += msSince(start);
    seen.insert(seen.end(), logits.begin(), logits.end());
  }

  fmt::print("tokens:");
  for (size_t i = o.prompt.size(); i < sequence.size(); ++i)
    fmt::print(" {}", sequence[i]);
  fmt::print("\n");
  int decodes = std::max(o.tokens - 1, 0);
  fmt::print("prefill: {} tokens in {:.3f} ms ({:.1f} tokens/s)\n",
             o.prompt.size(), prefillMs,
             prefillMs > 0 ? o.prompt.size() * 1e3 / prefillMs : 0.0);
  if (decodes > 0)
    fmt::print("decode: {} tokens in {:.3f} ms: {:.3f} ms/token ({:.1f} "
               "tokens/s)\n",
               decodes, decodeMs, decodeMs / decodes,
               decodeMs > 0 ? decodes * 1e3 / decodeMs : 0.0);
  if (profile && decodes > 0)
    profile->print(decodeMs / decodes, 0);
  profile.reset();
  if (!o.check)
    return 0;

  // One forward pass over every position that was prefilled or decoded.
  std::vector<int32_t> all(sequence.begin(), sequence.end() - 1);
  std::vector<float> full = call(model, shape, "run", all, nullptr, states, 0);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    worst = std::max(worst, double(std::fabs(full[i] - seen[i])));
    scale = std::max(scale, double(std::fabs(full[i])));
  }
  // Both sides compute in f32; they differ in the order of the attention's
  // sums (key tiles of the cache against those of one pass): rounding only.
  double tolerance = 1e-4 * std::max(1.0, scale);
  fmt::print("check: prefill + {} decode steps against one run over {} "
             "tokens: max abs difference {:.3g} (logits up to {:.3g}, "
             "tolerance {:.3g}): {}\n",
             decodes, all.size(), worst, scale, tolerance,
             worst <= tolerance ? "ok" : "FAILED");
  return worst <= tolerance ? 0 : 1;
}

} // namespace attn::run
