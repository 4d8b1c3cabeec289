//===- runtime/src/api.cpp - The attn_* C API edge ------------------------===//
//
// Checks the arguments of every C entry point and catches every C++
// exception before it can cross the C ABI: an allocation failure becomes
// ATTN_ERROR_OUT_OF_MEMORY, never an abort in the caller.
//
//===----------------------------------------------------------------------===//
#include "device_memory.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace attn::rt {
namespace {

thread_local std::string lastError;

/// Runs `body`, turning any exception into a status and message.
template <typename Body> attn_status guarded(const char *fn, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(ATTN_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory");
  } catch (const std::exception &e) {
    return fail(ATTN_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + e.what());
  }
}

/// ATTN_OK if a caller's struct (`param`, of type `type`) is large enough
/// for its leading `size` field; reports the fix otherwise.
attn_status checkStructSize(uint32_t size, const std::string &fn,
                            const char *param, const char *type) {
  if (size >= sizeof size)
    return ATTN_OK;
  return fail(ATTN_ERROR_INVALID_ARGUMENT,
              fn + ": " + param + "->size is " + std::to_string(size) +
                  ", too small for the size field itself: set it to sizeof(" +
                  type + ")");
}

attn_status tensorInfo(const attn_model *model, int32_t index, bool input,
                       attn_tensor_info *info, const char *fn) {
  if (!model || !info)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model and info must not be NULL");
  const attn_model_entry &e = *model->run;
  int32_t count = input ? e.num_inputs : e.num_outputs;
  if (index < 0 || index >= count)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": index " + std::to_string(index) +
                    " is out of range: model '" + model->desc->model_name +
                    "' has " + std::to_string(count) +
                    (input ? " inputs" : " outputs"));
  const attn_model_tensor &t = input ? e.inputs[index] : e.outputs[index];
  const attn_model_buffer &buf = e.buffers[t.buffer];
  info->name = t.name;
  info->dtype = buf.dtype;
  info->rank = buf.rank;
  info->dims =
      input ? model->inputDims[index].data() : model->outputDims[index].data();
  return ATTN_OK;
}

/// The entry point `name` a caller may run ("init" is the runtime's), or
/// null after reporting it, naming the entries there are.
const attn_model_entry *userEntry(const attn_model &model, const char *name,
                                  const std::string &fn) {
  const attn_model_desc &d = *model.desc;
  const attn_model_entry *entry = findEntry(d, name);
  if (entry && std::string_view(name) != "init")
    return entry;
  fail(ATTN_ERROR_INVALID_ARGUMENT,
       fn + ": model '" + d.model_name + "' has no entry '" + name + "'" +
           (d.num_states ? ": its entries are run, prefill and decode"
                         : ": it has only 'run' (declare a KV cache with "
                           "'state' for prefill and decode)"));
  return nullptr;
}

/// Refuses flags this runtime does not know (a newer caller's request it
/// would silently ignore) and a weights file given to a describe-only load.
attn_status checkLoadFlags(const attn_load_options &o, const char *fn) {
  if (uint32_t unknown =
          o.flags & ~(ATTN_LOAD_DESCRIBE_ONLY | ATTN_LOAD_CHECK_WEIGHTS))
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": options->flags has bits " +
                    std::to_string(unknown) +
                    " this runtime does not know: clear them, or use a "
                    "runtime that supports them");
  if ((o.flags & ATTN_LOAD_DESCRIBE_ONLY) && o.weights)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) +
                    ": ATTN_LOAD_DESCRIBE_ONLY reads no weights "
                    "but options->weights is '" +
                    o.weights +
                    "': give the weights file to run the model, or the flag "
                    "to only describe it");
  if ((o.flags & ATTN_LOAD_DESCRIBE_ONLY) &&
      (o.flags & ATTN_LOAD_CHECK_WEIGHTS))
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) +
                    ": ATTN_LOAD_DESCRIBE_ONLY reads no weights, so "
                    "ATTN_LOAD_CHECK_WEIGHTS has none to check: give one flag");
  return ATTN_OK;
}

} // namespace

attn_status fail(attn_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

const char *dtypeName(int32_t dtype) {
  const attn_dtype_desc *row = attn_dtype_lookup(dtype);
  return row ? row->name : "an unknown dtype";
}

const char *precisionName(int32_t precision) {
  switch (precision) {
  case ATTN_MODEL_PRECISION_F32:
    return "f32";
  case ATTN_MODEL_PRECISION_BF16:
    return "bf16";
  case ATTN_MODEL_PRECISION_INT8:
    return "int8";
  default:
    return nullptr;
  }
}

std::string dimsString(const int64_t *dims, int32_t rank) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string declaredDim(const attn_model_desc &desc,
                        const attn_model_dim &dim) {
  std::string s;
  for (int32_t t = 0; t < dim.num_terms; ++t) {
    int64_t coeff = dim.terms[t].coeff;
    if (coeff < 0)
      s += t ? " - " : "-";
    else if (t)
      s += " + ";
    if (coeff != 1 && coeff != -1)
      s += std::to_string(coeff < 0 ? -coeff : coeff) + "*";
    s += desc.symbols[dim.terms[t].symbol].name;
  }
  if (dim.num_terms == 0)
    return std::to_string(dim.constant);
  return dim.constant ? s + " + " + std::to_string(dim.constant) : s;
}

std::string declaredDims(const attn_model_desc &desc,
                         const attn_model_buffer &buffer) {
  std::string s = "[";
  for (int32_t i = 0; i < buffer.rank; ++i)
    s += (i ? ", " : "") + declaredDim(desc, buffer.dims[i]);
  return s + "]";
}

} // namespace attn::rt

using namespace attn::rt;

extern "C" {

ATTN_API const char *attn_last_error(void) { return lastError.c_str(); }

ATTN_API const char *attn_status_string(attn_status status) {
  switch (status) {
  case ATTN_OK:
    return "ok";
  case ATTN_ERROR_IO:
    return "I/O error";
  case ATTN_ERROR_INVALID_LIBRARY:
    return "invalid model library";
  case ATTN_ERROR_ABI_MISMATCH:
    return "model ABI mismatch";
  case ATTN_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case ATTN_ERROR_SHAPE_MISMATCH:
    return "shape mismatch";
  case ATTN_ERROR_DTYPE_MISMATCH:
    return "dtype mismatch";
  case ATTN_ERROR_DIM_OUT_OF_BOUNDS:
    return "dim out of bounds";
  case ATTN_ERROR_KERNEL_FAILED:
    return "kernel failed";
  case ATTN_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case ATTN_ERROR_UNSUPPORTED_CPU:
    return "unsupported CPU";
  case ATTN_ERROR_NO_DEVICE:
    return "no device";
  case ATTN_ERROR_NON_FINITE:
    return "non-finite weight";
  }
  return "unknown status";
}

ATTN_API uint32_t attn_runtime_abi_version(void) {
  return ATTN_MODEL_ABI_VERSION;
}

ATTN_API attn_status attn_model_load(const char *path, attn_model **model) {
  return attn_model_load_with_options(path, nullptr, model);
}

ATTN_API attn_status attn_model_load_with_options(
    const char *path, const attn_load_options *options, attn_model **model) {
  const char *fn = options ? "attn_model_load_with_options" : "attn_model_load";
  if (model)
    *model = nullptr;
  if (!path || !model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": path and model must not be NULL");
  // A caller built against another attn.h may know more or fewer fields:
  // read only options->size bytes, and take the rest as zero.
  attn_load_options o{};
  if (options) {
    if (attn_status s =
            checkStructSize(options->size, fn, "options", "attn_load_options");
        s != ATTN_OK)
      return s;
    std::memcpy(&o, options, std::min<std::size_t>(options->size, sizeof o));
  }
  if (attn_status s = checkLoadFlags(o, fn); s != ATTN_OK)
    return s;
  return guarded(fn,
                 [&] { return loadModel(path, o.weights, o.flags, *model); });
}

ATTN_API void attn_model_free(attn_model *model) { delete model; }

ATTN_API attn_status attn_model_get_info(const attn_model *model,
                                         attn_model_info *info) {
  if (!model || !info)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_get_info: model and info must not be NULL");
  // An older caller's struct is shorter: write only the `size` bytes it has.
  if (attn_status s = checkStructSize(info->size, "attn_model_get_info", "info",
                                      "attn_model_info");
      s != ATTN_OK)
    return s;
  attn_model_info i{};
  i.size = info->size;
  i.name = model->desc->model_name;
  i.compiler_version = model->desc->compiler_version;
  i.target = model->desc->target;
  i.path = model->path.c_str();
  i.precision = precisionName(model->desc->precision);
  std::memcpy(info, &i, std::min<std::size_t>(info->size, sizeof i));
  return ATTN_OK;
}

ATTN_API int32_t attn_model_num_inputs(const attn_model *model) {
  return model ? model->run->num_inputs : 0;
}

ATTN_API int32_t attn_model_num_outputs(const attn_model *model) {
  return model ? model->run->num_outputs : 0;
}

ATTN_API attn_status attn_model_input_info(const attn_model *model,
                                           int32_t index,
                                           attn_tensor_info *info) {
  return tensorInfo(model, index, true, info, "attn_model_input_info");
}

ATTN_API attn_status attn_model_output_info(const attn_model *model,
                                            int32_t index,
                                            attn_tensor_info *info) {
  return tensorInfo(model, index, false, info, "attn_model_output_info");
}

ATTN_API int32_t attn_model_num_weights(const attn_model *model) {
  return model ? model->desc->num_weights : 0;
}

ATTN_API attn_status attn_model_weight_info(const attn_model *model,
                                            int32_t index,
                                            attn_tensor_info *info) {
  const char *fn = "attn_model_weight_info";
  if (!model || !info)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model and info must not be NULL");
  int32_t count = model->desc->num_weights;
  if (index < 0 || index >= count)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": index " + std::to_string(index) +
                    " is out of range: model '" + model->desc->model_name +
                    "' reads " + std::to_string(count) + " weights at load");
  const attn_model_weight &w = model->desc->weights[index];
  info->name = w.name;
  info->dtype = w.dtype;
  info->rank = w.rank;
  info->dims = model->weightDims[index].data();
  return ATTN_OK;
}

ATTN_API attn_status attn_model_set_step_callback(attn_model *model,
                                                  attn_step_callback callback,
                                                  void *user) {
  if (!model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_set_step_callback: needs a model");
  model->stepCallback = callback;
  model->stepUser = callback ? user : nullptr;
  return ATTN_OK;
}

ATTN_API attn_status attn_model_set_threads(attn_model *model,
                                            int32_t threads) {
  if (!model || threads < 0)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_set_threads: needs a model and threads >= 0 "
                "(0: the default), got " +
                    std::to_string(threads));
  model->desc->set_num_threads(threads);
  return ATTN_OK;
}

ATTN_API attn_status attn_model_output_dims(const attn_model *model,
                                            const attn_tensor *inputs,
                                            int32_t num_inputs, int32_t output,
                                            int64_t *dims, int32_t max_rank) {
  if (!model || !dims)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_output_dims: model and dims must not be NULL");
  return guarded("attn_model_output_dims", [&] {
    const attn_model_desc &d = *model->desc;
    const attn_model_entry &e = *model->run;
    if (output < 0 || output >= e.num_outputs)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  "attn_model_output_dims: output " + std::to_string(output) +
                      " is out of range: model '" + d.model_name + "' has " +
                      std::to_string(e.num_outputs) + " outputs");
    const attn_model_buffer &buf = e.buffers[e.outputs[output].buffer];
    std::string where = "output '" + std::string(e.outputs[output].name) + "'";
    if (buf.rank > max_rank)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  "attn_model_output_dims: " + where + " has rank " +
                      std::to_string(buf.rank) + " but max_rank is " +
                      std::to_string(max_rank));
    Binding binding;
    if (attn_status s = bindInputs(*model, inputs, num_inputs, false, binding);
        s != ATTN_OK)
      return s;
    return resolveDims(d, buf, binding, where, dims);
  });
}

/// Copies the caller's `options` (NULL: the defaults) into `o`, reading only
/// the `size` bytes it says it has (an older caller's struct is shorter),
/// and returns the entry they name; NULL after reporting the error.
static const attn_model_entry *readRunOptions(const attn_model &model,
                                              const attn_run_options *options,
                                              const char *fn,
                                              attn_run_options &o) {
  o = attn_run_options{};
  if (options) {
    if (options->size < sizeof(uint32_t)) {
      fail(ATTN_ERROR_INVALID_ARGUMENT,
           std::string(fn) + ": options->size is " +
               std::to_string(options->size) +
               ": set it to sizeof(attn_run_options)");
      return nullptr;
    }
    std::memcpy(&o, options, std::min<std::size_t>(options->size, sizeof o));
  }
  return userEntry(model, o.entry ? o.entry : "run", fn);
}

ATTN_API attn_status attn_model_output_dims_with_options(
    const attn_model *model, const attn_run_options *options,
    const attn_tensor *inputs, int32_t num_inputs, int32_t output,
    int64_t *dims, int32_t max_rank) {
  constexpr const char *fn = "attn_model_output_dims_with_options";
  if (!model || !dims)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model and dims must not be NULL");
  attn_run_options o{};
  const attn_model_entry *entry = readRunOptions(*model, options, fn, o);
  if (!entry)
    return ATTN_ERROR_INVALID_ARGUMENT;
  return guarded(fn, [&] {
    const attn_model_desc &d = *model->desc;
    const attn_model_entry &e = *entry;
    if (output < 0 || output >= e.num_outputs)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(fn) + ": output " + std::to_string(output) +
                      " is out of range: model '" + d.model_name + "' has " +
                      std::to_string(e.num_outputs) + " outputs");
    const attn_model_buffer &buf = e.buffers[e.outputs[output].buffer];
    std::string where = "output '" + std::string(e.outputs[output].name) + "'";
    if (buf.rank > max_rank)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(fn) + ": " + where + " has rank " +
                      std::to_string(buf.rank) + " but max_rank is " +
                      std::to_string(max_rank));
    Binding binding;
    if (attn_status s = bindEntry(*model, e, inputs, num_inputs, o.states,
                                  o.num_states, false, binding);
        s != ATTN_OK)
      return s;
    return resolveDims(d, buf, binding, where, dims);
  });
}

ATTN_API attn_status attn_model_workspace_size(
    const attn_model *model, const attn_tensor *inputs, int32_t num_inputs,
    uint64_t *arena_bytes, uint64_t *largest_live_bytes, uint64_t *temp_bytes) {
  if (!model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_workspace_size: model must not be NULL");
  return guarded("attn_model_workspace_size", [&] {
    ArenaPlan plan;
    if (attn_status s = planWorkspace(*model, inputs, num_inputs, plan);
        s != ATTN_OK)
      return s;
    if (arena_bytes)
      *arena_bytes = plan.arenaBytes;
    if (largest_live_bytes)
      *largest_live_bytes = plan.largestLiveBytes;
    if (temp_bytes)
      *temp_bytes = plan.tempBytes;
    return ATTN_OK;
  });
}

ATTN_API attn_status attn_model_run(attn_model *model,
                                    const attn_tensor *inputs,
                                    int32_t num_inputs,
                                    const attn_tensor *outputs,
                                    int32_t num_outputs) {
  if (!model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_run: model must not be NULL");
  return guarded("attn_model_run", [&] {
    return runModel(*model, *model->run, inputs, num_inputs, nullptr, 0,
                    outputs, num_outputs, 0);
  });
}

ATTN_API int32_t attn_model_num_states(const attn_model *model) {
  return model ? model->desc->num_states : 0;
}

ATTN_API attn_status attn_model_state_info(const attn_model *model,
                                           int32_t index,
                                           attn_tensor_info *info) {
  if (!model || !info)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_state_info: needs a model and an info struct");
  const attn_model_desc &d = *model->desc;
  if (index < 0 || index >= d.num_states)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_state_info: state " + std::to_string(index) +
                    " is out of range: model '" + d.model_name + "' has " +
                    std::to_string(d.num_states) + " states");
  info->name = d.states[index].name;
  info->dtype = d.states[index].dtype;
  info->rank = d.states[index].rank;
  info->dims = model->stateDims[index].data();
  return ATTN_OK;
}

ATTN_API int32_t attn_model_has_entry(const attn_model *model,
                                      const char *name) {
  return model && name && findEntry(*model->desc, name) &&
         std::string_view(name) != "init";
}

ATTN_API int32_t attn_model_entry_num_inputs(const attn_model *model,
                                             const char *entry) {
  constexpr const char *fn = "attn_model_entry_num_inputs";
  if (!model || !entry) {
    fail(ATTN_ERROR_INVALID_ARGUMENT,
         std::string(fn) + ": model and entry must not be NULL");
    return -1;
  }
  const attn_model_entry *e = userEntry(*model, entry, fn);
  return e ? e->num_inputs : -1;
}

ATTN_API attn_status attn_model_entry_input_info(const attn_model *model,
                                                 const char *entry,
                                                 int32_t index,
                                                 attn_tensor_info *info) {
  constexpr const char *fn = "attn_model_entry_input_info";
  if (!model || !entry || !info)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model, entry and info must not be NULL");
  const attn_model_entry *e = userEntry(*model, entry, fn);
  if (!e)
    return ATTN_ERROR_INVALID_ARGUMENT;
  if (index < 0 || index >= e->num_inputs)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": index " + std::to_string(index) +
                    " is out of range: entry '" + entry + "' of model '" +
                    model->desc->model_name + "' has " +
                    std::to_string(e->num_inputs) + " inputs");
  const attn_model_tensor &t = e->inputs[index];
  const attn_model_buffer &buf = e->buffers[t.buffer];
  info->name = t.name;
  info->dtype = buf.dtype;
  info->rank = buf.rank;
  info->dims = model->entryInputDims[e - model->desc->entries][index].data();
  return ATTN_OK;
}

ATTN_API attn_status
attn_model_run_with_options(attn_model *model, const attn_run_options *options,
                            const attn_tensor *inputs, int32_t num_inputs,
                            const attn_tensor *outputs, int32_t num_outputs) {
  constexpr const char *fn = "attn_model_run_with_options";
  if (!model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model must not be NULL");
  attn_run_options o{};
  const attn_model_entry *entry = readRunOptions(*model, options, fn, o);
  if (!entry)
    return ATTN_ERROR_INVALID_ARGUMENT;
  return guarded(fn, [&] {
    return runModel(*model, *entry, inputs, num_inputs, o.states, o.num_states,
                    outputs, num_outputs, o.device_tensors);
  });
}

ATTN_API attn_status attn_model_device_info(attn_model *model,
                                            attn_device_info *info) {
  constexpr const char *fn = "attn_model_device_info";
  if (!model || !info)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model and info must not be NULL");
  if (info->size < sizeof(uint32_t))
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": info->size is " +
                    std::to_string(info->size) +
                    ": set it to sizeof(attn_device_info)");
  return guarded(fn, [&] {
    attn_device_info out{};
    attn_status s = describeDevice(*model, out);
    // Only the caller's `size` bytes; its own size stays as it set it.
    std::memcpy(reinterpret_cast<char *>(info) + sizeof(uint32_t),
                reinterpret_cast<const char *>(&out) + sizeof(uint32_t),
                std::min<std::size_t>(info->size, sizeof out) -
                    sizeof(uint32_t));
    return s;
  });
}

ATTN_API attn_status attn_model_device_alloc(attn_model *model, uint64_t bytes,
                                             void **memory) {
  constexpr const char *fn = "attn_model_device_alloc";
  if (!model || !memory)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model and memory must not be NULL");
  *memory = nullptr;
  return guarded(fn, [&] { return allocateForCaller(*model, bytes, *memory); });
}

ATTN_API attn_status attn_model_device_free(attn_model *model, void *memory) {
  constexpr const char *fn = "attn_model_device_free";
  if (!model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model must not be NULL");
  return guarded(fn, [&] { return freeForCaller(*model, memory); });
}

ATTN_API attn_status attn_model_copy_to_device(attn_model *model, void *memory,
                                               const void *host,
                                               uint64_t bytes) {
  constexpr const char *fn = "attn_model_copy_to_device";
  if (!model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model must not be NULL");
  return guarded(fn, [&] {
    return copyForCaller(*model, true, memory, const_cast<void *>(host), bytes,
                         fn);
  });
}

ATTN_API attn_status attn_model_copy_to_host(attn_model *model, void *host,
                                             const void *memory,
                                             uint64_t bytes) {
  constexpr const char *fn = "attn_model_copy_to_host";
  if (!model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model must not be NULL");
  return guarded(fn, [&] {
    return copyForCaller(*model, false, memory, host, bytes, fn);
  });
}

} // extern "C"
