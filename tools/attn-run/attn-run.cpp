//===- tools/attn-run/attn-run.cpp - Run a compiled model -----------------===//
//
// attn-run lib.so [--weights w.safetensors]
//         --inputs in.safetensors | --random B=1,S=128
//         [--outputs out.safetensors] [--threads N] [--bench N] [--profile]
//         [--info] [--heatmap map.png [--heatmap-output NAME] [--batch N]
//          [--head N] [--tokens FILE]] [--device N] [--device-memory]
//
// Loads a model (reading its weights from --weights when it was built without
// them), feeds it its inputs by name from a safetensors file (or random ones),
// sizes the outputs with the runtime, runs, and writes the outputs by name or
// prints a summary of them and of the memory its temporaries take. The
// simplest way to run a model without writing C, and to time it. --info
// alone loads the model only to describe it, so needs no weights file.
// The command line is CLI11's (--opt value or --opt=value; --help); an
// unknown option is answered as attnc answers one
// (tools/common/OptionSuggest.h).
//
//===----------------------------------------------------------------------===//
#include "Device.h"
#include "Profile.h"
#include "attn/attn.h"
#include "attn/dtypes.h"
#include "attn/safetensors.h"

#include "Generate.h"
#include "Heatmap.h"

#include "tools/common/OptionSuggest.h"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace st = attn::safetensors;
using attn::run::HeatmapError;

namespace {

/// A failure that ends the tool with `attn-run: error: <message>`.
struct Failure {
  std::string message;
};

struct Options {
  std::string library;
  std::string weights, inputs, outputs;
  /// --random: symbolic dim -> extent, and "seed".
  std::map<std::string, int64_t> random;
  int threads = -1;
  int bench = 0;
  bool profile = false;
  bool info = false;
  bool checkWeights = false; ///< --check-weights
  int device = -1;           ///< --device: the GPU's ordinal
  bool deviceMemory = false; ///< --device-memory
  attn::run::HeatmapOptions heatmap;
  attn::run::GenerateOptions generate;
};

/// "B=1,S=128,seed=3" as a map; every value a non-negative integer.
std::map<std::string, int64_t> parseBindings(const std::string &text) {
  std::map<std::string, int64_t> bound;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end - start);
    size_t eq = item.find('=');
    char *rest = nullptr;
    long long v = eq == std::string::npos
                      ? -1
                      : std::strtoll(item.c_str() + eq + 1, &rest, 10);
    if (eq == std::string::npos || eq == 0 || !rest || *rest ||
        eq + 1 == item.size() || v < 0 || v > (1ll << 31))
      throw Failure{"--random wants NAME=VALUE pairs such as B=1,S=128, got '" +
                    item + "'"};
    bound[item.substr(0, eq)] = v;
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return bound;
}

/// An integer option's check: at least `min` (and at most a million),
/// "wants an integer >= 1, got '0'" otherwise.
CLI::Validator countAtLeast(int min) {
  return CLI::Validator(
      [min](std::string &text) -> std::string {
        char *end = nullptr;
        long v = std::strtol(text.c_str(), &end, 10);
        if (text.empty() || *end || v < min || v > 1000000)
          return "wants an integer >= " + std::to_string(min) + ", got '" +
                 text + "'";
        return "";
      },
      "");
}

/// The message of a command line CLI11 refused: its own, except for the
/// value a last option lacks ("--weights: 1 required FILE missing").
std::string commandLineError(const CLI::App &app, const CLI::ParseError &e,
                             int argc, char **argv) {
  const CLI::Option *last =
      argc > 1 ? app.get_option_no_throw(argv[argc - 1]) : nullptr;
  if (dynamic_cast<const CLI::ArgumentMismatch *>(&e) && last &&
      last->get_type_size() > 0)
    return fmt::format("{0} needs a value: {0} {1}", argv[argc - 1],
                       last->get_type_name());
  return e.what();
}

const char *const Description =
    "attn-run: run a model library that attnc built\n"
    "  attn-run lib.so [--weights w.safetensors] --inputs in.safetensors\n"
    "  attn-run lib.so [--weights w.safetensors] --random B=1,S=128 "
    "[--bench N]\n"
    "  attn-run lib.so --info\n"
    "  attn-run lib.so --weights w.safetensors --generate N --prompt IDS\n"
    "           [--prompt IDS ...] [--temperature T --top-k K --top-p P]\n";

const char *const Footer =
    "With --inputs or --random, the summary (and --info, --bench and\n"
    "--profile) also gives the workspace: the arena the temporaries take,\n"
    "planned by lifetime; the largest set of them alive at once; and their\n"
    "sum (one buffer each).\n"
    "Options take their value as the next argument or after '=' "
    "(--threads 2,\n"
    "--threads=2); flags take =true or =false.\n";

Options parseArgs(int argc, char **argv) {
  Options o;
  CLI::App app(Description, "attn-run");
  app.footer(Footer);
  app.get_formatter()->column_width(24);
  // As before CLI11: the last of a repeated option counts.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // Unknown options are answered below, with a suggestion when one is close.
  app.allow_extras();
  app.set_version_flag("--version",
                       fmt::format("attn-run ({}), model ABI {}",
                                   ATTNC_VERSION_STRING,
                                   attn_runtime_abi_version()),
                       "Print the version and the model ABI this runtime "
                       "reads");
  app.add_option("lib.so", o.library, "The model library attnc built")
      ->type_name("");

  const char *run = "Running";
  std::string random;
  app.add_option("--weights", o.weights,
                 "Read the model's weights from this safetensors file\n"
                 "(or a sharded checkpoint's model.safetensors.index.json)\n"
                 "at load (a model built without attnc --weights)")
      ->type_name("FILE")
      ->group(run);
  app.add_option("--inputs", o.inputs,
                 "Read the model's inputs by name from this\n"
                 "safetensors file")
      ->type_name("FILE")
      ->group(run);
  CLI::Option *randomOption =
      app.add_option("--random", random,
                     "Make the inputs: floats ~ N(0, 1), i32 all 0 (give\n"
                     "ids and lengths with --inputs); DIMS binds each\n"
                     "symbolic dim, e.g. B=1,S=128, and seed=N picks\n"
                     "another draw")
          ->type_name("DIMS")
          ->group(run);
  app.add_flag("--check-weights", o.checkWeights,
               "Scan the --weights file's tensors the model reads for\n"
               "NaN and Inf at load; the first one fails the load,\n"
               "named with its index")
      ->group(run);
  app.add_option("--outputs", o.outputs,
                 "Write the model's outputs by name to this file\n"
                 "(atomically); without it a summary of each output\n"
                 "is printed")
      ->type_name("FILE")
      ->group(run);
  app.add_option("--threads", o.threads,
                 "Size the model's thread pool (0: its default)")
      ->type_name("N")
      ->check(countAtLeast(0))
      ->group(run);
  app.add_option("--bench", o.bench,
                 "Run N more times after one warm-up; print median\n"
                 "and min and tokens/s (tokens: the first input's\n"
                 "dynamic dims, B x S)")
      ->type_name("N")
      ->check(countAtLeast(1))
      ->group(run);
  app.add_flag("--profile", o.profile,
               "Time every kernel of the --bench runs (or of one\n"
               "run) and print ms and % per kind of kernel")
      ->group(run);
  app.add_flag("--info", o.info,
               "Print the model's inputs and outputs; alone, without\n"
               "--weights, the model is loaded only to be described")
      ->group(run);
  app.add_option("--device", o.device,
                 "Run on GPU N (0: the first) of the library's API; the\n"
                 "library's target decides between the host and a GPU")
      ->type_name("N")
      ->check(countAtLeast(0))
      ->group(run);
  app.add_flag("--device-memory", o.deviceMemory,
               "Keep the inputs and outputs in the GPU's memory, so\n"
               "the runs copy nothing and --bench times the kernels\n"
               "alone (--generate always keeps its KV caches there)")
      ->group(run);

  const char *draw = "Heat maps";
  app.add_option("--heatmap", o.heatmap.path,
                 "Draw attention weights [B, H, S, T] (an output) as\n"
                 "a PNG: queries down, keys across, white to dark\n"
                 "blue scaled to the largest weight, exactly 0\n"
                 "(masked) white")
      ->type_name("FILE.png")
      ->group(draw);
  std::vector<CLI::Option *> heatmapDetails = {
      app.add_option("--heatmap-output", o.heatmap.output,
                     "The output to draw (default: the only rank-4\n"
                     "output, or the rank-4 one named weights)")
          ->type_name("NAME")
          ->group(draw),
      app.add_option("--batch", o.heatmap.batch,
                     "The batch entry to draw (default 0)")
          ->type_name("N")
          ->check(countAtLeast(0))
          ->group(draw),
      app.add_option("--head", o.heatmap.head, "The head to draw (default 0)")
          ->type_name("N")
          ->check(countAtLeast(0))
          ->group(draw),
      app.add_option("--tokens", o.heatmap.tokens,
                     "Label the keys (and the queries, when S = T) with the\n"
                     "tokens of this text file, one a line; else numbers")
          ->type_name("FILE")
          ->group(draw)};

  const char *decode = "Decoding";
  std::vector<std::string> prompts;
  std::string promptsFile;
  app.add_option("--generate", o.generate.tokens,
                 "Decode N tokens after each --prompt with a model\n"
                 "that has a KV cache: prefill, then one decode per\n"
                 "token for all prompts as one batch; prints one\n"
                 "line of tokens per prompt and tokens/s of prefill\n"
                 "and decode")
      ->type_name("N")
      ->check(countAtLeast(1))
      ->group(decode);
  CLI::Option *promptOption =
      app.add_option("--prompt", prompts,
                     "A prompt's ids, e.g. 1,2,3; repeat it for a batch\n"
                     "of prompts (of any lengths)")
          ->type_name("IDS")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->group(decode);
  CLI::Option *promptsOption =
      app.add_option("--prompts", promptsFile,
                     "Read the prompts from a text file: one a line, ids\n"
                     "separated by commas or spaces")
          ->type_name("FILE")
          ->group(decode);
  app.add_option("--cache", o.generate.capacity,
                 "The KV cache's capacity (default: the longest\n"
                 "prompt + N)")
      ->type_name("ROWS")
      ->check(countAtLeast(1))
      ->group(decode);
  app.add_flag("--check", o.generate.check,
               "Also run each whole sequence alone once and compare\n"
               "its logits with those of prefill and decode (and,\n"
               "greedy, the tokens they choose)")
      ->group(decode);
  std::vector<CLI::Option *> samplingOptions = {
      app.add_option("--temperature", o.generate.sampling.temperature,
                     "Sample at this temperature (default 0: greedy, the\n"
                     "largest logit); transformers' rules and order:\n"
                     "repetition penalty, temperature, top-k, top-p")
          ->type_name("T")
          ->group(decode),
      app.add_option("--top-k", o.generate.sampling.topK,
                     "Sample from the K largest logits only (default 0:\n"
                     "all); needs --temperature")
          ->type_name("K")
          ->group(decode),
      app.add_option("--top-p", o.generate.sampling.topP,
                     "Sample from the most likely tokens whose\n"
                     "probabilities add up to P (default 1: all); needs\n"
                     "--temperature")
          ->type_name("P")
          ->group(decode),
      app.add_option("--repetition-penalty",
                     o.generate.sampling.repetitionPenalty,
                     "Divide the positive logits of the ids a sequence\n"
                     "has seen by R, multiply the negative ones (default\n"
                     "1: none); greedy too")
          ->type_name("R")
          ->group(decode),
      app.add_option("--seed", o.generate.seed,
                     "The draws' seed (default 0): the same seed draws\n"
                     "the same tokens, though not torch's")
          ->type_name("N")
          ->group(decode)};
  CLI::Option *eosOption =
      app.add_option("--eos", o.generate.eos,
                     "A token id that ends a sequence (kept in its\n"
                     "tokens); repeat it for several")
          ->type_name("ID")
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->group(decode);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0) // --help, --version
      std::exit(app.exit(e));
    throw Failure{commandLineError(app, e, argc, argv)};
  }
  std::vector<std::string> extra = app.remaining();
  for (const std::string &arg : extra)
    if (arg.size() > 1 && arg[0] == '-') {
      std::vector<std::string> names;
      for (const CLI::Option *option : app.get_options())
        for (const std::string &name : option->get_lnames())
          names.push_back(name);
      std::string typed = arg.substr(arg.find_first_not_of('-'));
      std::string closest =
          attnc::tools::closestOption(typed.substr(0, typed.find('=')), names);
      throw Failure{attnc::tools::unknownOptionMessage(
          "attn-run", arg, closest.empty() ? "" : "--" + closest)};
    }
  if (!extra.empty())
    throw Failure{"more than one model library given ('" + o.library +
                  "' and '" + extra.front() + "')"};
  if (o.library.empty())
    throw Failure{"no model library given (see attn-run --help)"};
  if (*randomOption)
    o.random = parseBindings(random);
  if (*promptOption && *promptsOption)
    throw Failure{"give the prompts with --prompt IDS or --prompts FILE, "
                  "not both"};
  for (const std::string &text : prompts)
    o.generate.prompts.push_back(attn::run::parsePrompt(text));
  if (*promptsOption)
    o.generate.prompts = attn::run::readPrompts(promptsFile);
  bool heatmapDetail = std::any_of(heatmapDetails.begin(), heatmapDetails.end(),
                                   [](CLI::Option *opt) { return bool(*opt); });
  bool sampling = std::any_of(samplingOptions.begin(), samplingOptions.end(),
                              [](CLI::Option *opt) { return bool(*opt); });
  if (o.generate.tokens) {
    if (o.generate.prompts.empty())
      throw Failure{"--generate needs --prompt IDS (e.g. --prompt 1,2,3) or "
                    "--prompts FILE"};
    if (!o.inputs.empty() || !o.random.empty())
      throw Failure{"--generate makes its own inputs: drop --inputs/--random"};
    if (o.deviceMemory)
      throw Failure{"--generate keeps its KV caches in device memory on a "
                    "GPU already: drop --device-memory"};
    try {
      o.generate.sampling.validate();
    } catch (const attn::run::SamplingError &e) {
      throw Failure{e.what()};
    }
    return o;
  }
  if (!o.generate.prompts.empty() || o.generate.capacity || o.generate.check ||
      sampling || *eosOption)
    throw Failure{"--prompt, --prompts, --cache, --check, --temperature, "
                  "--top-k, --top-p, --repetition-penalty, --seed and --eos "
                  "go with --generate N"};
  if (o.checkWeights && o.weights.empty())
    throw Failure{"--check-weights scans the weights a model reads at load: "
                  "give them with --weights FILE (a library built with attnc "
                  "--weights embeds them; check the file before embedding "
                  "it)"};
  bool running = !o.inputs.empty() || !o.random.empty();
  if (!o.inputs.empty() && !o.random.empty())
    throw Failure{"give --inputs or --random, not both"};
  if (!running && !o.info && !o.checkWeights)
    throw Failure{"nothing to do: give --inputs or --random (to run), "
                  "--info or --check-weights (see attn-run --help)"};
  if (!running && (!o.outputs.empty() || o.bench || o.profile ||
                   !o.heatmap.path.empty() || o.deviceMemory))
    throw Failure{"--outputs, --bench, --profile, --heatmap and "
                  "--device-memory need --inputs or --random"};
  if (heatmapDetail && o.heatmap.path.empty())
    throw Failure{"--heatmap-output, --batch, --head and --tokens choose what "
                  "--heatmap draws: add --heatmap FILE.png"};
  return o;
}

void check(attn_status status) {
  if (status != ATTN_OK)
    throw Failure{attn_last_error()};
}

const char *dtypeName(int32_t dtype) {
  const attn_dtype_desc *row = attn_dtype_lookup(dtype);
  return row ? row->name : "?";
}

/// Bytes per element of a model dtype (the runtime checked the code).
std::size_t itemSize(int32_t dtype) {
  const attn_dtype_desc *row = attn_dtype_lookup(dtype);
  return row ? row->size : 4;
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return uint16_t((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16); // to nearest
}

float f16ToFloat(uint16_t h) {
  int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  float v = exponent == 0 ? std::ldexp(float(mantissa), -24)
            : exponent == 31
                ? (mantissa ? NAN : INFINITY)
                : std::ldexp(float(mantissa | 0x400), exponent - 25);
  return (h & 0x8000) ? -v : v;
}

/// For values in f16's range (random inputs): nearest, ties away from zero.
uint16_t floatToF16(float f) {
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (a >= 65520.0f)
    return sign | 0x7C00;
  if (a < std::ldexp(1.0f, -14)) // subnormal
    return sign | uint16_t(std::lround(std::ldexp(a, 24)));
  int exponent;
  float m = std::frexp(a, &exponent); // a = m * 2^exponent, m in [0.5, 1)
  long bits = std::lround(std::ldexp(m, 11)); // 11 significant bits
  if (bits == 2048) {
    bits = 1024;
    ++exponent;
  }
  return sign | uint16_t((exponent + 14) << 10) | uint16_t(bits & 0x3FF);
}

/// Element `i` of `data` as a double.
double element(const void *data, int32_t dtype, std::size_t i) {
  switch (dtype) {
  case ATTN_I32:
    return static_cast<const int32_t *>(data)[i];
  case ATTN_BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(data)[i]);
  case ATTN_F16:
    return f16ToFloat(static_cast<const uint16_t *>(data)[i]);
  default:
    return static_cast<const float *>(data)[i];
  }
}

std::string describe(const attn_tensor_info &t) {
  std::string s = std::string(t.name) + ": " + dtypeName(t.dtype) + " [";
  for (int32_t i = 0; i < t.rank; ++i) {
    const attn_dim_info &d = t.dims[i];
    s += i ? ", " : "";
    if (!d.is_dynamic)
      s += std::to_string(d.extent);
    else if (d.max > 0)
      s += std::string(d.symbol) + " <= " + std::to_string(d.max);
    else
      s += d.symbol;
  }
  return s + "]";
}

void printInfo(const attn_model *model) {
  attn_model_info info{};
  info.size = sizeof info;
  check(attn_model_get_info(model, &info));
  std::printf("model %s (built by %s for %s, precision %s)\n", info.name,
              info.compiler_version, info.target, info.precision);
  for (bool inputs : {true, false}) {
    std::printf("%s:\n", inputs ? "inputs" : "outputs");
    int32_t n =
        inputs ? attn_model_num_inputs(model) : attn_model_num_outputs(model);
    for (int32_t i = 0; i < n; ++i) {
      attn_tensor_info t;
      check(inputs ? attn_model_input_info(model, i, &t)
                   : attn_model_output_info(model, i, &t));
      std::printf("  %s\n", describe(t).c_str());
    }
  }
  // A decoder's KV caches, which "prefill" and "decode" take.
  if (int32_t states = attn_model_num_states(model); states > 0) {
    std::printf("states (the caller's KV caches; entries run, prefill, and "
                "decode, which also takes position i32[B]):\n");
    for (int32_t i = 0; i < states; ++i) {
      attn_tensor_info t;
      check(attn_model_state_info(model, i, &t));
      std::printf("  %s\n", describe(t).c_str());
    }
  }
  // Entries that take other inputs than run's (and a decode's position):
  // an encoder-decoder's decode reads no encoder input.
  auto inputNames = [&](const char *entry) {
    std::vector<std::string> names;
    for (int32_t i = 0, n = attn_model_entry_num_inputs(model, entry); i < n;
         ++i) {
      attn_tensor_info t;
      check(attn_model_entry_input_info(model, entry, i, &t));
      names.push_back(t.name);
    }
    return names;
  };
  for (const char *entry : {"prefill", "decode"}) {
    if (!attn_model_has_entry(model, entry))
      continue;
    std::vector<std::string> usual = inputNames("run");
    if (std::string_view(entry) == "decode")
      usual.push_back("position");
    if (inputNames(entry) == usual)
      continue;
    std::printf("%s inputs (the inputs it reads):\n", entry);
    for (int32_t i = 0, n = attn_model_entry_num_inputs(model, entry); i < n;
         ++i) {
      attn_tensor_info t;
      check(attn_model_entry_input_info(model, entry, i, &t));
      std::printf("  %s\n", describe(t).c_str());
    }
  }
  // The weights read at load, with the bytes they take in memory (bf16 and
  // f16 weights stay in that precision).
  int32_t n = attn_model_num_weights(model);
  if (n == 0)
    return;
  std::vector<std::string> lines;
  uint64_t bytes = 0;
  for (int32_t i = 0; i < n; ++i) {
    attn_tensor_info t;
    check(attn_model_weight_info(model, i, &t));
    uint64_t count = attn_dtype_lookup(t.dtype)->size;
    for (int32_t d = 0; d < t.rank; ++d)
      count *= uint64_t(t.dims[d].extent);
    bytes += count;
    lines.push_back(describe(t));
  }
  std::printf("weights (read at load, %d tensors, %.1f MB):\n", n, bytes / 1e6);
  for (const std::string &line : lines)
    std::printf("  %s\n", line.c_str());
}

/// A 64-byte aligned output buffer, freed with free().
struct Output {
  std::string name;
  int32_t dtype;
  std::vector<int64_t> dims;
  std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
  std::size_t bytes = 0;
};

/// Inputs made up for a quick try: each symbolic dim from `bound`, float
/// data ~ N(0, 1) from a fixed seed (or bound["seed"]), i32 data all 0 (a
/// warning for each input named like lengths).
struct RandomInputs {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::vector<uint64_t>> data; // 8-byte words: aligned for all
  std::vector<attn_tensor> tensors;
};

/// Whether an input's name reads as lengths ("lengths", "src_lengths",
/// "enc_len"). A library does not say what its inputs do, so --random's
/// warning that lengths of 0 mask every key of a padding(...) mask goes by
/// the name.
bool namedLikeLengths(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return name.find("len") != std::string::npos;
}

void makeRandomInputs(const attn_model *model,
                      const std::map<std::string, int64_t> &bound,
                      RandomInputs &out) {
  auto seed = bound.find("seed");
  std::mt19937 rng(seed == bound.end() ? 0u : uint32_t(seed->second));
  std::normal_distribution<float> normal;
  int32_t n = attn_model_num_inputs(model);
  out.dims.resize(n);
  out.data.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    attn_tensor_info info;
    check(attn_model_input_info(model, i, &info));
    size_t count = 1;
    for (int32_t d = 0; d < info.rank; ++d) {
      const attn_dim_info &dim = info.dims[d];
      int64_t extent = dim.extent;
      if (dim.is_dynamic) {
        auto it = bound.find(dim.symbol);
        if (it == bound.end())
          throw Failure{
              fmt::format("--random needs a value for dim {} (input {}), e.g. "
                          "--random {}=8",
                          dim.symbol, describe(info), dim.symbol)};
        extent = it->second;
      }
      out.dims[i].push_back(extent);
      count *= size_t(extent);
    }
    std::size_t bytes = std::max<size_t>(count, 1) * itemSize(info.dtype);
    out.data[i].assign((bytes + 7) / 8, 0); // i32 0
    void *p = out.data[i].data();
    for (size_t e = 0; e < count; ++e)
      if (info.dtype == ATTN_F32)
        static_cast<float *>(p)[e] = normal(rng);
      else if (info.dtype == ATTN_BF16)
        static_cast<uint16_t *>(p)[e] = floatToBf16(normal(rng));
      else if (info.dtype == ATTN_F16)
        static_cast<uint16_t *>(p)[e] = floatToF16(normal(rng));
    out.tensors.push_back({info.name, info.dtype, info.rank, out.dims[i].data(),
                           out.data[i].data()});
    if (info.dtype == ATTN_I32 && namedLikeLengths(info.name))
      std::fprintf(stderr,
                   "attn-run: warning: --random makes i32 input '%s' all 0, "
                   "which as key lengths (judged by its name) masks every "
                   "key: give real lengths with --inputs FILE\n",
                   info.name);
  }
}

std::string shapeString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// "75.0 MiB", "512 bytes".
std::string bytesString(uint64_t bytes) {
  const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return fmt::format("{} bytes", bytes);
  double v = double(bytes) / 1024;
  int unit = 0;
  for (; v >= 1024 && unit < 3; ++unit)
    v /= 1024;
  return fmt::format("{:.1f} {}", v, units[unit]);
}

/// Prints the workspace line; returns the arena's bytes.
uint64_t printWorkspace(const attn_model *model,
                        const std::vector<attn_tensor> &inputs) {
  uint64_t arena = 0, largest = 0, temps = 0;
  check(attn_model_workspace_size(model, inputs.data(), int32_t(inputs.size()),
                                  &arena, &largest, &temps));
  fmt::print("workspace: {} arena (largest live set {}; {} without reuse)\n",
             bytesString(arena), bytesString(largest), bytesString(temps));
  return arena;
}

/// Tokens per run for --bench: the product of the first input's dynamic
/// dims (B x S of ids [B, S] or of activations [B, S, D]).
int64_t tokensPerRun(const attn_model *model,
                     const std::vector<attn_tensor> &inputs) {
  attn_tensor_info info;
  if (inputs.empty() || attn_model_input_info(model, 0, &info) != ATTN_OK)
    return 0;
  int64_t tokens = 1;
  for (int32_t d = 0; d < info.rank; ++d)
    if (info.dims[d].is_dynamic)
      tokens *= inputs[0].dims[d];
  return tokens;
}

int run(const Options &o) {
  attn_model *raw = nullptr;
  attn_load_options load{};
  load.size = sizeof load;
  load.weights = o.weights.empty() ? nullptr : o.weights.c_str();
  // Only described: a model that reads its weights at load needs none.
  bool running =
      !o.inputs.empty() || !o.random.empty() || o.generate.tokens > 0;
  if (!running && !load.weights)
    load.flags = ATTN_LOAD_DESCRIBE_ONLY;
  if (o.checkWeights)
    load.flags |= ATTN_LOAD_CHECK_WEIGHTS;
  // The GPU a library's Halide runtime picks, read when its first kernel
  // (or "init", at load) starts.
  if (o.device >= 0)
    ::setenv("HL_GPU_DEVICE", std::to_string(o.device).c_str(), 1);
  check(attn_model_load_with_options(o.library.c_str(), &load, &raw));
  std::unique_ptr<attn_model, decltype(&attn_model_free)> model(
      raw, &attn_model_free);
  if ((o.device >= 0 || o.deviceMemory) &&
      attn::run::modelDevice(model.get()) == ATTN_DEVICE_HOST) {
    attn_model_info info{};
    info.size = sizeof info;
    check(attn_model_get_info(model.get(), &info));
    throw Failure{fmt::format(
        "{} needs a model that runs on a GPU, but '{}' was built for {}, "
        "which runs on the host: rebuild it with attnc "
        "--target=host-cuda or --target=host-opencl",
        o.device >= 0 ? "--device" : "--device-memory", o.library,
        info.target)};
  }
  if (o.checkWeights)
    std::printf("weights: the %d tensors the model reads from '%s' are "
                "finite\n",
                attn_model_num_weights(model.get()), o.weights.c_str());
  if (o.info)
    printInfo(model.get());
  if (o.generate.tokens) {
    if (o.threads >= 0)
      check(attn_model_set_threads(model.get(), o.threads));
    attn::run::GenerateOptions g = o.generate;
    g.profile = o.profile;
    return attn::run::generate(model.get(), g);
  }
  if (!running)
    return 0;
  if (o.threads >= 0)
    check(attn_model_set_threads(model.get(), o.threads));

  std::vector<attn_tensor> inputs;
  RandomInputs random;
  std::optional<st::File> file;
  if (!o.random.empty()) {
    makeRandomInputs(model.get(), o.random, random);
    inputs = random.tensors;
  } else {
    st::Expected<st::File> opened = st::File::open(o.inputs);
    if (!opened)
      throw Failure{opened.message()};
    file = std::move(*opened);
  }
  std::vector<std::string> used;
  for (int32_t i = 0, n = attn_model_num_inputs(model.get()); file && i < n;
       ++i) {
    attn_tensor_info info;
    check(attn_model_input_info(model.get(), i, &info));
    const st::Tensor *t = file->find(info.name);
    if (!t)
      throw Failure{"'" + o.inputs + "' has no tensor named '" + info.name +
                    "' for the model's input " + describe(info) + " (it has " +
                    file->tensorNames() + "): add it or rename a tensor"};
    std::optional<int32_t> dtype = st::attnDType(t->dtype);
    if (!dtype)
      throw Failure{"'" + o.inputs + "': tensor '" + info.name +
                    "' has dtype " + st::dtypeName(t->dtype) +
                    ", but the model's input is " + describe(info) +
                    ": convert it to " + dtypeName(info.dtype)};
    inputs.push_back({info.name, *dtype, int32_t(t->shape.size()),
                      t->shape.data(), const_cast<void *>(t->data)});
    used.push_back(info.name);
  }
  for (const st::Tensor &t : file ? file->tensors() : std::vector<st::Tensor>())
    if (std::find(used.begin(), used.end(), t.name) == used.end())
      std::fprintf(stderr,
                   "attn-run: warning: '%s' has tensor '%s', which is not an "
                   "input of the model; ignoring it\n",
                   o.inputs.c_str(), t.name.c_str());

  std::vector<Output> outputs(attn_model_num_outputs(model.get()));
  std::vector<attn_tensor> outputTensors;
  for (int32_t i = 0; i < int32_t(outputs.size()); ++i) {
    attn_tensor_info info;
    check(attn_model_output_info(model.get(), i, &info));
    Output &out = outputs[i];
    out.name = info.name;
    out.dtype = info.dtype;
    out.dims.resize(ATTN_MAX_RANK);
    check(attn_model_output_dims(model.get(), inputs.data(),
                                 int32_t(inputs.size()), i, out.dims.data(),
                                 ATTN_MAX_RANK));
    out.dims.resize(info.rank);
    out.bytes = itemSize(info.dtype);
    for (int64_t d : out.dims)
      out.bytes *= std::size_t(d);
    out.data.reset(std::aligned_alloc(
        64, std::max<std::size_t>(64, (out.bytes + 63) / 64 * 64)));
    if (!out.data)
      throw Failure{"cannot allocate " + std::to_string(out.bytes) +
                    " bytes for output '" + out.name + "'"};
    outputTensors.push_back(
        {info.name, info.dtype, info.rank, out.dims.data(), out.data.get()});
  }

  // A bad --heatmap choice fails before the run, not after it.
  std::vector<attn::run::HeatmapTensor> drawable;
  std::size_t heatmapIndex = 0;
  if (!o.heatmap.path.empty()) {
    for (const Output &out : outputs)
      drawable.push_back({out.name, out.dims, [&out](std::size_t i) {
                            return element(out.data.get(), out.dtype, i);
                          }});
    heatmapIndex = attn::run::chooseHeatmapOutput(o.heatmap, drawable);
  }

  // --device-memory: the inputs go to the device once, and the outputs stay
  // there until every run is done.
  std::vector<attn::DeviceMemory> deviceMemory;
  std::vector<attn_tensor> runInputs = inputs, runOutputs = outputTensors;
  attn_run_options runOptions{};
  runOptions.size = sizeof runOptions;
  if (o.deviceMemory) {
    for (attn_tensor &t : runInputs) {
      uint64_t bytes = itemSize(t.dtype);
      for (int32_t d = 0; d < t.rank; ++d)
        bytes *= uint64_t(t.dims[d]);
      deviceMemory.emplace_back(model.get(), bytes);
      deviceMemory.back().upload(t.data, bytes);
      t.data = deviceMemory.back().get();
    }
    for (std::size_t i = 0; i < runOutputs.size(); ++i) {
      deviceMemory.emplace_back(model.get(), outputs[i].bytes);
      runOutputs[i].data = deviceMemory.back().get();
    }
    runOptions.device_tensors = ATTN_ON_DEVICE_INPUTS | ATTN_ON_DEVICE_OUTPUTS;
    fmt::print("device memory: inputs and outputs stay on the {} device\n",
               attn::run::deviceName(attn::run::modelDevice(model.get())));
  }
  auto runOnce = [&] {
    check(attn_model_run_with_options(
        model.get(), &runOptions, runInputs.data(), int32_t(runInputs.size()),
        runOutputs.data(), int32_t(runOutputs.size())));
  };
  uint64_t arena = 0;
  if (o.info || o.bench > 0 || o.profile || o.outputs.empty())
    arena = printWorkspace(model.get(), inputs);
  // The first run (a warm-up when timing) also counts the flops of a run.
  double flops = attnrun::Profile::flopsOf(model.get(), runOnce);
  // --profile times the --bench runs, or one more run.
  std::optional<attnrun::Profile> profile;
  if (o.profile)
    profile.emplace(model.get());
  int timedRuns = o.bench > 0 ? o.bench : o.profile ? 1 : 0;
  std::vector<double> ms;
  for (int i = 0; i < timedRuns; ++i) {
    auto start = std::chrono::steady_clock::now();
    runOnce();
    std::chrono::duration<double, std::milli> d =
        std::chrono::steady_clock::now() - start;
    ms.push_back(d.count());
  }
  std::sort(ms.begin(), ms.end());
  double median = ms.empty() ? 0
                  : ms.size() % 2
                      ? ms[ms.size() / 2]
                      : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  if (o.bench > 0) {
    int64_t tokens = tokensPerRun(model.get(), inputs);
    fmt::print("bench: {} runs after 1 warm-up: median {:.3f} ms, min "
               "{:.3f} ms; {:.1f} tokens/s ({} tokens per run)",
               o.bench, median, ms.front(),
               median > 0 ? double(tokens) * 1e3 / median : 0.0, tokens);
    if (flops > 0)
      fmt::print("; {:.1f} GFLOP/s ({:.4g} GFLOP per run)",
                 median > 0 ? flops / median * 1e-6 : 0.0, flops * 1e-9);
    fmt::print("\n");
  }
  if (profile) {
    double mean = 0;
    for (double m : ms)
      mean += m / double(ms.size());
    profile->print(mean, arena);
  }
  if (o.deviceMemory)
    for (std::size_t i = 0; i < outputs.size(); ++i)
      deviceMemory[runInputs.size() + i].download(outputs[i].data.get(),
                                                  outputs[i].bytes);

  if (o.outputs.empty()) {
    // What came out, at a glance: shape and the range of the values.
    fmt::print("{:<16} {:<5} {:<20} {:>12} {:>12} {:>12} {:>6}\n", "output",
               "dtype", "shape", "min", "max", "mean", "NaN");
    for (const Output &out : outputs) {
      size_t n = out.bytes / itemSize(out.dtype);
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      size_t nans = 0;
      for (size_t i = 0; i < n; ++i) {
        double v = element(out.data.get(), out.dtype, i);
        if (std::isnan(v)) {
          ++nans;
          continue;
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        sum += v;
      }
      // An output of NaN only has no range: nan, not (inf, -inf).
      if (n == nans)
        lo = hi = NAN;
      double mean = n > nans ? sum / double(n - nans) : NAN;
      fmt::print("{:<16} {:<5} {:<20} {:>12.6g} {:>12.6g} {:>12.6g} {:>6}\n",
                 out.name, dtypeName(out.dtype), shapeString(out.dims), lo, hi,
                 mean, nans);
    }
  }

  if (!o.outputs.empty()) {
    st::Writer writer;
    for (const Output &out : outputs) {
      st::Status s = writer.add(out.name, *st::fromAttnDType(out.dtype),
                                out.dims, out.data.get(), out.bytes);
      if (!s)
        throw Failure{s.message()};
    }
    if (st::Status s = writer.write(o.outputs); !s)
      throw Failure{s.message()};
  }
  if (!o.heatmap.path.empty())
    fmt::print("{}\n",
               attn::run::writeHeatmap(o.heatmap, drawable[heatmapIndex]));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // A file size limit (ulimit -f) then fails --outputs' write as a full
  // disk does, with an error naming the file, instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return run(parseArgs(argc, argv));
  } catch (const Failure &f) {
    std::fprintf(stderr, "attn-run: error: %s\n", f.message.c_str());
  } catch (const attn::run::GenerateError &e) {
    std::fprintf(stderr, "attn-run: error: %s\n", e.what());
  } catch (const HeatmapError &e) {
    std::fprintf(stderr, "attn-run: error: %s\n", e.what());
  } catch (const attn::Error &e) {
    std::fprintf(stderr, "attn-run: error: %s\n", e.what());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "attn-run: error: out of memory\n");
  }
  return 1;
}
