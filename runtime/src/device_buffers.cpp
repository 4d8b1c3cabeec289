//===- runtime/src/device_buffers.cpp - buffers on the device -------------===//
#include "device_buffers.h"

#include "attn/dtypes.h"

#include <algorithm>

namespace attn::rt {
namespace {

/// The library's message for a failed device call, or a stand-in.
struct DeviceCall {
  char error[1024] = "";
  attn_model_context context{error, sizeof error};
  std::string message() {
    error[sizeof error - 1] = '\0';
    return *error ? error : "it gave no message";
  }
};

/// The bytes of a buffer: weights and constants sized at load, temps by
/// planArena, inputs, outputs and states the caller's memory.
uint64_t bytesOf(int32_t dtype, const std::vector<int64_t> &dims) {
  return *byteSize(dims, attn_dtype_lookup(dtype)->size);
}

/// Allocates `bytes` (at least 64) on the device into `handle`.
attn_status allocate(const attn_model_desc &d, uint64_t bytes, uint64_t &handle,
                     const std::string &what) {
  DeviceCall call;
  if (d.device_api->alloc(&call.context, std::max<uint64_t>(bytes, 64),
                          &handle) != 0 ||
      !handle)
    return fail(ATTN_ERROR_OUT_OF_MEMORY,
                "model '" + std::string(d.model_name) + "': cannot allocate " +
                    std::to_string(bytes) + " bytes of device memory for " +
                    what + ": " + call.message());
  return ATTN_OK;
}

attn_status copy(const attn_model_desc &d, bool toDevice, uint64_t handle,
                 void *host, uint64_t bytes, const std::string &what) {
  DeviceCall call;
  int32_t status =
      toDevice
          ? d.device_api->copy_to_device(&call.context, handle, host, bytes)
          : d.device_api->copy_to_host(&call.context, host, handle, bytes);
  if (status != 0)
    return fail(ATTN_ERROR_KERNEL_FAILED,
                "model '" + std::string(d.model_name) + "': cannot copy " +
                    what + (toDevice ? " to" : " from") +
                    " the device: " + call.message());
  return ATTN_OK;
}

/// The caller's memory behind an input, output or state buffer.
void *hostData(const attn_model_buffer &buf, const Binding &binding,
               const std::vector<const attn_tensor *> *outputs) {
  switch (buf.kind) {
  case ATTN_MODEL_BUFFER_INPUT:
    return binding.inputs[buf.index]->data;
  case ATTN_MODEL_BUFFER_STATE:
    return binding.states[buf.index]->data;
  case ATTN_MODEL_BUFFER_OUTPUT:
    return outputs ? (*outputs)[buf.index]->data : nullptr;
  default:
    return nullptr;
  }
}

std::string bufferName(const attn_model_entry &entry, int32_t b) {
  return "buffer " + std::to_string(b) + " of entry '" + entry.name + "'";
}

} // namespace

int32_t deviceOf(const attn_model_desc &desc) {
  return desc.abi_version >= 3 ? desc.device : ATTN_MODEL_DEVICE_HOST;
}

bool runsOnDevice(const attn_model &model, const attn_model_entry &entry) {
  return deviceOf(*model.desc) != ATTN_MODEL_DEVICE_HOST &&
         &entry != model.init;
}

void freeDeviceBuffer(const attn_model_desc &desc, uint64_t handle) {
  DeviceCall call;
  if (handle)
    desc.device_api->free(&call.context, handle);
}

attn_status uploadConstants(attn_model &model) {
  const attn_model_desc &d = *model.desc;
  if (deviceOf(d) == ATTN_MODEL_DEVICE_HOST)
    return ATTN_OK;
  model.deviceWeights.assign(d.num_weights, 0);
  for (int32_t e = 0; e < d.num_entries; ++e) {
    const attn_model_entry &entry = d.entries[e];
    if (!runsOnDevice(model, entry))
      continue;
    for (int32_t b = 0; b < entry.num_buffers; ++b) {
      const attn_model_buffer &buf = entry.buffers[b];
      uint64_t *handle = nullptr;
      const void *host = nullptr;
      std::vector<int64_t> dims;
      if (buf.kind == ATTN_MODEL_BUFFER_CONSTANT) {
        // Static dims: the load checked them.
        for (int32_t k = 0; k < buf.rank; ++k)
          dims.push_back(buf.dims[k].constant);
        handle = &model.deviceConstants[buf.offset];
        host = model.constants + buf.offset;
      } else if (buf.kind == ATTN_MODEL_BUFFER_WEIGHT) {
        const attn_model_weight &w = d.weights[buf.index];
        dims.assign(w.dims, w.dims + w.rank);
        handle = &model.deviceWeights[buf.index];
        host = model.weights[buf.index];
      } else {
        continue;
      }
      if (*handle)
        continue; // another buffer (or entry) reads the same one
      uint64_t bytes = bytesOf(buf.dtype, dims);
      std::string what = bufferName(entry, b);
      if (attn_status s = allocate(d, bytes, *handle, what); s != ATTN_OK)
        return s;
      if (attn_status s =
              copy(d, true, *handle, const_cast<void *>(host), bytes, what);
          s != ATTN_OK)
        return s;
    }
  }
  return ATTN_OK;
}

attn_status copyInputsToDevice(const attn_model &model,
                               const attn_model_entry &entry, EntryState &state,
                               const ArenaPlan &plan, const Binding &binding) {
  const attn_model_desc &d = *model.desc;
  state.deviceOwner = &d;
  // A workspace serves any entry (prefill, then decode): its buffers are
  // indexed by the entry's buffers, so another entry starts afresh.
  if (state.deviceEntry != &entry) {
    for (const EntryState::DeviceBuffer &buffer : state.device)
      freeDeviceBuffer(d, buffer.handle);
    state.device.clear();
    state.hostCopies.clear();
    state.deviceEntry = &entry;
  }
  state.device.resize(entry.num_buffers);
  for (int32_t b = 0; b < entry.num_buffers; ++b) {
    const attn_model_buffer &buf = entry.buffers[b];
    if (buf.kind == ATTN_MODEL_BUFFER_CONSTANT ||
        buf.kind == ATTN_MODEL_BUFFER_WEIGHT)
      continue;
    EntryState::DeviceBuffer &dev = state.device[b];
    uint64_t bytes = bytesOf(buf.dtype, plan.bufferDims[b]);
    if (!dev.handle || dev.bytes < bytes) {
      freeDeviceBuffer(d, dev.handle);
      dev = {};
      if (attn_status s = allocate(d, bytes, dev.handle, bufferName(entry, b));
          s != ATTN_OK)
        return s;
      dev.bytes = bytes;
    }
    if (buf.kind == ATTN_MODEL_BUFFER_INPUT ||
        buf.kind == ATTN_MODEL_BUFFER_STATE)
      if (attn_status s =
              copy(d, true, dev.handle, hostData(buf, binding, nullptr), bytes,
                   bufferName(entry, b));
          s != ATTN_OK)
        return s;
  }
  return ATTN_OK;
}

attn_status deviceView(const attn_model &model, const attn_model_entry &entry,
                       EntryState &state, const ArenaPlan &plan,
                       const Binding &binding, int32_t b, bool read,
                       attn_model_view &view) {
  const attn_model_desc &d = *model.desc;
  const attn_model_buffer &buf = entry.buffers[b];
  uint64_t handle = 0;
  // Inputs, constants and weights keep their host copy, equal to the
  // device's, for what a kernel checks on the host (token ids, lengths, a
  // cache position: every check reads i32). An i32 buffer that kernels
  // write (ids a kernel computed) is brought to the host when a step reads
  // it: a few values. Other buffers kernels write have no host copy.
  void *host = nullptr;
  switch (buf.kind) {
  case ATTN_MODEL_BUFFER_CONSTANT:
    handle = model.deviceConstants.at(buf.offset);
    host = const_cast<uint8_t *>(model.constants) + buf.offset;
    break;
  case ATTN_MODEL_BUFFER_WEIGHT:
    handle = model.deviceWeights[buf.index];
    host = const_cast<void *>(model.weights[buf.index]);
    break;
  case ATTN_MODEL_BUFFER_INPUT:
    host = hostData(buf, binding, nullptr);
    handle = state.device[b].handle;
    break;
  default:
    handle = state.device[b].handle;
    if (read && buf.dtype == ATTN_MODEL_I32) {
      std::vector<uint8_t> &hostCopy = state.hostCopies[b];
      uint64_t bytes = bytesOf(buf.dtype, plan.bufferDims[b]);
      hostCopy.resize(bytes);
      if (attn_status s = copy(d, false, handle, hostCopy.data(), bytes,
                               bufferName(entry, b));
          s != ATTN_OK)
        return s;
      host = hostCopy.data();
    }
    break;
  }
  view = {host,        buf.dtype, buf.rank, plan.bufferDims[b].data(),
          deviceOf(d), handle};
  return ATTN_OK;
}

attn_status copyOutputsToHost(const attn_model &model,
                              const attn_model_entry &entry,
                              const EntryState &state, const ArenaPlan &plan,
                              const Binding &binding,
                              const std::vector<const attn_tensor *> &outputs) {
  const attn_model_desc &d = *model.desc;
  for (int32_t b = 0; b < entry.num_buffers; ++b) {
    const attn_model_buffer &buf = entry.buffers[b];
    if (buf.kind != ATTN_MODEL_BUFFER_OUTPUT &&
        buf.kind != ATTN_MODEL_BUFFER_STATE)
      continue;
    if (attn_status s = copy(
            d, false, state.device[b].handle, hostData(buf, binding, &outputs),
            bytesOf(buf.dtype, plan.bufferDims[b]), bufferName(entry, b));
        s != ATTN_OK)
      return s;
  }
  return ATTN_OK;
}

attn_status synchronizeDevice(const attn_model &model) {
  DeviceCall call;
  if (model.desc->device_api->synchronize(&call.context) != 0)
    return fail(ATTN_ERROR_KERNEL_FAILED,
                "model '" + std::string(model.desc->model_name) +
                    "': the device failed: " + call.message());
  return ATTN_OK;
}

} // namespace attn::rt
