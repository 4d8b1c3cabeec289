//===- runtime/src/device.h - the GPU a model library needs -----*- C++ -*-===//
//
// A library built for CUDA or OpenCL (its descriptor's target string names
// the feature) runs its kernels through that API's driver. The loader asks
// the driver for a device first, so a machine without one gets
// ATTN_ERROR_NO_DEVICE at load, naming the API and the fix, before any
// kernel (or the "init" entry) runs. The drivers are behind an interface:
// the system's, opened with dlopen, or a fake in tests.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_DEVICE_H
#define ATTN_RUNTIME_DEVICE_H

#include "attn/attn.h"

#include <string>

namespace attn::rt {

/// The GPU API a library's kernels run on.
enum class DeviceApi { None, Cuda, OpenCL };

/// The API the Halide target string `target` (or the last of a
/// comma-separated list) names: a `cuda` or `opencl` feature.
DeviceApi deviceApiOf(const std::string &target);

/// "CUDA", "OpenCL".
const char *deviceApiName(DeviceApi api);

/// How the runtime asks a GPU driver for its devices.
class DeviceDrivers {
public:
  virtual ~DeviceDrivers() = default;
  /// The number of devices `api`'s driver reports (0: none), or -1 with
  /// `why` set when there is no usable driver (its library is missing, or
  /// it failed to initialise).
  virtual int countDevices(DeviceApi api, std::string &why) = 0;
};

/// The system's drivers: libcuda.so.1 and libOpenCL.so.1, dlopened.
DeviceDrivers &systemDrivers();

/// ATTN_OK when the library at `path`, built for `target`, needs no GPU or
/// `drivers` reports a device of its API; otherwise ATTN_ERROR_NO_DEVICE.
attn_status checkDevice(const std::string &target, const std::string &path,
                        DeviceDrivers &drivers);

} // namespace attn::rt

#endif // ATTN_RUNTIME_DEVICE_H
