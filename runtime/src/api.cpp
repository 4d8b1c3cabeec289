//===- runtime/src/api.cpp - The attn_* C API edge ------------------------===//
//
// Checks the arguments of every C entry point and catches every C++
// exception before it can cross the C ABI: an allocation failure becomes
// ATTN_ERROR_OUT_OF_MEMORY, never an abort in the caller.
//
//===----------------------------------------------------------------------===//
#include "model.h"

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

attn_status tensorInfo(const attn_model *model, int32_t index, bool input,
                       attn_tensor_info *info, const char *fn) {
  if (!model || !info)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": model and info must not be NULL");
  const attn_model_desc &d = *model->desc;
  int32_t count = input ? d.num_inputs : d.num_outputs;
  if (index < 0 || index >= count)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                std::string(fn) + ": index " + std::to_string(index) +
                    " is out of range: model '" + d.model_name + "' has " +
                    std::to_string(count) + (input ? " inputs" : " outputs"));
  const attn_model_tensor &t = input ? d.inputs[index] : d.outputs[index];
  const attn_model_buffer &buf = d.buffers[t.buffer];
  info->name = t.name;
  info->dtype = buf.dtype;
  info->rank = buf.rank;
  info->dims =
      input ? model->inputDims[index].data() : model->outputDims[index].data();
  return ATTN_OK;
}

} // namespace

attn_status fail(attn_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

const char *dtypeName(int32_t dtype) {
  switch (dtype) {
  case ATTN_F32:
    return "F32";
  case ATTN_I32:
    return "I32";
  default:
    return "an unknown dtype";
  }
}

std::string dimsString(const int64_t *dims, int32_t rank) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string declaredDims(const attn_model_desc &desc,
                         const attn_model_buffer &buffer) {
  std::string s = "[";
  for (int32_t i = 0; i < buffer.rank; ++i) {
    const attn_model_dim &dim = buffer.dims[i];
    s += i ? ", " : "";
    s += dim.symbol < 0 ? std::to_string(dim.extent)
                        : std::string(desc.symbols[dim.symbol].name);
  }
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
  }
  return "unknown status";
}

ATTN_API uint32_t attn_runtime_abi_version(void) {
  return ATTN_MODEL_ABI_VERSION;
}

ATTN_API attn_status attn_model_load(const char *path, attn_model **model) {
  if (model)
    *model = nullptr;
  if (!path || !model)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_load: path and model must not be NULL");
  return guarded("attn_model_load", [&] { return loadModel(path, *model); });
}

ATTN_API void attn_model_free(attn_model *model) { delete model; }

ATTN_API attn_status attn_model_get_info(const attn_model *model,
                                         attn_model_info *info) {
  if (!model || !info)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_model_get_info: model and info must not be NULL");
  info->name = model->desc->model_name;
  info->compiler_version = model->desc->compiler_version;
  info->target = model->desc->target;
  info->path = model->path.c_str();
  return ATTN_OK;
}

ATTN_API int32_t attn_model_num_inputs(const attn_model *model) {
  return model ? model->desc->num_inputs : 0;
}

ATTN_API int32_t attn_model_num_outputs(const attn_model *model) {
  return model ? model->desc->num_outputs : 0;
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
    if (output < 0 || output >= d.num_outputs)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  "attn_model_output_dims: output " + std::to_string(output) +
                      " is out of range: model '" + d.model_name + "' has " +
                      std::to_string(d.num_outputs) + " outputs");
    const attn_model_buffer &buf = d.buffers[d.outputs[output].buffer];
    if (buf.rank > max_rank)
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  "attn_model_output_dims: output '" +
                      std::string(d.outputs[output].name) + "' has rank " +
                      std::to_string(buf.rank) + " but max_rank is " +
                      std::to_string(max_rank));
    Binding binding;
    if (attn_status s = bindInputs(*model, inputs, num_inputs, false, binding);
        s != ATTN_OK)
      return s;
    resolveDims(buf, binding, dims);
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
    return runModel(*model, inputs, num_inputs, outputs, num_outputs);
  });
}

} // extern "C"
