//===- runtime/src/load.cpp - Load and validate a model library -----------===//
//
// A model library is code and tables someone else built: before any of it is
// used, every count, index, pointer and byte range of its descriptor is
// checked, so a stale or corrupt library is an error message, not a crash in
// the middle of a run.
//
//===----------------------------------------------------------------------===//
#include "cpu.h"
#include "device.h"
#include "device_buffers.h"
#include "elf_check.h"
#include "model.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <limits>
#include <link.h>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::rt {
namespace {

std::string quoted(const char *name) { return "'" + std::string(name) + "'"; }

/// The entry symbols of earlier attncs and the model ABIs they stood for,
/// known only to refuse those libraries by name: their descriptors have
/// other layouts, so they are never called.
struct EarlierEntry {
  const char *symbol, *abis;
};
constexpr EarlierEntry kEarlierEntries[] = {
    {"attn_model_descriptor_v1", "model ABI 1"},
    {"attn_model_descriptor_v2", "model ABI 2 to 4"},
};

/// "this runtime reads model ABI 6 only: rebuild it with this attnc".
std::string rebuildForThisAbi() {
  return "this runtime reads model ABI " +
         std::to_string(ATTN_MODEL_ABI_VERSION) +
         " only: rebuild it with this attnc";
}

/// product(dims) * itemSize, or nullopt when it overflows (or a dim is
/// negative).
std::optional<uint64_t> byteSize(const int64_t *dims, int32_t rank,
                                 uint64_t itemSize) {
  uint64_t bytes = itemSize;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0 ||
        (dims[i] && bytes > std::numeric_limits<uint64_t>::max() / dims[i]))
      return std::nullopt;
    bytes *= uint64_t(dims[i]);
  }
  return bytes;
}

/// Checks one descriptor; `bad` prefixes every message with the library.
class Validator {
public:
  Validator(const attn_model_desc &desc, std::string path)
      : d(desc), path(std::move(path)) {}

  attn_status run() {
    if (!d.compiler_version || !d.model_name || !d.target)
      return bad("a version, model name or target string is NULL");
    if (!d.run_kernel || !d.set_num_threads)
      return bad("a function pointer (run_kernel or set_num_threads) is NULL");
    if (attn_status s = checkDevice(); s != ATTN_OK)
      return s;
    if (!precisionName(d.precision))
      return bad("its linears multiply at precision " +
                 std::to_string(d.precision) +
                 ", which this runtime does not know");
    for (auto check :
         {&Validator::checkTables, &Validator::checkSymbols,
          &Validator::checkWeights, &Validator::checkStates,
          &Validator::checkKernels, &Validator::checkEntries,
          &Validator::checkConstants, &Validator::checkRunSymbolsBound})
      if (attn_status s = (this->*check)(); s != ATTN_OK)
        return s;
    return ATTN_OK;
  }

private:
  attn_status bad(const std::string &what) {
    return fail(ATTN_ERROR_INVALID_LIBRARY, "model library '" + path +
                                                "' is corrupt: " + what +
                                                ": rebuild it with attnc");
  }

  /// A known device, and on a GPU every device memory function.
  attn_status checkDevice() {
    int32_t device = d.device;
    if (device != ATTN_MODEL_DEVICE_HOST && device != ATTN_MODEL_DEVICE_CUDA &&
        device != ATTN_MODEL_DEVICE_OPENCL)
      return bad("its kernels run on device " + std::to_string(device) +
                 ", which this runtime does not know");
    if (device == ATTN_MODEL_DEVICE_HOST)
      return ATTN_OK;
    const attn_model_device_api *api = d.device_api;
    if (!api || !api->alloc || !api->free || !api->copy_to_device ||
        !api->copy_to_host || !api->synchronize || !api->wrap || !api->unwrap ||
        !api->native || !api->native_context || !api->crop ||
        !api->release_crop)
      return bad("its kernels run on a GPU but its device memory functions "
                 "are missing");
    return ATTN_OK;
  }

  static bool tableOk(int32_t count, const void *table) {
    return count >= 0 && (count == 0 || table);
  }

  attn_status badTable(const std::string &name, int32_t count,
                       const void *table) {
    return bad("the " + name + " table has count " + std::to_string(count) +
               " and pointer " + (table ? "set" : "NULL"));
  }

  attn_status checkTables() {
    struct {
      const char *name;
      int32_t count;
      const void *table;
    } tables[] = {{"symbols", d.num_symbols, d.symbols},
                  {"weights", d.num_weights, d.weights},
                  {"states", d.num_states, d.states},
                  {"kernels", d.num_kernels, d.kernels},
                  {"entries", d.num_entries, d.entries}};
    for (const auto &t : tables)
      if (!tableOk(t.count, t.table))
        return badTable(t.name, t.count, t.table);
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

  /// dtype known, rank in range with a dims table.
  attn_status checkHeader(const std::string &where, int32_t dtype, int32_t rank,
                          const void *dims) {
    if (!attn_dtype_lookup(dtype))
      return bad(where + " has unknown dtype " + std::to_string(dtype));
    if (rank < 0 || rank > ATTN_MAX_RANK || (rank && !dims))
      return bad(where + " has rank " + std::to_string(rank) + " (at most " +
                 std::to_string(ATTN_MAX_RANK) + ", with a dims table)");
    return ATTN_OK;
  }

  attn_status checkWeights() {
    std::set<std::string> names;
    for (int32_t i = 0; i < d.num_weights; ++i) {
      const attn_model_weight &w = d.weights[i];
      std::string where = "weight " + std::to_string(i);
      if (!w.name || !*w.name)
        return bad(where + " has no name");
      where += " ('" + std::string(w.name) + "')";
      if (!names.insert(w.name).second)
        return bad("weight name '" + std::string(w.name) + "' is used twice");
      if (attn_status s = checkHeader(where, w.dtype, w.rank, w.dims);
          s != ATTN_OK)
        return s;
      for (int32_t k = 0; k < w.rank; ++k)
        if (w.dims[k] < 0)
          return bad(where + " dim " + std::to_string(k) +
                     " has negative extent " + std::to_string(w.dims[k]));
      if (!byteSize(w.dims, w.rank, attn_dtype_lookup(w.dtype)->size))
        return bad(where + " has a size that overflows");
      if (w.layout != ATTN_MODEL_WEIGHT_ANY &&
          (w.rank != 2 ||
           (w.dtype != ATTN_MODEL_I8 && w.dtype != ATTN_MODEL_U8) ||
           (w.layout != ATTN_MODEL_WEIGHT_OUT_IN &&
            w.layout != ATTN_MODEL_WEIGHT_IN_OUT)))
        return bad(where + " has layout " + std::to_string(w.layout) +
                   ", which only a quantized matrix (I8 or U8, rank 2) has, "
                   "and only 1 or 2");
    }
    return ATTN_OK;
  }

  /// Terms in range, symbols in range, constant non-negative.
  attn_status checkDims(const std::string &where, int32_t rank,
                        const attn_model_dim *dims) {
    for (int32_t k = 0; k < rank; ++k) {
      const attn_model_dim &dim = dims[k];
      std::string at = where + " dim " + std::to_string(k);
      if (dim.num_terms < 0 || dim.num_terms > ATTN_MODEL_MAX_DIM_TERMS)
        return bad(at + " has " + std::to_string(dim.num_terms) +
                   " terms (at most " +
                   std::to_string(ATTN_MODEL_MAX_DIM_TERMS) + ")");
      if (dim.constant < 0)
        return bad(at + " has negative constant " +
                   std::to_string(dim.constant));
      for (int32_t t = 0; t < dim.num_terms; ++t)
        if (dim.terms[t].symbol < 0 || dim.terms[t].symbol >= d.num_symbols)
          return bad(at + " refers to symbol " +
                     std::to_string(dim.terms[t].symbol) + " of " +
                     std::to_string(d.num_symbols));
    }
    return ATTN_OK;
  }

  attn_status checkStates() {
    std::set<std::string> names;
    for (int32_t i = 0; i < d.num_states; ++i) {
      const attn_model_state &st = d.states[i];
      std::string where = "state " + std::to_string(i);
      if (!st.name || !*st.name)
        return bad(where + " has no name");
      if (!names.insert(st.name).second)
        return bad("state name '" + std::string(st.name) + "' is used twice");
      if (attn_status s = checkHeader(where, st.dtype, st.rank, st.dims);
          s != ATTN_OK)
        return s;
      if (attn_status s = checkDims(where, st.rank, st.dims); s != ATTN_OK)
        return s;
    }
    return ATTN_OK;
  }

  attn_status checkKernels() {
    for (int32_t k = 0; k < d.num_kernels; ++k) {
      const attn_model_kernel &kernel = d.kernels[k];
      if (!kernel.name || kernel.num_inputs < 0 || kernel.num_outputs < 0 ||
          kernel.num_inputs >
              std::numeric_limits<int32_t>::max() - kernel.num_outputs)
        return bad("kernel " + std::to_string(k) +
                   " has no name or a bad argument count");
      if (!tableOk(kernel.num_flop_terms, kernel.flop_terms))
        return bad("kernel '" + std::string(kernel.name) +
                   "' has a flop table of count " +
                   std::to_string(kernel.num_flop_terms) + " and pointer " +
                   (kernel.flop_terms ? "set" : "NULL"));
      for (int32_t t = 0; t < kernel.num_flop_terms; ++t) {
        const attn_model_flop_term &term = kernel.flop_terms[t];
        bool ok = term.num_symbols >= 0 &&
                  term.num_symbols <= ATTN_MODEL_MAX_FLOP_SYMBOLS &&
                  std::isfinite(term.coeff) && term.coeff >= 0;
        for (int32_t i = 0; ok && i < term.num_symbols; ++i)
          ok = term.symbols[i] >= 0 && term.symbols[i] < d.num_symbols;
        if (!ok)
          return bad("kernel '" + std::string(kernel.name) + "' flop term " +
                     std::to_string(t) +
                     " has a bad coefficient or symbol list");
      }
    }
    return ATTN_OK;
  }

  attn_status checkEntries() {
    std::set<std::string> names;
    for (int32_t e = 0; e < d.num_entries; ++e) {
      const attn_model_entry &entry = d.entries[e];
      if (!entry.name || !*entry.name)
        return bad("entry " + std::to_string(e) + " has no name");
      if (!names.insert(entry.name).second)
        return bad("entry name '" + std::string(entry.name) +
                   "' is used twice");
      if (attn_status s = checkEntry(entry); s != ATTN_OK)
        return s;
    }
    const attn_model_entry *run = findEntry(d, "run");
    if (!run)
      return bad("it has no entry point named 'run'");
    if (run->num_outputs == 0)
      return bad("the model has no outputs");
    if (const attn_model_entry *init = findEntry(d, "init")) {
      if (init->num_inputs || init->num_outputs)
        return bad("entry 'init' has inputs or outputs");
      for (int32_t b = 0; b < init->num_buffers; ++b)
        for (int32_t k = 0; k < init->buffers[b].rank; ++k)
          if (init->buffers[b].dims[k].num_terms)
            return bad("entry 'init' buffer " + std::to_string(b) +
                       " has a symbolic dim");
    }
    return ATTN_OK;
  }

  attn_status checkEntry(const attn_model_entry &entry) {
    std::string where = "entry '" + std::string(entry.name) + "'";
    struct {
      const char *name;
      int32_t count;
      const void *table;
    } tables[] = {{"inputs", entry.num_inputs, entry.inputs},
                  {"outputs", entry.num_outputs, entry.outputs},
                  {"buffers", entry.num_buffers, entry.buffers},
                  {"steps", entry.num_steps, entry.steps}};
    for (const auto &t : tables)
      if (!tableOk(t.count, t.table))
        return badTable(where + " " + t.name, t.count, t.table);
    for (int32_t b = 0; b < entry.num_buffers; ++b)
      if (attn_status s = checkBuffer(entry, b); s != ATTN_OK)
        return s;
    if (attn_status s = checkTensors(entry, true); s != ATTN_OK)
      return s;
    if (attn_status s = checkTensors(entry, false); s != ATTN_OK)
      return s;
    return checkSteps(entry);
  }

  attn_status checkBuffer(const attn_model_entry &entry, int32_t b) {
    const attn_model_buffer &buf = entry.buffers[b];
    std::string where =
        "entry '" + std::string(entry.name) + "' buffer " + std::to_string(b);
    if (buf.kind < ATTN_MODEL_BUFFER_INPUT ||
        buf.kind > ATTN_MODEL_BUFFER_STATE)
      return bad(where + " has unknown kind " + std::to_string(buf.kind));
    if (attn_status s = checkHeader(where, buf.dtype, buf.rank, buf.dims);
        s != ATTN_OK)
      return s;
    if (attn_status s = checkDims(where, buf.rank, buf.dims); s != ATTN_OK)
      return s;
    switch (buf.kind) {
    case ATTN_MODEL_BUFFER_CONSTANT:
      return checkConstantBuffer(where, buf);
    case ATTN_MODEL_BUFFER_WEIGHT:
      return checkWeightBuffer(where, buf);
    case ATTN_MODEL_BUFFER_STATE:
      if (buf.index < 0 || buf.index >= d.num_states)
        return bad(where + " refers to state " + std::to_string(buf.index) +
                   " of " + std::to_string(d.num_states));
      return ATTN_OK;
    default:
      return ATTN_OK;
    }
  }

  attn_status checkConstantBuffer(const std::string &where,
                                  const attn_model_buffer &buf) {
    std::vector<int64_t> dims(buf.rank);
    for (int32_t k = 0; k < buf.rank; ++k) {
      if (buf.dims[k].num_terms)
        return bad(where + " is a constant with a symbolic dim");
      dims[k] = buf.dims[k].constant;
    }
    std::optional<uint64_t> bytes =
        byteSize(dims.data(), buf.rank, attn_dtype_lookup(buf.dtype)->size);
    if (!bytes)
      return bad(where + " has a size that overflows");
    if (buf.offset % 64 != 0)
      return bad(where + " has constant offset " + std::to_string(buf.offset) +
                 ", not 64-byte aligned");
    if (buf.offset > d.constants_size || *bytes > d.constants_size - buf.offset)
      return bad(where + " takes constant bytes [" +
                 std::to_string(buf.offset) + ", +" + std::to_string(*bytes) +
                 ") of a " + std::to_string(d.constants_size) +
                 "-byte constants block");
    return ATTN_OK;
  }

  attn_status checkWeightBuffer(const std::string &where,
                                const attn_model_buffer &buf) {
    if (buf.index < 0 || buf.index >= d.num_weights)
      return bad(where + " refers to weight " + std::to_string(buf.index) +
                 " of " + std::to_string(d.num_weights));
    const attn_model_weight &w = d.weights[buf.index];
    bool same = buf.dtype == w.dtype && buf.rank == w.rank;
    for (int32_t k = 0; same && k < buf.rank; ++k)
      same = buf.dims[k].num_terms == 0 && buf.dims[k].constant == w.dims[k];
    if (!same)
      return bad(where + " is weight '" + w.name + "' as " +
                 dtypeName(buf.dtype) + " " + declaredDims(d, buf) +
                 " but the weights table declares it " + dtypeName(w.dtype) +
                 " " + dimsString(w.dims, w.rank));
    return ATTN_OK;
  }

  /// An entry's inputs and outputs map one to one onto its INPUT/OUTPUT
  /// buffers.
  attn_status checkTensors(const attn_model_entry &entry, bool inputs) {
    std::string prefix = "entry '" + std::string(entry.name) + "' ";
    const char *what = inputs ? "input" : "output";
    int32_t count = inputs ? entry.num_inputs : entry.num_outputs;
    const attn_model_tensor *table = inputs ? entry.inputs : entry.outputs;
    int32_t kind = inputs ? ATTN_MODEL_BUFFER_INPUT : ATTN_MODEL_BUFFER_OUTPUT;
    std::set<std::string> names;
    for (int32_t i = 0; i < count; ++i) {
      const attn_model_tensor &t = table[i];
      std::string where = prefix + what + " " + std::to_string(i);
      if (!t.name || !*t.name)
        return bad(where + " has no name");
      if (!names.insert(t.name).second)
        return bad(prefix + what + " name '" + t.name + "' is used twice");
      if (t.buffer < 0 || t.buffer >= entry.num_buffers)
        return bad(where + " ('" + t.name + "') refers to buffer " +
                   std::to_string(t.buffer) + " of " +
                   std::to_string(entry.num_buffers));
      const attn_model_buffer &buf = entry.buffers[t.buffer];
      if (buf.kind != kind || buf.index != i)
        return bad(where + " ('" + t.name + "') refers to buffer " +
                   std::to_string(t.buffer) + ", which is not " + what + " " +
                   std::to_string(i));
    }
    for (int32_t b = 0; b < entry.num_buffers; ++b) {
      const attn_model_buffer &buf = entry.buffers[b];
      if (buf.kind == kind &&
          (buf.index < 0 || buf.index >= count || table[buf.index].buffer != b))
        return bad(prefix + "buffer " + std::to_string(b) + " claims to be " +
                   what + " " + std::to_string(buf.index) +
                   ", which does not name it");
    }
    return ATTN_OK;
  }

  attn_status checkSteps(const attn_model_entry &entry) {
    bool init = std::string_view(entry.name) == "init";
    for (int32_t s = 0; s < entry.num_steps; ++s) {
      const attn_model_step &step = entry.steps[s];
      std::string where =
          "entry '" + std::string(entry.name) + "' step " + std::to_string(s);
      if (step.kernel < 0 || step.kernel >= d.num_kernels)
        return bad(where + " calls kernel " + std::to_string(step.kernel) +
                   " of " + std::to_string(d.num_kernels));
      const attn_model_kernel &k = d.kernels[step.kernel];
      int32_t numArgs = k.num_inputs + k.num_outputs;
      if (step.num_args != numArgs || !tableOk(step.num_args, step.args))
        return bad(where + " passes " + std::to_string(step.num_args) +
                   " arguments to kernel '" + k.name + "', which takes " +
                   std::to_string(numArgs));
      for (int32_t a = 0; a < step.num_args; ++a) {
        int32_t b = step.args[a];
        if (b < 0 || b >= entry.num_buffers)
          return bad(where + " argument " + std::to_string(a) +
                     " refers to buffer " + std::to_string(b) + " of " +
                     std::to_string(entry.num_buffers));
        int32_t kind = entry.buffers[b].kind;
        // Kernels write outputs, temps and state; only "init" writes the
        // constants, and weights and inputs are the caller's, read-only.
        bool writable = kind == ATTN_MODEL_BUFFER_OUTPUT ||
                        kind == ATTN_MODEL_BUFFER_TEMP ||
                        kind == ATTN_MODEL_BUFFER_STATE ||
                        (init && kind == ATTN_MODEL_BUFFER_CONSTANT);
        if (a >= k.num_inputs && !writable)
          return bad(where + " lets kernel '" + k.name + "' write buffer " +
                     std::to_string(b) + ", a " + kindName(kind) +
                     " buffer it must not write");
      }
    }
    return ATTN_OK;
  }

  static const char *kindName(int32_t kind) {
    switch (kind) {
    case ATTN_MODEL_BUFFER_INPUT:
      return "INPUT";
    case ATTN_MODEL_BUFFER_OUTPUT:
      return "OUTPUT";
    case ATTN_MODEL_BUFFER_CONSTANT:
      return "CONSTANT";
    case ATTN_MODEL_BUFFER_TEMP:
      return "TEMP";
    case ATTN_MODEL_BUFFER_WEIGHT:
      return "WEIGHT";
    default:
      return "STATE";
    }
  }

  /// Embedded constants, or an "init" entry that computes them from the
  /// weights: never both.
  attn_status checkConstants() {
    bool hasInit = findEntry(d, "init") != nullptr;
    if (d.constants) {
      if (reinterpret_cast<uintptr_t>(d.constants) % 64 != 0)
        return bad("the embedded constants block is not 64-byte aligned");
      if (hasInit)
        return bad("it embeds its constants and has an 'init' entry that "
                   "would compute them");
      if (d.num_weights)
        return bad("it embeds its constants and reads " +
                   std::to_string(d.num_weights) + " weights at load");
    } else if (d.constants_size > 0 && !hasInit) {
      return bad("its " + std::to_string(d.constants_size) +
                 "-byte constants block is neither embedded nor computed by "
                 "an 'init' entry");
    }
    return ATTN_OK;
  }

  /// Output and temp sizes are computed from the inputs alone, so every
  /// symbol a "run" buffer uses must be bound by an input dim that is
  /// exactly that symbol.
  attn_status checkRunSymbolsBound() {
    const attn_model_entry &run = *findEntry(d, "run");
    std::vector<bool> bound(d.num_symbols, false);
    for (int32_t b = 0; b < run.num_buffers; ++b)
      if (run.buffers[b].kind == ATTN_MODEL_BUFFER_INPUT)
        for (int32_t k = 0; k < run.buffers[b].rank; ++k)
          if (const attn_model_dim &dim = run.buffers[b].dims[k];
              dim.num_terms == 1 && dim.terms[0].coeff == 1 &&
              dim.constant == 0)
            bound[dim.terms[0].symbol] = true;
    for (int32_t b = 0; b < run.num_buffers; ++b)
      for (int32_t k = 0; k < run.buffers[b].rank; ++k) {
        const attn_model_dim &dim = run.buffers[b].dims[k];
        for (int32_t t = 0; t < dim.num_terms; ++t)
          if (!bound[dim.terms[t].symbol])
            return bad("entry 'run' buffer " + std::to_string(b) +
                       " uses symbol " + d.symbols[dim.terms[t].symbol].name +
                       ", which no input dim binds");
      }
    return ATTN_OK;
  }

  const attn_model_desc &d;
  std::string path;
};

/// attn_dim_info of each dim of `t`. An affine dim (S + 1, 2*S) reads as
/// dynamic with its first term's symbol and no bound: the struct has no
/// room for the form, and the symbol's bound is not the dim's.
std::vector<attn_dim_info> dimInfos(const attn_model_desc &d,
                                    const attn_model_buffer &buf) {
  std::vector<attn_dim_info> infos;
  for (int32_t i = 0; i < buf.rank; ++i) {
    const attn_model_dim &dim = buf.dims[i];
    if (dim.num_terms == 0) {
      infos.push_back({0, dim.constant, nullptr, 0});
      continue;
    }
    const attn_model_symbol &sym = d.symbols[dim.terms[0].symbol];
    bool plain =
        dim.num_terms == 1 && dim.terms[0].coeff == 1 && dim.constant == 0;
    infos.push_back({1, -1, sym.name, plain ? sym.max : 0});
  }
  return infos;
}

} // namespace

attn_status validateDescriptor(const attn_model_desc &desc,
                               const std::string &path) {
  return Validator(desc, path).run();
}

void adoptDescriptor(attn_model &model, const attn_model_desc &desc) {
  model.desc = &desc;
  model.run = findEntry(desc, "run");
  model.init = findEntry(desc, "init");
  const attn_model_entry &run = *model.run;
  for (int32_t i = 0; i < run.num_inputs; ++i)
    model.inputDims.push_back(
        dimInfos(desc, run.buffers[run.inputs[i].buffer]));
  for (int32_t e = 0; e < desc.num_entries; ++e) {
    const attn_model_entry &entry = desc.entries[e];
    std::vector<std::vector<attn_dim_info>> &dims =
        model.entryInputDims.emplace_back();
    for (int32_t i = 0; i < entry.num_inputs; ++i)
      dims.push_back(dimInfos(desc, entry.buffers[entry.inputs[i].buffer]));
  }
  for (int32_t i = 0; i < run.num_outputs; ++i)
    model.outputDims.push_back(
        dimInfos(desc, run.buffers[run.outputs[i].buffer]));
  for (int32_t i = 0; i < desc.num_states; ++i) {
    const attn_model_state &st = desc.states[i];
    attn_model_buffer buf{
        ATTN_MODEL_BUFFER_STATE, i, st.dtype, st.rank, st.dims, 0};
    model.stateDims.push_back(dimInfos(desc, buf));
  }
  for (int32_t i = 0; i < desc.num_weights; ++i) {
    const attn_model_weight &w = desc.weights[i];
    std::vector<attn_dim_info> &infos = model.weightDims.emplace_back();
    for (int32_t d = 0; d < w.rank; ++d)
      infos.push_back({0, w.dims[d], nullptr, 0});
  }
}

const attn_model_entry *findEntry(const attn_model_desc &desc,
                                  const char *name) {
  for (int32_t e = 0; e < desc.num_entries; ++e)
    if (desc.entries[e].name && std::string_view(desc.entries[e].name) == name)
      return &desc.entries[e];
  return nullptr;
}

attn_status loadModel(const char *path, const char *weights, uint32_t flags,
                      attn_model *&out) {
  const bool describeOnly = flags & ATTN_LOAD_DESCRIBE_ONLY;
  std::string p = path;
  struct stat st;
  if (::stat(path, &st) != 0)
    return fail(ATTN_ERROR_IO, "cannot open model library '" + p +
                                   "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return fail(ATTN_ERROR_IO, "cannot open model library '" + p +
                                   "': it is a directory: give the .so file "
                                   "that attnc built");
  if (::access(path, R_OK) != 0)
    return fail(ATTN_ERROR_IO, "cannot read model library '" + p +
                                   "': " + std::strerror(errno) +
                                   ": check its permissions");
  // dlopen of a truncated or foreign file can crash the process.
  if (std::string problem = libraryProblem(p); !problem.empty())
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                "'" + p + "' is not a loadable model library: " + problem +
                    ": give the .so that attnc built, or rebuild it");
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
    for (const EarlierEntry &earlier : kEarlierEntries)
      if (::dlsym(handle, earlier.symbol))
        return fail(ATTN_ERROR_ABI_MISMATCH,
                    "'" + p + "' was built by an earlier attnc for " +
                        earlier.abis + " (it exports " + earlier.symbol +
                        "); " + rebuildForThisAbi());
  if (!entry)
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                "'" + p + "' is not an attnc model: it exports no " +
                    ATTN_MODEL_ENTRY_SYMBOL + ": build it with attnc");
  // Called below: a symbol of that name that is data, not code, would be
  // a jump into it.
  Dl_info where;
  void *symbolEntry = nullptr;
  if (!::dladdr1(reinterpret_cast<void *>(entry), &where, &symbolEntry,
                 RTLD_DL_SYMENT) ||
      !symbolEntry ||
      ELF64_ST_TYPE(static_cast<const ElfW(Sym) *>(symbolEntry)->st_info) !=
          STT_FUNC)
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                "'" + p + "' is not an attnc model: its " +
                    ATTN_MODEL_ENTRY_SYMBOL +
                    " is not a function: build it with attnc");
  const attn_model_desc *desc = entry();
  if (!desc || desc->magic != ATTN_MODEL_MAGIC)
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                "'" + p + "' is not an attnc model: its descriptor " +
                    (desc ? "has the wrong magic number" : "is NULL") +
                    ": build it with attnc");
  if (desc->abi_version != ATTN_MODEL_ABI_VERSION)
    return fail(ATTN_ERROR_ABI_MISMATCH, "'" + p +
                                             "' was built for model ABI " +
                                             std::to_string(desc->abi_version) +
                                             "; " + rebuildForThisAbi());
  if (attn_status s = validateDescriptor(*desc, p); s != ATTN_OK)
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
  // Only where the CPU has AMX: elsewhere a multi-target library's
  // Sapphire Rapids variant is never picked, and its baseline was checked.
  if (mayUseAmx(desc->target) && cpuHas("amx-tile") && !requestAmx())
    return fail(ATTN_ERROR_UNSUPPORTED_CPU,
                "'" + p + "' was built for " + desc->target +
                    ", whose kernels may use AMX tiles, and the OS refused "
                    "them to this process (arch_prctl ARCH_REQ_XCOMP_PERM; "
                    "Linux 5.16 or later grants them): rebuild it with "
                    "attnc --target=" +
                    portableTarget() + " or x86-64-linux-avx512_zen4");
  // Before "init" runs its kernels on the library's GPU, if it has one. A
  // model loaded only to be described needs none.
  if (!describeOnly)
    if (attn_status s = checkDevice(desc->target, p, systemDrivers());
        s != ATTN_OK)
      return s;
  adoptDescriptor(*model, *desc);
  // A model loaded to be described reads no weights and runs no "init":
  // its runs are refused (run.cpp), its queries need neither.
  model->describeOnly = describeOnly;
  if (!describeOnly) {
    if (attn_status s =
            loadWeights(*model, weights, flags & ATTN_LOAD_CHECK_WEIGHTS);
        s != ATTN_OK)
      return s;
    if (attn_status s = uploadConstants(*model); s != ATTN_OK)
      return s;
  }
  out = model.release();
  return ATTN_OK;
}

} // namespace attn::rt

attn_model::~attn_model() {
  // Workspaces hold device buffers of the library: freed before it closes.
  idleWorkspaces.clear();
  for (const auto &[native, allocation] : deviceMemory)
    attn::rt::freeDeviceBuffer(*desc, allocation.handle);
  for (uint64_t handle : deviceWeights)
    attn::rt::freeDeviceBuffer(*desc, handle);
  for (const auto &[offset, handle] : deviceConstants)
    attn::rt::freeDeviceBuffer(*desc, handle);
  std::free(ownedConstants);
  for (void *copy : weightCopies)
    std::free(copy);
  if (handle)
    ::dlclose(handle);
}
