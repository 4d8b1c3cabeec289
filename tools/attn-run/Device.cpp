//===- tools/attn-run/Device.cpp - where a model runs ---------------------===//
#include "Device.h"

namespace attn::run {

int32_t modelDevice(attn_model *model) {
  attn_device_info info{};
  info.size = sizeof info;
  attn::check(attn_model_device_info(model, &info));
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

} // namespace attn::run
