//===- tools/attn-run/DeviceMemory.cpp - tensors on a model's GPU ---------===//
#include "DeviceMemory.h"

#include <utility>

namespace attn::run {
namespace {

void check(attn_status status) {
  if (status != ATTN_OK)
    throw DeviceError(attn_last_error());
}

} // namespace

int32_t modelDevice(attn_model *model) {
  attn_device_info info{};
  info.size = sizeof info;
  check(attn_model_device_info(model, &info));
  return info.device;
}

const char *deviceName(int32_t device) {
  switch (device) {
  case ATTN_DEVICE_CUDA:
    return "CUDA";
  case ATTN_DEVICE_OPENCL:
    return "OpenCL";
  default:
    return "the host";
  }
}

DeviceMemory::DeviceMemory(attn_model *model, uint64_t bytes) : model(model) {
  check(attn_model_device_alloc(model, bytes, &memory));
}

DeviceMemory::~DeviceMemory() {
  if (memory)
    attn_model_device_free(model, memory);
}

DeviceMemory::DeviceMemory(DeviceMemory &&other) noexcept
    : model(other.model), memory(std::exchange(other.memory, nullptr)) {}

void DeviceMemory::upload(const void *host, uint64_t bytes) {
  check(attn_model_copy_to_device(model, memory, host, bytes));
}

void DeviceMemory::download(void *host, uint64_t bytes) const {
  check(attn_model_copy_to_host(model, host, memory, bytes));
}

} // namespace attn::run
