//===- runtime/src/device_memory.cpp - memory on a model's GPU ------------===//
#include "device_memory.h"

#include <algorithm>

namespace attn::rt {
namespace {

std::string modelName(const attn_model_desc &d) {
  return "model '" + std::string(d.model_name) + "'";
}

} // namespace

attn_status allocateDevice(const attn_model_desc &d, uint64_t bytes,
                           uint64_t &handle, const std::string &what) {
  DeviceCall call;
  handle = 0;
  if (d.device_api->alloc(&call.context, std::max<uint64_t>(bytes, 64),
                          &handle) != 0 ||
      !handle)
    return fail(ATTN_ERROR_OUT_OF_MEMORY, modelName(d) + ": cannot allocate " +
                                              std::to_string(bytes) +
                                              " bytes of device memory for " +
                                              what + ": " + call.message());
  return ATTN_OK;
}

void freeDeviceBuffer(const attn_model_desc &desc, uint64_t handle) {
  DeviceCall call;
  if (handle)
    desc.device_api->free(&call.context, handle);
}

attn_status copyDevice(const attn_model_desc &d, bool toDevice, uint64_t handle,
                       void *host, uint64_t bytes, const std::string &what) {
  DeviceCall call;
  int32_t status =
      toDevice
          ? d.device_api->copy_to_device(&call.context, handle, host, bytes)
          : d.device_api->copy_to_host(&call.context, host, handle, bytes);
  if (status != 0)
    return fail(ATTN_ERROR_KERNEL_FAILED, modelName(d) + ": cannot copy " +
                                              what +
                                              (toDevice ? " to" : " from") +
                                              " the device: " + call.message());
  return ATTN_OK;
}

attn_status checkNativeMemory(const attn_model &model, const std::string &fn) {
  const attn_model_desc &d = *model.desc;
  if (d.device == ATTN_MODEL_DEVICE_HOST)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                fn + ": " + modelName(d) + " runs on the host (target '" +
                    d.target +
                    "'), so it has no device memory: give its tensors in "
                    "host memory, or build it for a GPU (attnc "
                    "--target=host-cuda or host-opencl)");
  if (model.describeOnly)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                fn + ": " + modelName(d) +
                    " was loaded to describe it only "
                    "(ATTN_LOAD_DESCRIBE_ONLY): load it without that flag "
                    "to use its device");
  return ATTN_OK;
}

attn_status nativeHandle(const attn_model &model, uint64_t native,
                         uint64_t bytes, const std::string &what,
                         uint64_t &handle, bool &wrapped) {
  const attn_model_desc &d = *model.desc;
  {
    std::lock_guard<std::mutex> lock(model.deviceMemoryMutex);
    auto it = model.deviceMemory.find(native);
    if (it != model.deviceMemory.end()) {
      if (it->second.bytes < bytes)
        return fail(ATTN_ERROR_SHAPE_MISMATCH,
                    what + " needs " + std::to_string(bytes) +
                        " bytes, but its device memory from "
                        "attn_model_device_alloc has " +
                        std::to_string(it->second.bytes));
      handle = it->second.handle;
      wrapped = false;
      return ATTN_OK;
    }
  }
  DeviceCall call;
  handle = 0;
  wrapped = true;
  if (d.device_api->wrap(&call.context, native, &handle) != 0 || !handle)
    return fail(
        ATTN_ERROR_INVALID_ARGUMENT,
        modelName(d) + ": " + what +
            " is not device memory the library can use: " + call.message());
  return ATTN_OK;
}

attn_status synchronizeDevice(const attn_model &model) {
  DeviceCall call;
  if (model.desc->device_api->synchronize(&call.context) != 0)
    return fail(ATTN_ERROR_KERNEL_FAILED,
                modelName(*model.desc) +
                    ": the device failed: " + call.message());
  return ATTN_OK;
}

void unwrapDevice(const attn_model_desc &desc, uint64_t handle) {
  DeviceCall call;
  desc.device_api->unwrap(&call.context, handle);
}

attn_status checkDeviceTensors(const attn_model &model, uint32_t bits) {
  constexpr uint32_t known =
      ATTN_ON_DEVICE_INPUTS | ATTN_ON_DEVICE_OUTPUTS | ATTN_ON_DEVICE_STATES;
  if (uint32_t unknown = bits & ~known)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "attn_run_options.device_tensors has bits " +
                    std::to_string(unknown) +
                    " this runtime does not know: use ATTN_ON_DEVICE_INPUTS, "
                    "_OUTPUTS and _STATES");
  return checkNativeMemory(model, "attn_run_options.device_tensors");
}

attn_status describeDevice(const attn_model &model, attn_device_info &info) {
  const attn_model_desc &d = *model.desc;
  info.device = d.device;
  info.context = info.queue = nullptr;
  // A host model has no API objects, nor does one only described.
  if (info.device == ATTN_MODEL_DEVICE_HOST || model.describeOnly)
    return ATTN_OK;
  DeviceCall call;
  if (d.device_api->native_context(&call.context, &info.context, &info.queue) !=
      0)
    return fail(ATTN_ERROR_NO_DEVICE,
                modelName(d) +
                    ": cannot get its device's context: " + call.message());
  return ATTN_OK;
}

attn_status allocateForCaller(attn_model &model, uint64_t bytes,
                              void *&memory) {
  const attn_model_desc &d = *model.desc;
  if (attn_status s = checkNativeMemory(model, "attn_model_device_alloc");
      s != ATTN_OK)
    return s;
  uint64_t handle = 0;
  if (attn_status s =
          allocateDevice(d, bytes, handle, "attn_model_device_alloc");
      s != ATTN_OK)
    return s;
  uint64_t native = d.device_api->native(handle);
  std::lock_guard<std::mutex> lock(model.deviceMemoryMutex);
  if (!native || model.deviceMemory.count(native)) {
    freeDeviceBuffer(d, handle);
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                modelName(d) + ": its library gave allocation " +
                    std::to_string(handle) +
                    " no native memory of its own: rebuild it with attnc");
  }
  model.deviceMemory[native] = {handle, bytes};
  memory = reinterpret_cast<void *>(static_cast<uintptr_t>(native));
  return ATTN_OK;
}

attn_status freeForCaller(attn_model &model, void *memory) {
  if (!memory)
    return ATTN_OK;
  if (attn_status s = checkNativeMemory(model, "attn_model_device_free");
      s != ATTN_OK)
    return s;
  DeviceAllocation allocation;
  {
    std::lock_guard<std::mutex> lock(model.deviceMemoryMutex);
    auto it = model.deviceMemory.find(reinterpret_cast<uintptr_t>(memory));
    if (it == model.deviceMemory.end())
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  "attn_model_device_free: " + modelName(*model.desc) +
                      " did not allocate this memory (attn_model_device_alloc) "
                      "or has freed it already");
    allocation = it->second;
    model.deviceMemory.erase(it);
  }
  freeDeviceBuffer(*model.desc, allocation.handle);
  return ATTN_OK;
}

attn_status copyForCaller(const attn_model &model, bool toDevice,
                          const void *memory, void *host, uint64_t bytes,
                          const std::string &fn) {
  if (attn_status s = checkNativeMemory(model, fn); s != ATTN_OK)
    return s;
  if (bytes == 0)
    return ATTN_OK;
  if (!memory || !host)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                fn + ": the device memory and the host memory must not be "
                     "NULL");
  uint64_t handle = 0;
  bool wrapped = false;
  std::string what = "the device memory of " + fn;
  if (attn_status s = nativeHandle(model, reinterpret_cast<uintptr_t>(memory),
                                   bytes, what, handle, wrapped);
      s != ATTN_OK)
    return s;
  attn_status s = copyDevice(*model.desc, toDevice, handle, host, bytes, what);
  if (wrapped)
    unwrapDevice(*model.desc, handle);
  return s;
}

} // namespace attn::rt
