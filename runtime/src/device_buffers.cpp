//===- runtime/src/device_buffers.cpp - buffers on the device -------------===//
#include "device_buffers.h"

#include "device_memory.h"

#include "attn/dtypes.h"

#include <algorithm>

namespace attn::rt {
namespace {

/// The bytes of a buffer: weights and constants sized at load, temps by
/// planArena, inputs, outputs and states the caller's memory.
uint64_t bytesOf(int32_t dtype, const std::vector<int64_t> &dims) {
  return *byteSize(dims, attn_dtype_lookup(dtype)->size);
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

/// Whether the caller gave buffer `buf` in device memory.
bool callerOnDevice(const attn_model_buffer &buf, const Binding &binding) {
  uint32_t bit = buf.kind == ATTN_MODEL_BUFFER_INPUT    ? ATTN_ON_DEVICE_INPUTS
                 : buf.kind == ATTN_MODEL_BUFFER_OUTPUT ? ATTN_ON_DEVICE_OUTPUTS
                 : buf.kind == ATTN_MODEL_BUFFER_STATE  ? ATTN_ON_DEVICE_STATES
                                                        : 0;
  return binding.deviceTensors & bit;
}

/// The caller's name for buffer `b`: "input 'ids'", or bufferName.
std::string callerName(const attn_model_desc &d, const attn_model_entry &entry,
                       int32_t b) {
  const attn_model_buffer &buf = entry.buffers[b];
  if (buf.kind == ATTN_MODEL_BUFFER_STATE)
    return "state '" + std::string(d.states[buf.index].name) + "'";
  if (buf.kind == ATTN_MODEL_BUFFER_INPUT)
    return "input '" + std::string(entry.inputs[buf.index].name) + "'";
  if (buf.kind == ATTN_MODEL_BUFFER_OUTPUT)
    return "output '" + std::string(entry.outputs[buf.index].name) + "'";
  return bufferName(entry, b);
}

} // namespace

bool runsOnDevice(const attn_model &model, const attn_model_entry &entry) {
  return model.desc->device != ATTN_MODEL_DEVICE_HOST && &entry != model.init;
}

uint64_t arenaAlignment(const attn_model &model,
                        const attn_model_entry &entry) {
  return runsOnDevice(model, entry) ? 4096 : 64;
}

namespace {

void releaseCrops(const attn_model_desc &d, EntryState &state) {
  DeviceCall call;
  for (uint64_t crop : state.tempCrops)
    if (crop)
      d.device_api->release_crop(&call.context, crop);
  state.tempCrops.clear();
  state.cropSymbols.clear();
}

/// The temps of `plan` as crops of the workspace's arena, which grows to
/// the plan's. The arena has 4096 bytes to spare, so that a crop of an
/// empty temp (64 bytes, as its own allocation had) never passes its end.
attn_status placeTemps(const attn_model_desc &d, const attn_model_entry &entry,
                       EntryState &state, const ArenaPlan &plan) {
  if (state.lifetimes.empty())
    return ATTN_OK;
  uint64_t bytes = plan.arenaBytes + 4096;
  EntryState::DeviceBuffer &arena = state.deviceArena;
  if (!arena.handle || arena.bytes < bytes) {
    releaseCrops(d, state);
    freeDeviceBuffer(d, arena.handle);
    arena = {};
    if (attn_status s =
            allocateDevice(d, bytes, arena.handle,
                           "the temporaries of entry '" +
                               std::string(entry.name) + "' (their arena)");
        s != ATTN_OK)
      return s;
    arena.bytes = bytes;
  }
  if (!state.tempCrops.empty() && state.cropSymbols == plan.symbols)
    return ATTN_OK;
  releaseCrops(d, state);
  state.tempCrops.assign(entry.num_buffers, 0);
  for (const TempLifetime &life : state.lifetimes) {
    const attn_model_buffer &buf = entry.buffers[life.buffer];
    uint64_t tempBytes = std::max<uint64_t>(
        bytesOf(buf.dtype, plan.bufferDims[life.buffer]), 64);
    DeviceCall call;
    if (d.device_api->crop(&call.context, arena.handle,
                           plan.offsets[life.buffer], tempBytes,
                           &state.tempCrops[life.buffer]) != 0 ||
        !state.tempCrops[life.buffer]) {
      state.tempCrops[life.buffer] = 0;
      return fail(ATTN_ERROR_KERNEL_FAILED,
                  "model '" + std::string(d.model_name) +
                      "': cannot place temporary buffer " +
                      std::to_string(life.buffer) + " of entry '" + entry.name +
                      "' in its arena on the device: " + call.message());
    }
  }
  state.cropSymbols = plan.symbols;
  return ATTN_OK;
}

} // namespace

void releaseDeviceBuffers(const attn_model_desc &desc, EntryState &state) {
  releaseCrops(desc, state);
  freeDeviceBuffer(desc, state.deviceArena.handle);
  state.deviceArena = {};
  for (const EntryState::DeviceBuffer &buffer : state.device)
    freeDeviceBuffer(desc, buffer.handle);
  state.device.clear();
}

attn_status uploadConstants(attn_model &model) {
  const attn_model_desc &d = *model.desc;
  if (d.device == ATTN_MODEL_DEVICE_HOST)
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
      if (attn_status s = allocateDevice(d, bytes, *handle, what); s != ATTN_OK)
        return s;
      if (attn_status s = copyDevice(d, true, *handle, const_cast<void *>(host),
                                     bytes, what);
          s != ATTN_OK)
        return s;
    }
  }
  return ATTN_OK;
}

attn_status bindDeviceBuffers(const attn_model &model,
                              const attn_model_entry &entry, EntryState &state,
                              const ArenaPlan &plan, const Binding &binding,
                              const std::vector<const attn_tensor *> &outputs) {
  const attn_model_desc &d = *model.desc;
  state.deviceOwner = &d;
  // A workspace serves any entry (prefill, then decode): its buffers are
  // indexed by the entry's buffers, so another entry starts afresh.
  if (state.deviceEntry != &entry) {
    releaseDeviceBuffers(d, state);
    state.hostCopies.clear();
    state.deviceEntry = &entry;
  }
  if (attn_status s = placeTemps(d, entry, state, plan); s != ATTN_OK)
    return s;
  state.device.resize(entry.num_buffers);
  state.callerHandles.assign(entry.num_buffers, 0);
  state.copiedInputs.clear();
  for (int32_t b = 0; b < entry.num_buffers; ++b) {
    const attn_model_buffer &buf = entry.buffers[b];
    if (buf.kind == ATTN_MODEL_BUFFER_CONSTANT ||
        buf.kind == ATTN_MODEL_BUFFER_WEIGHT ||
        buf.kind == ATTN_MODEL_BUFFER_TEMP)
      continue;
    uint64_t bytes = bytesOf(buf.dtype, plan.bufferDims[b]);
    if (callerOnDevice(buf, binding)) {
      bool wrapped = false;
      uint64_t native =
          reinterpret_cast<uintptr_t>(hostData(buf, binding, &outputs));
      if (attn_status s =
              nativeHandle(model, native, bytes, callerName(d, entry, b),
                           state.callerHandles[b], wrapped);
          s != ATTN_OK)
        return s;
      if (wrapped)
        state.wrapped.push_back(state.callerHandles[b]);
      continue;
    }
    EntryState::DeviceBuffer &dev = state.device[b];
    if (!dev.handle || dev.bytes < bytes) {
      freeDeviceBuffer(d, dev.handle);
      dev = {};
      if (attn_status s =
              allocateDevice(d, bytes, dev.handle, bufferName(entry, b));
          s != ATTN_OK)
        return s;
      dev.bytes = bytes;
    }
    if (buf.kind == ATTN_MODEL_BUFFER_INPUT ||
        buf.kind == ATTN_MODEL_BUFFER_STATE)
      if (attn_status s =
              copyDevice(d, true, dev.handle, hostData(buf, binding, nullptr),
                         bytes, bufferName(entry, b));
          s != ATTN_OK)
        return s;
  }
  return ATTN_OK;
}

void releaseCallerHandles(const attn_model_desc &desc, EntryState &state) {
  for (uint64_t handle : state.wrapped)
    unwrapDevice(desc, handle);
  state.wrapped.clear();
  state.callerHandles.clear();
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
  // write (ids a kernel computed), or an input the caller gave on the
  // device, is brought to the host when a step reads it: a few values.
  // Other buffers on the device have no host copy.
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
    if (!callerOnDevice(buf, binding)) {
      host = hostData(buf, binding, nullptr);
      handle = state.device[b].handle;
      break;
    }
    [[fallthrough]]; // the caller's data is on the device: no host copy
  default:
    handle = state.callerHandles[b] ? state.callerHandles[b]
             : buf.kind == ATTN_MODEL_BUFFER_TEMP && !state.tempCrops.empty()
                 ? state.tempCrops[b]
                 : state.device[b].handle;
    if (read && buf.dtype == ATTN_MODEL_I32) {
      std::vector<uint8_t> &hostCopy = state.hostCopies[b];
      // An input stays as it is for the whole run: one copy serves every
      // step that reads it (a position read by each layer's cache write).
      bool fresh = buf.kind == ATTN_MODEL_BUFFER_INPUT &&
                   !state.copiedInputs.insert(b).second;
      uint64_t bytes = bytesOf(buf.dtype, plan.bufferDims[b]);
      hostCopy.resize(bytes);
      if (!fresh)
        if (attn_status s = copyDevice(d, false, handle, hostCopy.data(), bytes,
                                       bufferName(entry, b));
            s != ATTN_OK)
          return s;
      host = hostCopy.data();
    }
    break;
  }
  view = {host,     buf.dtype, buf.rank, plan.bufferDims[b].data(),
          d.device, handle};
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
    if ((buf.kind != ATTN_MODEL_BUFFER_OUTPUT &&
         buf.kind != ATTN_MODEL_BUFFER_STATE) ||
        callerOnDevice(buf, binding))
      continue;
    if (attn_status s = copyDevice(
            d, false, state.device[b].handle, hostData(buf, binding, &outputs),
            bytesOf(buf.dtype, plan.bufferDims[b]), bufferName(entry, b));
        s != ATTN_OK)
      return s;
  }
  // Copies to the host wait for the kernels; tensors left on the device
  // are the caller's to read once the run returns.
  return binding.deviceTensors ? synchronizeDevice(model) : ATTN_OK;
}

} // namespace attn::rt
