//===- runtime/src/device_buffers.h - buffers on the device ----*- C++ -*-===//
//
// A library whose kernels run on a GPU (model ABI 3, `device` not HOST)
// keeps the buffers of its runs on that device, in allocations of its
// device_api: the constants block's pieces and the weights its kernels read
// are uploaded once at load; each workspace holds its temps, inputs, states
// and outputs there; only inputs and states go in, and outputs and states
// come out, once per run (runSteps). The "init" entry runs on host views,
// which the library copies per call: it runs once, at load.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_DEVICE_BUFFERS_H
#define ATTN_RUNTIME_DEVICE_BUFFERS_H

#include "model.h"

namespace attn::rt {

/// The descriptor's device: HOST for an ABI 2 library, which has no field.
int32_t deviceOf(const attn_model_desc &desc);

/// Whether `entry` of `model` runs on device buffers.
bool runsOnDevice(const attn_model &model, const attn_model_entry &entry);

/// Uploads the constants and weights that the entries other than "init"
/// read, once; after "init" filled the constants block.
attn_status uploadConstants(attn_model &model);

/// Allocates (or grows) the workspace's device buffer of every input,
/// output, temp and state of `entry` under `plan`, and copies the inputs and
/// states to the device.
attn_status copyInputsToDevice(const attn_model &model,
                               const attn_model_entry &entry, EntryState &state,
                               const ArenaPlan &plan, const Binding &binding);

/// The view of buffer `b` of `entry` on the device, into `view`; `read`:
/// the step reads it (an input of its kernel).
attn_status deviceView(const attn_model &model, const attn_model_entry &entry,
                       EntryState &state, const ArenaPlan &plan,
                       const Binding &binding, int32_t b, bool read,
                       attn_model_view &view);

/// Copies the outputs and states of `entry` back to the caller's memory.
attn_status copyOutputsToHost(const attn_model &model,
                              const attn_model_entry &entry,
                              const EntryState &state, const ArenaPlan &plan,
                              const Binding &binding,
                              const std::vector<const attn_tensor *> &outputs);

/// Waits for the kernels launched so far (for timing them).
attn_status synchronizeDevice(const attn_model &model);

/// Frees `handle` of `desc`'s device_api.
void freeDeviceBuffer(const attn_model_desc &desc, uint64_t handle);

} // namespace attn::rt

#endif // ATTN_RUNTIME_DEVICE_BUFFERS_H
