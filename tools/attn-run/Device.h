//===- tools/attn-run/Device.h - where a model runs -------------*- C++ -*-===//
//
// For a model built for a GPU: where it runs. attn-run keeps tensors in its
// device memory (attn::DeviceMemory, attn.hpp), so runs read and write them
// there with no copy: the KV caches of --generate, and the inputs and
// outputs of --device-memory.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLS_ATTN_RUN_DEVICE_H
#define ATTN_TOOLS_ATTN_RUN_DEVICE_H

#include "attn/attn.hpp"

#include <cstdint>

namespace attn::run {

/// The attn_device `model` runs on; throws attn::Error.
int32_t modelDevice(attn_model *model);

/// "CUDA", "OpenCL", "the host".
const char *deviceName(int32_t device);

} // namespace attn::run

#endif // ATTN_TOOLS_ATTN_RUN_DEVICE_H
