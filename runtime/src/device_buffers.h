//===- runtime/src/device_buffers.h - buffers on the device ----*- C++ -*-===//
//
// A library whose kernels run on a GPU (its descriptor's `device` not HOST)
// keeps the buffers of its runs on that device, in allocations of its
// device_api: the constants block's pieces and the weights its kernels read
// are uploaded once at load; each workspace holds its inputs, states and
// outputs there, and its temps in one arena planned by lifetime as on the
// host; only inputs and states go in, and outputs and states come out, once
// per run (runSteps), unless the caller gave them in device memory
// (attn_run_options.device_tensors): then the kernels read
// and write them where they are. The "init" entry runs on host views,
// which the library copies per call: it runs once, at load.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_DEVICE_BUFFERS_H
#define ATTN_RUNTIME_DEVICE_BUFFERS_H

#include "device_memory.h"

namespace attn::rt {

/// Whether `entry` of `model` runs on device buffers.
bool runsOnDevice(const attn_model &model, const attn_model_entry &entry);

/// Where the temps of `entry` start in its arena: 64 bytes on the host; in
/// a device arena, 4096, a multiple of every OpenCL device's
/// sub-buffer alignment (CL_DEVICE_MEM_BASE_ADDR_ALIGN) and of CUDA's 256.
uint64_t arenaAlignment(const attn_model &model, const attn_model_entry &entry);

/// Uploads the constants and weights that the entries other than "init"
/// read, once; after "init" filled the constants block.
attn_status uploadConstants(attn_model &model);

/// Readies the device buffers of one run of `entry` under `plan`: the
/// caller's tensors on the device (binding.deviceTensors) as handles, and
/// for every other input, output, temp and state the workspace's allocation
/// (made or grown), into which the inputs and states are copied.
/// releaseCallerHandles must follow, however the run ends.
attn_status bindDeviceBuffers(const attn_model &model,
                              const attn_model_entry &entry, EntryState &state,
                              const ArenaPlan &plan, const Binding &binding,
                              const std::vector<const attn_tensor *> &outputs);

/// Forgets the handles bindDeviceBuffers wrapped for a run.
void releaseCallerHandles(const attn_model_desc &desc, EntryState &state);

/// Frees the workspace's device buffers: crops, the arena, the others.
void releaseDeviceBuffers(const attn_model_desc &desc, EntryState &state);

/// The view of buffer `b` of `entry` on the device, into `view`; `read`:
/// the step reads it (an input of its kernel).
attn_status deviceView(const attn_model &model, const attn_model_entry &entry,
                       EntryState &state, const ArenaPlan &plan,
                       const Binding &binding, int32_t b, bool read,
                       attn_model_view &view);

/// Copies the outputs and states of `entry` that are not on the device
/// already back to the caller's memory; with tensors on the device, waits
/// for the kernels.
attn_status copyOutputsToHost(const attn_model &model,
                              const attn_model_entry &entry,
                              const EntryState &state, const ArenaPlan &plan,
                              const Binding &binding,
                              const std::vector<const attn_tensor *> &outputs);

} // namespace attn::rt

#endif // ATTN_RUNTIME_DEVICE_BUFFERS_H
