//===- test/unit/runtime/device_test.cpp - the load-time device check -----===//
//
// runtime/src/device.h through a fake driver interface: which target strings
// need which GPU API, and what a machine without a device (no driver, a
// driver that fails, no device) is told. The real drivers are exercised by
// test/driver/gpu-run.mlir.
//
//===----------------------------------------------------------------------===//
#include "device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace attn::rt;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

/// Reports `devices` (or a missing driver, -1, with `why`) and counts asks.
class FakeDrivers : public DeviceDrivers {
public:
  FakeDrivers(int devices, std::string why = "")
      : devices(devices), why(std::move(why)) {}
  int countDevices(DeviceApi api, std::string &whyNot) override {
    ++asked;
    lastApi = api;
    whyNot = why;
    return devices;
  }
  int devices;
  std::string why;
  int asked = 0;
  DeviceApi lastApi = DeviceApi::None;
};

const char *kCuda = "x86-64-linux-avx2-cuda-cuda_capability_80-fma";
const char *kOpenCL = "x86-64-linux-avx2-fma-opencl";

TEST(Device, TargetsNameTheirApi) {
  EXPECT_EQ(deviceApiOf(kCuda), DeviceApi::Cuda);
  EXPECT_EQ(deviceApiOf(kOpenCL), DeviceApi::OpenCL);
  EXPECT_EQ(deviceApiOf("x86-64-linux-avx2-fma"), DeviceApi::None);
  // A capability alone is not the cuda feature; names are whole features.
  EXPECT_EQ(deviceApiOf("x86-64-linux-cuda_capability_80"), DeviceApi::None);
  EXPECT_EQ(deviceApiOf("x86-64-linux-opencl_x"), DeviceApi::None);
  // A multi-target library runs what its last (baseline) target needs.
  EXPECT_EQ(deviceApiOf("x86-64-linux-avx512,x86-64-linux-avx2"),
            DeviceApi::None);
  EXPECT_EQ(deviceApiOf("cuda"), DeviceApi::Cuda);
}

TEST(Device, CpuLibrariesAskNoDriver) {
  FakeDrivers drivers(0);
  EXPECT_EQ(checkDevice("x86-64-linux-avx2", "m.so", drivers), ATTN_OK);
  EXPECT_EQ(drivers.asked, 0);
}

TEST(Device, ADeviceIsEnough) {
  FakeDrivers drivers(1);
  EXPECT_EQ(checkDevice(kOpenCL, "m.so", drivers), ATTN_OK);
  EXPECT_EQ(drivers.asked, 1);
  EXPECT_EQ(drivers.lastApi, DeviceApi::OpenCL);
}

TEST(Device, NoDeviceIsItsOwnStatusNamingApiAndFix) {
  FakeDrivers drivers(0);
  EXPECT_EQ(checkDevice(kCuda, "m.so", drivers), ATTN_ERROR_NO_DEVICE);
  EXPECT_EQ(drivers.lastApi, DeviceApi::Cuda);
  EXPECT_THAT(
      std::string(attn_last_error()),
      AllOf(HasSubstr("'m.so' was built for CUDA (" + std::string(kCuda) + ")"),
            HasSubstr("the CUDA driver reports no device"),
            HasSubstr("attnc --target=host")));
  EXPECT_STREQ(attn_status_string(ATTN_ERROR_NO_DEVICE), "no device");
}

TEST(Device, AMissingDriverSaysWhy) {
  FakeDrivers drivers(-1, "no OpenCL loader (libOpenCL.so.1) on this machine");
  EXPECT_EQ(checkDevice(kOpenCL, "m.so", drivers), ATTN_ERROR_NO_DEVICE);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("built for OpenCL"),
                    HasSubstr("but no OpenCL loader (libOpenCL.so.1) on this "
                              "machine: run it on a machine with an OpenCL "
                              "device")));
}

// HL_GPU_DEVICE (attn-run --device) beyond the driver's devices is refused
// at load, naming the range; within it, or Halide's default (-1), loads.
TEST(Device, AnOrdinalBeyondTheDevicesIsRefused) {
  FakeDrivers drivers(2);
  ::setenv("HL_GPU_DEVICE", "2", 1);
  EXPECT_EQ(checkDevice(kCuda, "m.so", drivers), ATTN_ERROR_NO_DEVICE);
  EXPECT_THAT(std::string(attn_last_error()),
              AllOf(HasSubstr("runs on CUDA device 2 (HL_GPU_DEVICE"),
                    HasSubstr("reports 2 devices: choose one of 0 to 1")));
  ::setenv("HL_GPU_DEVICE", "first", 1);
  EXPECT_EQ(checkDevice(kCuda, "m.so", drivers), ATTN_ERROR_NO_DEVICE);
  ::setenv("HL_GPU_DEVICE", "1", 1);
  EXPECT_EQ(checkDevice(kCuda, "m.so", drivers), ATTN_OK);
  ::setenv("HL_GPU_DEVICE", "-1", 1);
  EXPECT_EQ(checkDevice(kOpenCL, "m.so", drivers), ATTN_OK);
  ::unsetenv("HL_GPU_DEVICE");
}

} // namespace
