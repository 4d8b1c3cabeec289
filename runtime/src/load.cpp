//===- runtime/src/load.cpp - Load and validate a model library -----------===//
//
// A model library is code and tables someone else built: before any of it is
// used, every count, index, pointer and byte range of its descriptor is
// checked, so a stale or corrupt library is an error message, not a crash in
// the middle of a run.
//
//===----------------------------------------------------------------------===//
#include "cpu.h"
#include "model.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <memory>
#include <set>
#include <sys/stat.h>

namespace attn::rt {
namespace {

/// Checks one descriptor; `fail` prefixes every message with the library.
class Validator {
public:
  Validator(const attn_model_desc &desc, std::string path)
      : d(desc), path(std::move(path)) {}

  attn_status run() {
    if (!d.compiler_version || !d.model_name || !d.target)
      return bad("a version, model name or target string is NULL");
    if (attn_status s = checkTables(); s != ATTN_OK)
      return s;
    if (attn_status s = checkSymbols(); s != ATTN_OK)
      return s;
    if (attn_status s = checkBuffers(); s != ATTN_OK)
      return s;
    if (attn_status s = checkTensors(true); s != ATTN_OK)
      return s;
    if (attn_status s = checkTensors(false); s != ATTN_OK)
      return s;
    if (attn_status s = checkSteps(); s != ATTN_OK)
      return s;
    if (!d.run_kernel || !d.set_num_threads || !d.last_error)
      return bad("a function pointer (run_kernel, set_num_threads or "
                 "last_error) is NULL");
    return checkSymbolsBound();
  }

private:
  attn_status bad(const std::string &what) {
    return fail(ATTN_ERROR_INVALID_LIBRARY, "model library '" + path +
                                                "' is corrupt: " + what +
                                                ": rebuild it with attnc");
  }

  static bool tableOk(int32_t count, const void *table) {
    return count >= 0 && (count == 0 || table);
  }

  attn_status checkTables() {
    struct {
      const char *name;
      int32_t count;
      const void *table;
    } tables[] = {{"symbols", d.num_symbols, d.symbols},
                  {"inputs", d.num_inputs, d.inputs},
                  {"outputs", d.num_outputs, d.outputs},
                  {"buffers", d.num_buffers, d.buffers},
                  {"kernels", d.num_kernels, d.kernels},
                  {"steps", d.num_steps, d.steps}};
    for (const auto &t : tables)
      if (!tableOk(t.count, t.table))
        return bad(std::string("the ") + t.name + " table has count " +
                   std::to_string(t.count) + " and pointer " +
                   (t.table ? "set" : "NULL"));
    if (d.num_outputs == 0)
      return bad("the model has no outputs");
    if (d.weights_size > 0 && !d.weights)
      return bad("the weights blob is NULL but its size is " +
                 std::to_string(d.weights_size));
    return ATTN_OK;
  }

  attn_status checkSymbols() {
    std::set<std::string> names;
    for (int32_t i = 0; i < d.num_symbols; ++i) {
      const attn_model_symbol &s = d.symbols[i];
      if (!s.name || !*s.name)
        return bad("symbol " + std::to_string(i) + " has no name");
      if (s.max < 0)
        return bad("symbol " + std::string(s.name) + " has negative bound " +
                   std::to_string(s.max));
      if (!names.insert(s.name).second)
        return bad("symbol " + std::string(s.name) + " is declared twice");
    }
    return ATTN_OK;
  }

  attn_status checkBuffers() {
    for (int32_t b = 0; b < d.num_buffers; ++b) {
      const attn_model_buffer &buf = d.buffers[b];
      std::string where = "buffer " + std::to_string(b);
      if (buf.kind < ATTN_MODEL_BUFFER_INPUT ||
          buf.kind > ATTN_MODEL_BUFFER_TEMP)
        return bad(where + " has unknown kind " + std::to_string(buf.kind));
      if (buf.dtype != ATTN_MODEL_F32 && buf.dtype != ATTN_MODEL_I32)
        return bad(where + " has unknown dtype " + std::to_string(buf.dtype));
      if (buf.rank < 0 || buf.rank > ATTN_MAX_RANK || (buf.rank && !buf.dims))
        return bad(where + " has rank " + std::to_string(buf.rank) +
                   " (at most " + std::to_string(ATTN_MAX_RANK) +
                   ", with a dims table)");
      uint64_t bytes = 4;
      for (int32_t i = 0; i < buf.rank; ++i) {
        const attn_model_dim &dim = buf.dims[i];
        if (dim.symbol == -1) {
          if (dim.extent < 0)
            return bad(where + " dim " + std::to_string(i) +
                       " has negative extent " + std::to_string(dim.extent));
          if (dim.extent &&
              bytes > std::numeric_limits<uint64_t>::max() / dim.extent)
            return bad(where + " has a size that overflows");
          bytes *= uint64_t(dim.extent);
        } else if (dim.symbol < 0 || dim.symbol >= d.num_symbols) {
          return bad(where + " dim " + std::to_string(i) +
                     " refers to symbol " + std::to_string(dim.symbol) +
                     " of " + std::to_string(d.num_symbols));
        } else if (buf.kind == ATTN_MODEL_BUFFER_WEIGHT) {
          return bad(where + " is a weight with a dynamic dim");
        }
      }
      if (buf.kind == ATTN_MODEL_BUFFER_WEIGHT) {
        if (buf.weight_offset % 64 != 0)
          return bad(where + " has weight offset " +
                     std::to_string(buf.weight_offset) +
                     ", not 64-byte aligned");
        if (buf.weight_offset > d.weights_size ||
            bytes > d.weights_size - buf.weight_offset)
          return bad(where + " takes weight bytes [" +
                     std::to_string(buf.weight_offset) + ", +" +
                     std::to_string(bytes) + ") of a " +
                     std::to_string(d.weights_size) + "-byte blob");
      }
    }
    return ATTN_OK;
  }

  /// Inputs and outputs map one to one onto INPUT/OUTPUT buffers.
  attn_status checkTensors(bool inputs) {
    const char *what = inputs ? "input" : "output";
    int32_t count = inputs ? d.num_inputs : d.num_outputs;
    const attn_model_tensor *table = inputs ? d.inputs : d.outputs;
    int32_t kind = inputs ? ATTN_MODEL_BUFFER_INPUT : ATTN_MODEL_BUFFER_OUTPUT;
    std::set<std::string> names;
    for (int32_t i = 0; i < count; ++i) {
      const attn_model_tensor &t = table[i];
      std::string where = std::string(what) + " " + std::to_string(i);
      if (!t.name || !*t.name)
        return bad(where + " has no name");
      if (!names.insert(t.name).second)
        return bad(std::string(what) + " name '" + t.name + "' is used twice");
      if (t.buffer < 0 || t.buffer >= d.num_buffers)
        return bad(where + " ('" + t.name + "') refers to buffer " +
                   std::to_string(t.buffer) + " of " +
                   std::to_string(d.num_buffers));
      const attn_model_buffer &buf = d.buffers[t.buffer];
      if (buf.kind != kind || buf.index != i)
        return bad(where + " ('" + t.name + "') refers to buffer " +
                   std::to_string(t.buffer) + ", which is not " + what + " " +
                   std::to_string(i));
    }
    for (int32_t b = 0; b < d.num_buffers; ++b) {
      const attn_model_buffer &buf = d.buffers[b];
      if (buf.kind == kind &&
          (buf.index < 0 || buf.index >= count || table[buf.index].buffer != b))
        return bad("buffer " + std::to_string(b) + " claims to be " + what +
                   " " + std::to_string(buf.index) +
                   ", which does not name it");
    }
    return ATTN_OK;
  }

  attn_status checkSteps() {
    for (int32_t k = 0; k < d.num_kernels; ++k)
      if (!d.kernels[k].name || d.kernels[k].num_args < 0)
        return bad("kernel " + std::to_string(k) +
                   " has no name or a negative argument count");
    for (int32_t s = 0; s < d.num_steps; ++s) {
      const attn_model_step &step = d.steps[s];
      std::string where = "step " + std::to_string(s);
      if (step.kernel < 0 || step.kernel >= d.num_kernels)
        return bad(where + " calls kernel " + std::to_string(step.kernel) +
                   " of " + std::to_string(d.num_kernels));
      const attn_model_kernel &k = d.kernels[step.kernel];
      if (step.num_args != k.num_args || !tableOk(step.num_args, step.args))
        return bad(where + " passes " + std::to_string(step.num_args) +
                   " arguments to kernel '" + k.name + "', which takes " +
                   std::to_string(k.num_args));
      for (int32_t a = 0; a < step.num_args; ++a)
        if (step.args[a] < 0 || step.args[a] >= d.num_buffers)
          return bad(where + " argument " + std::to_string(a) +
                     " refers to buffer " + std::to_string(step.args[a]) +
                     " of " + std::to_string(d.num_buffers));
    }
    return ATTN_OK;
  }

  /// Output and temp sizes are computed from the inputs alone, so every
  /// symbol they use must appear in some input.
  attn_status checkSymbolsBound() {
    std::vector<bool> bound(d.num_symbols, false);
    for (int32_t b = 0; b < d.num_buffers; ++b)
      if (d.buffers[b].kind == ATTN_MODEL_BUFFER_INPUT)
        for (int32_t i = 0; i < d.buffers[b].rank; ++i)
          if (d.buffers[b].dims[i].symbol >= 0)
            bound[d.buffers[b].dims[i].symbol] = true;
    for (int32_t b = 0; b < d.num_buffers; ++b)
      for (int32_t i = 0; i < d.buffers[b].rank; ++i) {
        int32_t s = d.buffers[b].dims[i].symbol;
        if (s >= 0 && !bound[s])
          return bad("buffer " + std::to_string(b) + " uses symbol " +
                     d.symbols[s].name + ", which no input binds");
      }
    return ATTN_OK;
  }

  const attn_model_desc &d;
  std::string path;
};

std::vector<attn_dim_info> dimInfos(const attn_model_desc &d,
                                    const attn_model_tensor &t) {
  const attn_model_buffer &buf = d.buffers[t.buffer];
  std::vector<attn_dim_info> infos;
  for (int32_t i = 0; i < buf.rank; ++i) {
    const attn_model_dim &dim = buf.dims[i];
    if (dim.symbol < 0)
      infos.push_back({0, dim.extent, nullptr, 0});
    else
      infos.push_back(
          {1, -1, d.symbols[dim.symbol].name, d.symbols[dim.symbol].max});
  }
  return infos;
}

} // namespace

attn_status loadModel(const char *path, attn_model *&out) {
  std::string p = path;
  struct stat st;
  if (::stat(path, &st) != 0)
    return fail(ATTN_ERROR_IO, "cannot open model library '" + p +
                                   "': " + std::strerror(errno));
  // Without a slash dlopen would search the library path instead.
  std::string dlPath = p.find('/') == std::string::npos ? "./" + p : p;
  void *handle = ::dlopen(dlPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *err = ::dlerror();
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                "'" + p + "' is not a loadable shared library (" +
                    (err ? err : "dlopen failed") +
                    "): give the .so that attnc built");
  }
  auto model = std::make_unique<attn_model>();
  model->handle = handle;
  model->path = p;
  auto entry = reinterpret_cast<attn_model_entry_fn>(
      ::dlsym(handle, ATTN_MODEL_ENTRY_SYMBOL));
  if (!entry)
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                "'" + p + "' is not an attnc model: it exports no " +
                    ATTN_MODEL_ENTRY_SYMBOL + ": build it with attnc");
  const attn_model_desc *desc = entry();
  if (!desc || desc->magic != ATTN_MODEL_MAGIC)
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                "'" + p + "' is not an attnc model: its descriptor " +
                    (desc ? "has the wrong magic number" : "is NULL") +
                    ": build it with attnc");
  if (desc->abi_version != ATTN_MODEL_ABI_VERSION)
    return fail(ATTN_ERROR_ABI_MISMATCH,
                "'" + p + "' was built for model ABI " +
                    std::to_string(desc->abi_version) +
                    ", this runtime reads ABI " +
                    std::to_string(ATTN_MODEL_ABI_VERSION) +
                    ": rebuild it with the attnc that matches this runtime");
  if (attn_status s = Validator(*desc, p).run(); s != ATTN_OK)
    return s;
  // Before any kernel runs: one built for missing instructions would die of
  // SIGILL.
  if (std::vector<std::string> missing = missingCpuFeatures(desc->target);
      !missing.empty()) {
    std::string list;
    for (const std::string &f : missing)
      list += (list.empty() ? "" : ", ") + f;
    return fail(ATTN_ERROR_UNSUPPORTED_CPU,
                "'" + p + "' was built for " + desc->target + " and needs " +
                    list + ", which this CPU lacks (it has " +
                    cpuFeatureSummary() +
                    "): rebuild it here with attnc --target=host, or for a "
                    "target this CPU supports such as " +
                    portableTarget());
  }
  model->desc = desc;
  for (int32_t i = 0; i < desc->num_inputs; ++i)
    model->inputDims.push_back(dimInfos(*desc, desc->inputs[i]));
  for (int32_t i = 0; i < desc->num_outputs; ++i)
    model->outputDims.push_back(dimInfos(*desc, desc->outputs[i]));
  model->temps.resize(desc->num_buffers);
  model->bufferDims.resize(desc->num_buffers);
  out = model.release();
  return ATTN_OK;
}

} // namespace attn::rt

attn_model::~attn_model() {
  for (attn::rt::TempBuffer &t : temps)
    std::free(t.data);
  if (handle)
    ::dlclose(handle);
}
