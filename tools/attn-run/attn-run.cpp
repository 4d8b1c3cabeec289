//===- tools/attn-run/attn-run.cpp - Run a compiled model -----------------===//
//
// attn-run lib.so --inputs in.safetensors --outputs out.safetensors
//         [--threads N] [--bench N] [--info]
//
// Feeds a model its inputs by name from a safetensors file, sizes the outputs
// with the runtime, runs, and writes the outputs by name. The simplest way to
// run a model without writing C, and to time it.
//
//===----------------------------------------------------------------------===//
#include "attn/attn.h"
#include "attn/safetensors.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace st = attn::safetensors;

namespace {

const char *Usage =
    "usage: attn-run lib.so [--inputs in.safetensors] [--outputs "
    "out.safetensors]\n"
    "                [--threads N] [--bench N] [--info]\n"
    "  --inputs F   read the model's inputs by name from safetensors file F\n"
    "  --outputs F  write the model's outputs by name to F (atomically)\n"
    "  --threads N  size the model's thread pool (0: its default)\n"
    "  --bench N    run N more times after one warm-up; print median and min\n"
    "  --info       print the model's inputs and outputs\n";

/// A failure that ends the tool with `attn-run: error: <message>`.
struct Failure {
  std::string message;
};

struct Options {
  std::string library;
  std::string inputs, outputs;
  int threads = -1;
  int bench = 0;
  bool info = false;
};

int parseCount(const std::string &flag, const char *text, int min) {
  char *end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!*text || *end || v < min || v > 1000000)
    throw Failure{flag + " wants an integer >= " + std::to_string(min) +
                  ", got '" + text + "'"};
  return int(v);
}

Options parseArgs(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        throw Failure{a + " needs a value\n" + Usage};
      return argv[++i];
    };
    if (a == "--inputs")
      o.inputs = value();
    else if (a == "--outputs")
      o.outputs = value();
    else if (a == "--threads")
      o.threads = parseCount(a, value(), 0);
    else if (a == "--bench")
      o.bench = parseCount(a, value(), 1);
    else if (a == "--info")
      o.info = true;
    else if (a == "-h" || a == "--help") {
      std::fputs(Usage, stdout);
      std::exit(0);
    } else if (!a.empty() && a[0] == '-')
      throw Failure{"unknown option '" + a + "'\n" + Usage};
    else if (o.library.empty())
      o.library = a;
    else
      throw Failure{"more than one model library given ('" + o.library +
                    "' and '" + a + "')"};
  }
  if (o.library.empty())
    throw Failure{std::string("no model library given\n") + Usage};
  if (o.inputs.empty() && !o.info)
    throw Failure{std::string("nothing to do: give --inputs (to run) or "
                              "--info\n") +
                  Usage};
  if (o.inputs.empty() && (!o.outputs.empty() || o.bench))
    throw Failure{"--outputs and --bench need --inputs"};
  return o;
}

void check(attn_status status) {
  if (status != ATTN_OK)
    throw Failure{attn_last_error()};
}

const char *dtypeName(int32_t dtype) {
  return dtype == ATTN_F32 ? "F32" : dtype == ATTN_I32 ? "I32" : "?";
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
  attn_model_info info;
  check(attn_model_get_info(model, &info));
  std::printf("model %s (built by %s for %s)\n", info.name,
              info.compiler_version, info.target);
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
}

/// The runtime's dtype of a file's tensor, or -1 for one models never take.
int32_t toModelDtype(st::DType dtype) {
  return dtype == st::DType::F32   ? ATTN_F32
         : dtype == st::DType::I32 ? ATTN_I32
                                   : -1;
}

/// A 64-byte aligned output buffer, freed with free().
struct Output {
  std::string name;
  int32_t dtype;
  std::vector<int64_t> dims;
  std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
  std::size_t bytes = 0;
};

int run(const Options &o) {
  attn_model *raw = nullptr;
  check(attn_model_load(o.library.c_str(), &raw));
  std::unique_ptr<attn_model, decltype(&attn_model_free)> model(
      raw, &attn_model_free);
  if (o.info)
    printInfo(model.get());
  if (o.inputs.empty())
    return 0;
  if (o.threads >= 0)
    check(attn_model_set_threads(model.get(), o.threads));

  st::Expected<st::File> file = st::File::open(o.inputs);
  if (!file)
    throw Failure{file.message()};
  std::vector<attn_tensor> inputs;
  std::vector<std::string> used;
  for (int32_t i = 0, n = attn_model_num_inputs(model.get()); i < n; ++i) {
    attn_tensor_info info;
    check(attn_model_input_info(model.get(), i, &info));
    const st::Tensor *t = file->find(info.name);
    if (!t)
      throw Failure{"'" + o.inputs + "' has no tensor named '" + info.name +
                    "' for the model's input " + describe(info) + " (it has " +
                    file->tensorNames() + "): add it or rename a tensor"};
    if (toModelDtype(t->dtype) < 0)
      throw Failure{"'" + o.inputs + "': tensor '" + info.name +
                    "' has dtype " + st::dtypeName(t->dtype) +
                    ", but the model's input is " + describe(info) +
                    ": convert it to " + dtypeName(info.dtype)};
    inputs.push_back({info.name, toModelDtype(t->dtype),
                      int32_t(t->shape.size()), t->shape.data(),
                      const_cast<void *>(t->data)});
    used.push_back(info.name);
  }
  for (const st::Tensor &t : file->tensors())
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
    out.bytes = 4;
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

  auto runOnce = [&] {
    check(attn_model_run(model.get(), inputs.data(), int32_t(inputs.size()),
                         outputTensors.data(), int32_t(outputTensors.size())));
  };
  runOnce();
  if (o.bench > 0) {
    std::vector<double> ms;
    for (int i = 0; i < o.bench; ++i) {
      auto start = std::chrono::steady_clock::now();
      runOnce();
      std::chrono::duration<double, std::milli> d =
          std::chrono::steady_clock::now() - start;
      ms.push_back(d.count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ms.size() % 2
                        ? ms[ms.size() / 2]
                        : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
    std::printf("bench: %d runs after 1 warm-up: median %.3f ms, min %.3f ms\n",
                o.bench, median, ms.front());
  }

  if (!o.outputs.empty()) {
    st::Writer writer;
    for (const Output &out : outputs) {
      st::Status s = writer.add(
          out.name, out.dtype == ATTN_I32 ? st::DType::I32 : st::DType::F32,
          out.dims, out.data.get(), out.bytes);
      if (!s)
        throw Failure{s.message()};
    }
    if (st::Status s = writer.write(o.outputs); !s)
      throw Failure{s.message()};
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parseArgs(argc, argv));
  } catch (const Failure &f) {
    std::fprintf(stderr, "attn-run: error: %s\n", f.message.c_str());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "attn-run: error: out of memory\n");
  }
  return 1;
}
