//===- runtime/src/device.cpp - the GPU a model library needs -------------===//
#include "device.h"

#include "cpu.h"
#include "model.h"

#include <cstdlib>
#include <dlfcn.h>

#include <vector>

namespace attn::rt {
namespace {

/// The first of `names` that dlopen finds, or null. Kept open: it is the
/// library the model's Halide runtime opens too.
void *openDriver(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (void *handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return handle;
  return nullptr;
}

/// cuInit, then cuDeviceGetCount (CUresult 0 is success, 100
/// CUDA_ERROR_NO_DEVICE).
int countCudaDevices(std::string &why) {
  void *cuda = openDriver({"libcuda.so.1", "libcuda.so"});
  if (!cuda) {
    why = "no CUDA driver (libcuda.so.1) on this machine";
    return -1;
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  auto init = reinterpret_cast<InitFn>(::dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<CountFn>(::dlsym(cuda, "cuDeviceGetCount"));
  if (!init || !count) {
    why = "libcuda.so.1 lacks cuInit or cuDeviceGetCount";
    return -1;
  }
  if (int r = init(0); r != 0) {
    if (r == 100)
      return 0;
    why = "the CUDA driver failed to initialise (cuInit: CUDA error " +
          std::to_string(r) + ")";
    return -1;
  }
  int devices = 0;
  if (int r = count(&devices); r != 0) {
    why = "cuDeviceGetCount failed with CUDA error " + std::to_string(r);
    return -1;
  }
  return devices;
}

/// Every device of every platform (CL_DEVICE_TYPE_ALL), as Halide's OpenCL
/// runtime may pick any of them.
int countOpenCLDevices(std::string &why) {
  void *cl = openDriver({"libOpenCL.so.1", "libOpenCL.so"});
  if (!cl) {
    why = "no OpenCL loader (libOpenCL.so.1) on this machine";
    return -1;
  }
  using PlatformsFn = int32_t (*)(uint32_t, void **, uint32_t *);
  using DevicesFn =
      int32_t (*)(void *, uint64_t, uint32_t, void **, uint32_t *);
  auto platforms =
      reinterpret_cast<PlatformsFn>(::dlsym(cl, "clGetPlatformIDs"));
  auto devices = reinterpret_cast<DevicesFn>(::dlsym(cl, "clGetDeviceIDs"));
  if (!platforms || !devices) {
    why = "libOpenCL.so.1 lacks clGetPlatformIDs or clGetDeviceIDs";
    return -1;
  }
  uint32_t numPlatforms = 0;
  // CL_PLATFORM_NOT_FOUND_KHR (-1001): an ICD loader with no platform.
  if (platforms(0, nullptr, &numPlatforms) != 0 || numPlatforms == 0)
    return 0;
  std::vector<void *> ids(numPlatforms);
  if (platforms(numPlatforms, ids.data(), nullptr) != 0)
    return 0;
  int total = 0;
  const uint64_t kAllDevices = 0xFFFFFFFF; // CL_DEVICE_TYPE_ALL
  for (void *platform : ids) {
    uint32_t n = 0;
    if (devices(platform, kAllDevices, 0, nullptr, &n) == 0)
      total += int(n);
  }
  return total;
}

class SystemDrivers final : public DeviceDrivers {
public:
  int countDevices(DeviceApi api, std::string &why) override {
    switch (api) {
    case DeviceApi::None:
      return 0;
    case DeviceApi::Cuda:
      return countCudaDevices(why);
    case DeviceApi::OpenCL:
      return countOpenCLDevices(why);
    }
    return 0;
  }
};

} // namespace

DeviceApi deviceApiOf(const std::string &target) {
  DeviceApi api = DeviceApi::None;
  for (const std::string &feature : baselineTargetParts(target)) {
    if (feature == "cuda")
      api = DeviceApi::Cuda;
    else if (feature == "opencl")
      api = DeviceApi::OpenCL;
  }
  return api;
}

const char *deviceApiName(DeviceApi api) {
  switch (api) {
  case DeviceApi::None:
    return "no GPU";
  case DeviceApi::Cuda:
    return "CUDA";
  case DeviceApi::OpenCL:
    return "OpenCL";
  }
  return "?";
}

DeviceDrivers &systemDrivers() {
  static SystemDrivers drivers;
  return drivers;
}

attn_status checkDevice(const std::string &target, const std::string &path,
                        DeviceDrivers &drivers) {
  DeviceApi api = deviceApiOf(target);
  if (api == DeviceApi::None)
    return ATTN_OK;
  std::string why;
  int devices = drivers.countDevices(api, why);
  // HL_GPU_DEVICE picks the device the library's Halide runtime uses (attn-run
  // --device sets it); Halide reports one out of range only as a failed call.
  // For OpenCL the count spans every platform, so it is an upper bound.
  if (const char *chosen = std::getenv("HL_GPU_DEVICE");
      chosen && *chosen && devices > 0) {
    char *end = nullptr;
    long ordinal = std::strtol(chosen, &end, 10);
    if (*end || ordinal >= devices)
      return fail(
          ATTN_ERROR_NO_DEVICE,
          "'" + path + "' runs on " + deviceApiName(api) + " device " + chosen +
              " (HL_GPU_DEVICE, attn-run --device), but the driver reports " +
              std::to_string(devices) + " device" + (devices == 1 ? "" : "s") +
              ": choose one of 0 to " + std::to_string(devices - 1));
    return ATTN_OK;
  }
  if (devices > 0)
    return ATTN_OK;
  if (devices == 0)
    why =
        std::string("the ") + deviceApiName(api) + " driver reports no device";
  return fail(ATTN_ERROR_NO_DEVICE,
              "'" + path + "' was built for " + deviceApiName(api) + " (" +
                  target + "), but " + why + ": run it on a machine with " +
                  (api == DeviceApi::OpenCL ? "an " : "a ") +
                  deviceApiName(api) +
                  " device and its driver, or rebuild it with attnc "
                  "--target=host");
}

} // namespace attn::rt
