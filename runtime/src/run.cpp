//===- runtime/src/run.cpp - Bind tensors and run the plan ----------------===//
//
// Every input and output is checked against the model before the first
// kernel runs: a kernel compiled for fixed shapes and bounds would otherwise
// read or write out of bounds.
//
//===----------------------------------------------------------------------===//
#include "model.h"

#include <cstdlib>
#include <limits>
#include <new>

namespace attn::rt {
namespace {

constexpr std::size_t TempAlignment = 64;

/// The element count of `dims`, or -1 when it overflows int64.
int64_t numElements(const int64_t *dims, int32_t rank) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] != 0 && n > std::numeric_limits<int64_t>::max() / dims[i])
      return -1;
    n *= dims[i];
  }
  return n;
}

std::string namesOf(const attn_model_tensor *table, int32_t count) {
  std::string s;
  for (int32_t i = 0; i < count; ++i)
    s += (i ? ", " : "") + std::string(table[i].name);
  return s;
}

/// Matches given tensors to the model's by name, or by position where the
/// name is NULL; each model tensor must be given exactly once.
attn_status matchTensors(const attn_model_desc &d, bool inputs,
                         const attn_tensor *given, int32_t numGiven,
                         std::vector<const attn_tensor *> &matched) {
  const char *what = inputs ? "input" : "output";
  int32_t count = inputs ? d.num_inputs : d.num_outputs;
  const attn_model_tensor *table = inputs ? d.inputs : d.outputs;
  std::string model = "model '" + std::string(d.model_name) + "'";
  if (numGiven != count || (numGiven > 0 && !given))
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                model + " has " + std::to_string(count) + " " + what + "s (" +
                    namesOf(table, count) + ") but " +
                    std::to_string(numGiven) + " were given");
  matched.assign(count, nullptr);
  for (int32_t i = 0; i < numGiven; ++i) {
    int32_t index = i;
    if (given[i].name) {
      index = -1;
      for (int32_t j = 0; j < count; ++j)
        if (std::string_view(table[j].name) == given[i].name)
          index = j;
      if (index < 0)
        return fail(ATTN_ERROR_INVALID_ARGUMENT,
                    model + " has no " + what + " named '" + given[i].name +
                        "': its " + what + "s are " + namesOf(table, count));
    }
    if (matched[index])
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(what) + " '" + table[index].name +
                      "' is given twice: give each once, by name or position");
    matched[index] = &given[i];
  }
  return ATTN_OK;
}

/// Checks a tensor's dtype, rank and pointers before its dims are read.
attn_status checkTensorHeader(const attn_model_desc &d,
                              const attn_model_buffer &buf,
                              const std::string &where, const attn_tensor &t,
                              bool needData) {
  if (t.dtype != buf.dtype)
    return fail(ATTN_ERROR_DTYPE_MISMATCH,
                where + " has dtype " + dtypeName(t.dtype) +
                    " but the model expects " + dtypeName(buf.dtype));
  if (t.rank != buf.rank)
    return fail(ATTN_ERROR_SHAPE_MISMATCH,
                where + " has rank " + std::to_string(t.rank) +
                    " but the model expects rank " + std::to_string(buf.rank) +
                    " " + declaredDims(d, buf));
  if (t.rank > 0 && !t.dims)
    return fail(ATTN_ERROR_INVALID_ARGUMENT, where + " has NULL dims");
  for (int32_t i = 0; i < t.rank; ++i)
    if (t.dims[i] < 0)
      return fail(ATTN_ERROR_SHAPE_MISMATCH,
                  where + " dim " + std::to_string(i) + " is negative (" +
                      std::to_string(t.dims[i]) + ")");
  int64_t n = numElements(t.dims, t.rank);
  if (n < 0)
    return fail(ATTN_ERROR_SHAPE_MISMATCH, where + " dims " +
                                               dimsString(t.dims, t.rank) +
                                               " overflow the element count");
  if (needData && n > 0 && !t.data)
    return fail(ATTN_ERROR_INVALID_ARGUMENT, where + " has NULL data");
  return ATTN_OK;
}

std::string bindingString(const attn_model_desc &d, const Binding &binding) {
  std::string s;
  for (int32_t i = 0; i < d.num_symbols; ++i)
    if (binding.symbols[i] >= 0)
      s += (s.empty() ? "" : ", ") + std::string(d.symbols[i].name) + "=" +
           std::to_string(binding.symbols[i]);
  return s;
}

/// Returns a 64-byte aligned block of at least `bytes`, reusing the last one
/// when it is big enough.
void *ensureTemp(TempBuffer &temp, std::size_t bytes) {
  if (bytes <= temp.capacity && temp.data)
    return temp.data;
  std::size_t rounded =
      (bytes + TempAlignment - 1) / TempAlignment * TempAlignment;
  if (rounded == 0)
    rounded = TempAlignment;
  void *p = nullptr;
  if (::posix_memalign(&p, TempAlignment, rounded) != 0)
    return nullptr;
  std::free(temp.data);
  temp.data = p;
  temp.capacity = rounded;
  return p;
}

} // namespace

attn_status bindInputs(const attn_model &model, const attn_tensor *inputs,
                       int32_t numInputs, bool needData, Binding &binding) {
  const attn_model_desc &d = *model.desc;
  if (attn_status s = matchTensors(d, true, inputs, numInputs, binding.inputs);
      s != ATTN_OK)
    return s;
  binding.symbols.assign(d.num_symbols, -1);
  // Where each symbol was first bound, for the inconsistency message.
  std::vector<std::pair<int32_t, int32_t>> boundAt(d.num_symbols);
  for (int32_t j = 0; j < d.num_inputs; ++j) {
    const attn_tensor &t = *binding.inputs[j];
    const attn_model_buffer &buf = d.buffers[d.inputs[j].buffer];
    std::string name = d.inputs[j].name;
    std::string where = "input '" + name + "'";
    if (attn_status s = checkTensorHeader(d, buf, where, t, needData);
        s != ATTN_OK)
      return s;
    for (int32_t i = 0; i < buf.rank; ++i) {
      const attn_model_dim &dim = buf.dims[i];
      std::string dimWhere = where + " dim " + std::to_string(i);
      int64_t v = t.dims[i];
      if (dim.symbol < 0) {
        if (v != dim.extent)
          return fail(ATTN_ERROR_SHAPE_MISMATCH,
                      dimWhere + " is " + std::to_string(v) +
                          " but the model fixes it to " +
                          std::to_string(dim.extent) + " (dims " +
                          declaredDims(d, buf) + ")");
        continue;
      }
      const attn_model_symbol &sym = d.symbols[dim.symbol];
      if (sym.max > 0 && v > sym.max)
        return fail(ATTN_ERROR_DIM_OUT_OF_BOUNDS,
                    dimWhere + " (" + sym.name + ") is " + std::to_string(v) +
                        ", beyond its bound " + sym.name +
                        " <= " + std::to_string(sym.max) +
                        ": split the input or recompile the model with a "
                        "larger bound");
      int64_t &value = binding.symbols[dim.symbol];
      if (value < 0) {
        value = v;
        boundAt[dim.symbol] = {j, i};
      } else if (value != v) {
        auto [firstInput, firstDim] = boundAt[dim.symbol];
        return fail(
            ATTN_ERROR_SHAPE_MISMATCH,
            std::string("symbol ") + sym.name + " is " + std::to_string(value) +
                " in input '" + d.inputs[firstInput].name + "' dim " +
                std::to_string(firstDim) + " but " + std::to_string(v) +
                " in " + dimWhere + ": give every input the same " + sym.name);
      }
    }
  }
  return ATTN_OK;
}

void resolveDims(const attn_model_buffer &buffer, const Binding &binding,
                 int64_t *dims) {
  for (int32_t i = 0; i < buffer.rank; ++i)
    dims[i] = buffer.dims[i].symbol < 0
                  ? buffer.dims[i].extent
                  : binding.symbols[buffer.dims[i].symbol];
}

attn_status runModel(attn_model &model, const attn_tensor *inputs,
                     int32_t numInputs, const attn_tensor *outputs,
                     int32_t numOutputs) {
  const attn_model_desc &d = *model.desc;
  Binding binding;
  if (attn_status s = bindInputs(model, inputs, numInputs, true, binding);
      s != ATTN_OK)
    return s;
  std::vector<const attn_tensor *> outs;
  if (attn_status s = matchTensors(d, false, outputs, numOutputs, outs);
      s != ATTN_OK)
    return s;
  for (int32_t j = 0; j < d.num_outputs; ++j) {
    const attn_tensor &t = *outs[j];
    const attn_model_buffer &buf = d.buffers[d.outputs[j].buffer];
    std::string where = "output '" + std::string(d.outputs[j].name) + "'";
    if (attn_status s = checkTensorHeader(d, buf, where, t, true); s != ATTN_OK)
      return s;
    int64_t want[ATTN_MAX_RANK];
    resolveDims(buf, binding, want);
    for (int32_t i = 0; i < buf.rank; ++i)
      if (t.dims[i] != want[i])
        return fail(
            ATTN_ERROR_SHAPE_MISMATCH,
            where + " has dims " + dimsString(t.dims, t.rank) +
                " but the inputs make it " + dimsString(want, buf.rank) + " (" +
                declaredDims(d, buf) + " with " + bindingString(d, binding) +
                "): size it with attn_model_output_dims");
  }

  std::lock_guard<std::mutex> lock(model.runMutex);
  for (int32_t b = 0; b < d.num_buffers; ++b) {
    const attn_model_buffer &buf = d.buffers[b];
    std::vector<int64_t> &dims = model.bufferDims[b];
    dims.resize(buf.rank);
    resolveDims(buf, binding, dims.data());
  }
  // Views are rebuilt per step; model.views keeps their storage across runs.
  for (int32_t s = 0; s < d.num_steps; ++s) {
    const attn_model_step &step = d.steps[s];
    model.views.resize(step.num_args);
    for (int32_t a = 0; a < step.num_args; ++a) {
      int32_t b = step.args[a];
      const attn_model_buffer &buf = d.buffers[b];
      const std::vector<int64_t> &dims = model.bufferDims[b];
      void *data = nullptr;
      switch (buf.kind) {
      case ATTN_MODEL_BUFFER_INPUT:
        data = binding.inputs[buf.index]->data;
        break;
      case ATTN_MODEL_BUFFER_OUTPUT:
        data = outs[buf.index]->data;
        break;
      case ATTN_MODEL_BUFFER_WEIGHT:
        // Kernels only read weights; the view type is shared with outputs.
        data = const_cast<uint8_t *>(d.weights + buf.weight_offset);
        break;
      case ATTN_MODEL_BUFFER_TEMP: {
        int64_t n = numElements(dims.data(), buf.rank);
        if (n < 0 || uint64_t(n) > SIZE_MAX / 4)
          return fail(ATTN_ERROR_OUT_OF_MEMORY,
                      "temporary buffer " + std::to_string(b) + " of dims " +
                          dimsString(dims.data(), buf.rank) +
                          " is too large: bound the model's symbols");
        data = ensureTemp(model.temps[b], std::size_t(n) * 4);
        if (!data)
          return fail(ATTN_ERROR_OUT_OF_MEMORY,
                      "cannot allocate " + std::to_string(n * 4) +
                          " bytes for temporary buffer " + std::to_string(b) +
                          " of dims " + dimsString(dims.data(), buf.rank));
        break;
      }
      }
      model.views[a] = {data, buf.dtype, buf.rank, dims.data()};
    }
    if (d.run_kernel(step.kernel, step.num_args, model.views.data()) != 0) {
      const char *err = d.last_error();
      return fail(
          ATTN_ERROR_KERNEL_FAILED,
          "model '" + std::string(d.model_name) + "': kernel '" +
              d.kernels[step.kernel].name + "' (step " + std::to_string(s) +
              ") failed: " + (err && *err ? err : "it gave no message"));
    }
  }
  return ATTN_OK;
}

} // namespace attn::rt
