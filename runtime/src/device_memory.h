//===- runtime/src/device_memory.h - memory on a model's GPU ----*- C++ -*-===//
//
// The calls into a GPU library's device_api (model_abi.h) that both the
// runtime's own buffers (device_buffers.h) and the application's device
// memory (attn_model_device_alloc and friends) go through. A handle is the
// library's; the application sees the API's native memory (a CUdeviceptr, a
// cl_mem), which the library maps to and from handles.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_DEVICE_MEMORY_H
#define ATTN_RUNTIME_DEVICE_MEMORY_H

#include "model.h"

namespace attn::rt {

/// The context of one call into the device_api, and the library's message
/// when it fails (or a stand-in).
struct DeviceCall {
  char error[1024] = "";
  attn_model_context context{error, sizeof error};
  std::string message() { return kernelMessage(error, sizeof error); }
};

/// Allocates `bytes` (at least 64) on the device into `handle`; `what`
/// names the buffer in the message.
attn_status allocateDevice(const attn_model_desc &d, uint64_t bytes,
                           uint64_t &handle, const std::string &what);

/// Frees `handle` of `desc`'s device_api (0: nothing).
void freeDeviceBuffer(const attn_model_desc &desc, uint64_t handle);

/// Copies `bytes` between `host` and the start of `handle`.
attn_status copyDevice(const attn_model_desc &d, bool toDevice, uint64_t handle,
                       void *host, uint64_t bytes, const std::string &what);

/// Fails unless `model` runs on a GPU and was loaded to run; `fn` names the
/// caller in the message.
attn_status checkNativeMemory(const attn_model &model, const std::string &fn);

/// The handle of the caller's native memory `native`: the allocation of
/// attn_model_device_alloc (`wrapped` false), else a handle wrapped for
/// this use (`wrapped` true), which unwrapDevice must forget. `bytes`: what
/// the use reads or writes, checked against an allocation of ours.
attn_status nativeHandle(const attn_model &model, uint64_t native,
                         uint64_t bytes, const std::string &what,
                         uint64_t &handle, bool &wrapped);

/// Waits for the kernels launched so far (for timing them, or before the
/// caller reads tensors left on the device).
attn_status synchronizeDevice(const attn_model &model);

/// Forgets a handle nativeHandle wrapped.
void unwrapDevice(const attn_model_desc &desc, uint64_t handle);

/// Fails unless `bits` are ATTN_ON_DEVICE_* bits that `model` can honour.
attn_status checkDeviceTensors(const attn_model &model, uint32_t bits);

/// attn_model_device_info, attn_model_device_alloc, attn_model_device_free
/// and the copies (attn.h), their arguments checked.
attn_status describeDevice(const attn_model &model, attn_device_info &info);
attn_status allocateForCaller(attn_model &model, uint64_t bytes, void *&memory);
attn_status freeForCaller(attn_model &model, void *memory);
attn_status copyForCaller(const attn_model &model, bool toDevice,
                          const void *memory, void *host, uint64_t bytes,
                          const std::string &fn);

} // namespace attn::rt

#endif // ATTN_RUNTIME_DEVICE_MEMORY_H
