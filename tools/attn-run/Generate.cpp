//===- tools/attn-run/Generate.cpp - decoding with a KV cache -------------===//
#include "Generate.h"
#include "Device.h"
#include "Profile.h"

#include "attn/dtypes.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
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

/// One call of `entry` on `ids` [B, S] (row-major), at `positions` (one per
/// sequence, decode only), returning its logits [B, S, V].
std::vector<float> call(attn_model *model, const Shape &shape,
                        const char *entry, const std::vector<int32_t> &ids,
                        int64_t batch, const std::vector<int32_t> &positions,
                        const std::vector<attn_tensor> &states,
                        uint32_t deviceTensors) {
  int64_t length = int64_t(ids.size()) / batch;
  int64_t idDims[2] = {batch, length};
  std::vector<attn_tensor> inputs = {{shape.ids.c_str(), ATTN_I32, 2, idDims,
                                      const_cast<int32_t *>(ids.data())}};
  if (!positions.empty())
    inputs.push_back({"position", ATTN_I32, 1, &batch,
                      const_cast<int32_t *>(positions.data())});
  std::vector<float> logits(ids.size() * std::size_t(shape.vocab));
  int64_t outDims[3] = {batch, length, shape.vocab};
  attn_tensor out = {shape.logits.c_str(), ATTN_F32, 3, outDims, logits.data()};
  attn_run_options o{};
  o.size = sizeof o;
  o.entry = entry;
  if (std::string(entry) != "run") {
    o.states = states.data();
    o.num_states = int32_t(states.size());
    o.device_tensors = deviceTensors;
  }
  check(attn_model_run_with_options(model, &o, inputs.data(),
                                    int32_t(inputs.size()), &out, 1));
  return logits;
}

/// The model's KV caches for `batch` sequences of `capacity` rows, zeroed
/// (bytes of the state's dtype: f32, f16 / bf16, or i8 with f32 scales); on a
/// GPU in its memory, where prefill and decode update them in place: the caches
/// never cross to the host, except when a prompt is prefilled into its row
/// (toDevice) and when a sequence leaves the batch (keep).
class States {
public:
  States(attn_model *model, int64_t batch, int64_t capacity) : model(model) {
    onGpu = modelDevice(model) != ATTN_DEVICE_HOST;
    int32_t n = attn_model_num_states(model);
    dims.resize(n);
    host.resize(n);
    for (int32_t i = 0; i < n; ++i) {
      attn_tensor_info info;
      check(attn_model_state_info(model, i, &info));
      for (int32_t d = 0; d < info.rank; ++d)
        dims[i].push_back(info.dims[d].is_dynamic ? (d == 0 ? batch : capacity)
                                                  : info.dims[d].extent);
      elementSize.push_back(attn_dtype_lookup(info.dtype)->size);
      host[i].assign(bytes(i), 0);
      tensors.push_back(
          {info.name, info.dtype, info.rank, dims[i].data(), host[i].data()});
    }
  }

  /// Moves the caches into device memory (a GPU library only).
  void toDevice() {
    if (!onGpu || !device.empty())
      return;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      device.emplace_back(model, bytes(i));
      device.back().upload(host[i].data(), bytes(i));
      tensors[i].data = device.back().get();
      std::vector<unsigned char>().swap(host[i]);
    }
  }

  const std::vector<attn_tensor> &all() const { return tensors; }
  uint32_t deviceTensors() const {
    return device.empty() ? 0 : ATTN_ON_DEVICE_STATES;
  }
  std::size_t size() const { return tensors.size(); }

  /// Row `b` of each (host) state as a state set of batch 1.
  std::vector<attn_tensor> row(int64_t b, std::vector<int64_t> &rowDims) {
    std::vector<attn_tensor> view = tensors;
    rowDims.clear();
    for (std::size_t i = 0; i < view.size(); ++i)
      rowDims.insert(rowDims.end(), dims[i].begin(), dims[i].end());
    for (std::size_t i = 0, at = 0; i < view.size(); at += dims[i++].size()) {
      rowDims[at] = 1;
      view[i].dims = rowDims.data() + at;
      view[i].data = host[i].data() + b * rowSize(i) * elementSize[i];
    }
    return view;
  }

  /// Keeps the rows `keep` (increasing) of each state, in that order.
  void keep(const std::vector<int64_t> &rows) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      std::vector<unsigned char> scratch;
      unsigned char *data = host[i].data();
      if (!device.empty()) {
        scratch.resize(bytes(i));
        device[i].download(scratch.data(), bytes(i));
        data = scratch.data();
      }
      std::size_t n = rowSize(i) * elementSize[i];
      for (std::size_t r = 0; r < rows.size(); ++r)
        if (int64_t(r) != rows[r])
          std::memmove(data + r * n, data + rows[r] * n, n);
      dims[i][0] = int64_t(rows.size());
      if (!device.empty())
        device[i].upload(data, bytes(i));
    }
  }

private:
  std::size_t rowSize(std::size_t i) const {
    std::size_t n = 1;
    for (std::size_t d = 1; d < dims[i].size(); ++d)
      n *= std::size_t(dims[i][d]);
    return n;
  }
  std::size_t count(std::size_t i) const {
    return std::size_t(dims[i][0]) * rowSize(i);
  }
  std::size_t bytes(std::size_t i) const { return count(i) * elementSize[i]; }

  attn_model *model;
  bool onGpu = false;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::size_t> elementSize;
  std::vector<std::vector<unsigned char>> host;
  std::vector<attn::DeviceMemory> device;
  std::vector<attn_tensor> tensors;
};

/// Checks the ids against the vocabulary and the cache rows against the
/// model's bound; returns the capacity.
int64_t checkRequest(attn_model *model, const GenerateOptions &o,
                     int64_t vocab) {
  for (std::size_t b = 0; b < o.prompts.size(); ++b)
    for (std::size_t j = 0; j < o.prompts[b].size(); ++j)
      if (o.prompts[b][j] < 0 || o.prompts[b][j] >= vocab)
        throw GenerateError(fmt::format(
            "--prompt: token id {} ({}position {}) is outside the model's "
            "vocabulary [0, {}): give ids the model's tokenizer makes",
            o.prompts[b][j],
            o.prompts.size() > 1 ? fmt::format("prompt {}, ", b) : "", j,
            vocab));
  for (int64_t id : o.eos)
    if (id < 0 || id >= vocab)
      throw GenerateError(fmt::format("--eos {} is outside the model's "
                                      "vocabulary [0, {}): it would never "
                                      "end a sequence",
                                      id, vocab));
  int64_t longest = 0;
  for (const std::vector<int64_t> &p : o.prompts)
    longest = std::max(longest, int64_t(p.size()));
  if (o.capacity && o.capacity < longest)
    throw GenerateError(fmt::format(
        "a prompt of {} tokens does not fit in --cache {} (rows of the KV "
        "cache): give --cache {} or more (prompt + --generate N), or leave "
        "--cache out",
        longest, o.capacity, longest + o.tokens));
  int64_t capacity = o.capacity ? o.capacity : longest + o.tokens;
  attn_tensor_info info;
  check(attn_model_state_info(model, 0, &info));
  if (info.rank > 1 && info.dims[1].is_dynamic && info.dims[1].max > 0 &&
      capacity > info.dims[1].max) {
    if (o.capacity)
      throw GenerateError(fmt::format(
          "--cache {} is more rows than the model's KV caches hold ({} <= "
          "{}): give --cache {} or less",
          capacity, info.dims[1].symbol, info.dims[1].max, info.dims[1].max));
    throw GenerateError(fmt::format(
        "a prompt of {} tokens and --generate {} need {} rows of the KV "
        "cache, which holds at most {} ({}): shorten the prompt or N, or "
        "compile the model with a larger bound (attnc import --max-context)",
        longest, o.tokens, capacity, info.dims[1].max, info.dims[1].symbol));
  }
  return capacity;
}

std::vector<int32_t> narrow(const std::vector<int64_t> &ids) {
  return std::vector<int32_t>(ids.begin(), ids.end());
}

} // namespace

std::vector<int64_t> parsePrompt(const std::string &text,
                                 const std::string &option) {
  std::vector<int64_t> ids;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    std::string item = text.substr(at, end == text.npos ? text.npos : end - at);
    char *rest = nullptr;
    errno = 0;
    long long v = std::strtoll(item.c_str(), &rest, 10);
    if (item.empty() || *rest || v < 0 || errno)
      throw GenerateError(option + " takes token ids such as 1,2,3; '" + item +
                          "' is not one");
    ids.push_back(v);
    if (end == text.npos)
      break;
    at = end + 1;
  }
  if (ids.empty())
    throw GenerateError(option + " needs at least one token id");
  return ids;
}

std::vector<std::vector<int64_t>> readPrompts(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw GenerateError("--prompts: cannot read '" + path +
                        "': give a text file of token ids, one prompt a line");
  std::vector<std::vector<int64_t>> prompts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::replace_if(
        line.begin(), line.end(),
        [](char c) { return c == ' ' || c == '\t' || c == '\r'; }, ',');
    std::string joined;
    for (char c : line)
      if (c != ',' || (!joined.empty() && joined.back() != ','))
        joined += c;
    if (!joined.empty() && joined.back() == ',')
      joined.pop_back();
    if (joined.empty())
      continue;
    prompts.push_back(
        parsePrompt(joined, fmt::format("--prompts {}:{}", path, number)));
  }
  if (prompts.empty())
    throw GenerateError("--prompts: '" + path + "' holds no prompt");
  return prompts;
}

namespace {

/// The names of entry `entry`'s inputs but `position`, comma-separated.
std::string stepInputs(const attn_model *model, const char *entry) {
  std::string names;
  for (int32_t i = 0, n = attn_model_entry_num_inputs(model, entry); i < n;
       ++i) {
    attn_tensor_info info;
    check(attn_model_entry_input_info(model, entry, i, &info));
    if (std::string_view(info.name) != "position")
      names += (names.empty() ? "" : ", ") + std::string(info.name);
  }
  return names;
}

/// Generation feeds each step what it fed the prompt: an encoder-decoder's
/// decode takes other inputs (no encoder ids), which it does not handle.
void checkSameStepInputs(const attn_model *model) {
  std::string prefill = stepInputs(model, "prefill"),
              decode = stepInputs(model, "decode");
  if (prefill != decode)
    throw GenerateError("--generate needs a decode that takes the inputs of "
                        "its prefill, but decode takes (" +
                        decode + ") and prefill (" + prefill +
                        "), as an encoder-decoder's does: run its prefill "
                        "and decode entries through the C API");
}

/// The relative rounding of the coarsest KV cache: 0 for f32 caches,
/// 2^-11 for f16 and 2^-8 for bf16; an i8 cache's values are within half a
/// step, 1/254, of their head's largest.
double cacheRoundoff(const attn_model *model) {
  double roundoff = 0;
  for (int32_t i = 0; i < attn_model_num_states(model); ++i) {
    attn_tensor_info info;
    check(attn_model_state_info(model, i, &info));
    if (info.dtype == ATTN_F16)
      roundoff = std::max(roundoff, std::ldexp(1.0, -11));
    else if (info.dtype == ATTN_BF16)
      roundoff = std::max(roundoff, std::ldexp(1.0, -8));
    else if (info.dtype == ATTN_I8)
      roundoff = std::max(roundoff, 1.0 / 254);
  }
  return roundoff;
}

/// The relative rounding of the linears' inputs (attnc --precision): 0 at
/// f32, 2^-8 at bf16; at int8 a block's values are within half a step,
/// 1/254, of its largest.
double precisionRoundoff(const attn_model *model) {
  attn_model_info info{};
  info.size = sizeof info;
  check(attn_model_get_info(model, &info));
  std::string_view precision = info.precision;
  if (precision == "bf16")
    return std::ldexp(1.0, -8);
  if (precision == "int8")
    return 1.0 / 254;
  return 0;
}

} // namespace

int generate(attn_model *model, const GenerateOptions &o) {
  if (!attn_model_has_entry(model, "decode"))
    throw GenerateError("--generate needs a model with a KV cache (declare "
                        "its caches with 'state' and give them to its "
                        "attention as 'cache = P'); this one has only 'run'");
  checkSameStepInputs(model);
  Shape shape = modelShape(model);
  const int64_t V = shape.vocab;
  const int64_t capacity = checkRequest(model, o, V);
  const int64_t B = int64_t(o.prompts.size());
  bool ragged = false;
  for (const std::vector<int64_t> &p : o.prompts)
    ragged |= p.size() != o.prompts.front().size();

  States states(model, B, capacity);
  // Prompts of one length prefill together in the device's memory; ragged
  // ones each into its row of the caches on the host, which then move.
  if (!ragged)
    states.toDevice();
  const int32_t device = modelDevice(model);
  if (device != ATTN_DEVICE_HOST)
    fmt::print("states: {} KV caches in {} device memory\n", states.size(),
               deviceName(device));

  // Per prompt: its ids so far, its new tokens, the logits of every
  // position as prefill and decode gave them, and its last logits.
  std::vector<std::vector<int64_t>> sequence = o.prompts;
  std::vector<std::vector<int64_t>> generated(B);
  std::vector<std::vector<float>> seen(B);
  std::vector<std::vector<float>> last(B);
  int64_t prompted = 0;
  auto start = std::chrono::steady_clock::now();
  if (!ragged) {
    std::vector<int32_t> ids;
    for (const std::vector<int64_t> &p : o.prompts)
      ids.insert(ids.end(), p.begin(), p.end());
    std::vector<float> logits = call(model, shape, "prefill", ids, B, {},
                                     states.all(), states.deviceTensors());
    std::size_t perRow = logits.size() / std::size_t(B);
    for (int64_t b = 0; b < B; ++b)
      seen[b].assign(logits.begin() + b * perRow,
                     logits.begin() + (b + 1) * perRow);
  } else {
    std::vector<int64_t> rowDims;
    for (int64_t b = 0; b < B; ++b)
      seen[b] = call(model, shape, "prefill", narrow(o.prompts[b]), 1, {},
                     states.row(b, rowDims), 0);
    states.toDevice();
  }
  double prefillMs = msSince(start);
  for (int64_t b = 0; b < B; ++b) {
    last[b].assign(seen[b].end() - V, seen[b].end());
    prompted += int64_t(o.prompts[b].size());
  }

  TokenChooser chooser(o.sampling, o.seed);
  std::vector<int64_t> active(B); // the prompt of each row of the batch
  for (int64_t b = 0; b < B; ++b)
    active[b] = b;
  double decodeMs = 0;
  int steps = 0;
  int64_t decoded = 0;
  std::optional<attnrun::Profile> profile;
  if (o.profile)
    profile.emplace(model);
  for (int t = 0; t < o.tokens; ++t) {
    std::vector<int64_t> keep; // rows whose sequence goes on
    for (std::size_t r = 0; r < active.size(); ++r) {
      int64_t b = active[r];
      int64_t next = chooser.next(last[b].data(), V, sequence[b]);
      sequence[b].push_back(next);
      generated[b].push_back(next);
      if (std::find(o.eos.begin(), o.eos.end(), next) == o.eos.end())
        keep.push_back(int64_t(r));
    }
    if (keep.empty() || t + 1 == o.tokens)
      break;
    if (keep.size() < active.size()) {
      states.keep(keep);
      std::vector<int64_t> still;
      for (int64_t r : keep)
        still.push_back(active[r]);
      active = still;
    }
    std::vector<int32_t> ids, positions;
    for (int64_t b : active) {
      ids.push_back(int32_t(sequence[b].back()));
      positions.push_back(int32_t(sequence[b].size() - 1));
    }
    start = std::chrono::steady_clock::now();
    std::vector<float> logits =
        call(model, shape, "decode", ids, int64_t(active.size()), positions,
             states.all(), states.deviceTensors());
    decodeMs += msSince(start);
    ++steps;
    decoded += int64_t(active.size());
    for (std::size_t r = 0; r < active.size(); ++r) {
      int64_t b = active[r];
      last[b].assign(logits.begin() + r * V, logits.begin() + (r + 1) * V);
      seen[b].insert(seen[b].end(), last[b].begin(), last[b].end());
    }
  }

  for (int64_t b = 0; b < B; ++b) {
    fmt::print("tokens:");
    for (int64_t id : generated[b])
      fmt::print(" {}", id);
    fmt::print("\n");
  }
  if (B == 1)
    fmt::print("prefill: {} tokens in {:.3f} ms ({:.1f} tokens/s)\n", prompted,
               prefillMs, prefillMs > 0 ? prompted * 1e3 / prefillMs : 0.0);
  else
    fmt::print("prefill: {} tokens of {} prompts{} in {:.3f} ms ({:.1f} "
               "tokens/s)\n",
               prompted, B, ragged ? ", one by one" : "", prefillMs,
               prefillMs > 0 ? prompted * 1e3 / prefillMs : 0.0);
  if (steps > 0 && B == 1)
    fmt::print("decode: {} tokens in {:.3f} ms: {:.3f} ms/token ({:.1f} "
               "tokens/s)\n",
               steps, decodeMs, decodeMs / steps,
               decodeMs > 0 ? steps * 1e3 / decodeMs : 0.0);
  else if (steps > 0)
    fmt::print("decode: {} tokens in {} steps of up to {} sequences in "
               "{:.3f} ms: {:.3f} ms/step ({:.1f} tokens/s)\n",
               decoded, steps, B, decodeMs, decodeMs / steps,
               decodeMs > 0 ? decoded * 1e3 / decodeMs : 0.0);
  if (profile && steps > 0)
    profile->print(decodeMs / steps, 0);
  profile.reset();
  if (!o.check)
    return 0;

  // Each sequence alone: one forward pass over every position that was
  // prefilled or decoded, in a batch of 1.
  bool ok = true;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> all = narrow(sequence[b]);
    all.pop_back();
    std::vector<float> full =
        call(model, shape, "run", all, 1, {}, states.all(), 0);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < full.size(); ++i) {
      worst = std::max(worst, double(std::fabs(full[i] - seen[b][i])));
      scale = std::max(scale, double(std::fabs(full[i])));
    }
    // Both sides compute in f32; they differ in the order of the
    // attention's sums (key tiles of the cache against those of one pass):
    // rounding only. An f16, bf16 or i8 cache also rounds the keys and
    // values the decodes read, by up to its unit roundoff. At bf16 or int8
    // precision that difference can put a linear's input on the other side
    // of a rounding step, which moves its products by up to that step.
    double roundoff = std::max(cacheRoundoff(model), precisionRoundoff(model));
    double tolerance = std::max(1e-4, 4 * roundoff) * std::max(1.0, scale);
    bool close = worst <= tolerance;
    fmt::print("check: {}prefill + {} decode steps against one run over {} "
               "tokens: max abs difference {:.3g} (logits up to {:.3g}, "
               "tolerance {:.3g}): {}\n",
               B > 1 ? fmt::format("sequence {}: ", b) : "",
               generated[b].size() - 1, all.size(), worst, scale, tolerance,
               close ? "ok" : "FAILED");
    ok &= close;
    if (!o.sampling.greedy())
      continue;
    // Greedy: the run's logits choose the same tokens.
    const std::size_t promptLength = o.prompts[b].size();
    for (std::size_t j = 0; j < generated[b].size(); ++j) {
      std::vector<int64_t> before(sequence[b].begin(),
                                  sequence[b].begin() + promptLength + j);
      const float *row = full.data() + (promptLength - 1 + j) * std::size_t(V);
      int64_t alone = chooser.next(row, V, before);
      if (alone == generated[b][j])
        continue;
      // The two sides' logits differ by up to `worst`, so where the run's
      // two best are within twice that (a near tie, common at int8 and bf16
      // precision) either token is right; further apart, the decode did not
      // take its own logits' best.
      GreedyTie tie =
          greedyTie(row, V, before, o.sampling, alone, generated[b][j], worst);
      std::string who = B > 1 ? fmt::format("sequence {}: ", b) : "";
      if (tie.isTie()) {
        fmt::print("check: {}token {} is {} where one run alone chooses {}, "
                   "a near tie (the run's logits {:.3g} apart, within twice "
                   "the max difference): ok\n",
                   who, j, generated[b][j], alone, tie.gap);
        continue;
      }
      fmt::print("check: {}token {} is {}, but one run alone chooses {} "
                 "(its logits {:.3g} apart, more than {:.3g}): FAILED\n",
                 who, j, generated[b][j], alone, tie.gap, tie.allowed);
      ok = false;
      break;
    }
  }
  return ok ? 0 : 1;
}

} // namespace attn::run
