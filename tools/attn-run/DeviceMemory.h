//===- tools/attn-run/DeviceMemory.h - tensors on a model's GPU -*- C++ -*-===//
//
// For a model built for a GPU: where it runs, and memory on its device
// (attn_model_device_alloc) that attn-run keeps tensors in, so runs read and
// write them there with no copy: the KV caches of --generate, and the
// inputs and outputs of --device-memory.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_RUN_DEVICEMEMORY_H
#define ATTN_TOOLS_ATTN_RUN_DEVICEMEMORY_H

#include "attn/attn.h"

#include <cstdint>
#include <stdexcept>

namespace attn::run {

/// A failed device call, with the runtime's message.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The attn_device `model` runs on.
int32_t modelDevice(attn_model *model);

/// "CUDA", "OpenCL", "the host".
const char *deviceName(int32_t device);

/// `bytes` of device memory of `model`, freed with this object.
class DeviceMemory {
public:
  DeviceMemory(attn_model *model, uint64_t bytes);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  DeviceMemory(DeviceMemory &&other) noexcept;

  /// The memory, as tensors on the device take it.
  void *get() const { return memory; }
  /// Copies `bytes` (at most its size) in from, or out to, the host.
  void upload(const void *host, uint64_t bytes);
  void download(void *host, uint64_t bytes) const;

private:
  attn_model *model;
  void *memory = nullptr;
};

} // namespace attn::run

#endif // ATTN_TOOLS_ATTN_RUN_DEVICEMEMORY_H
