//===- schedules/TargetDesc.cpp - what kernels are built for --------------===//
#include "schedules/TargetDesc.h"

#include "schedules/cpu/CpuSchedules.h"
#include "schedules/gpu/GpuSchedules.h"

namespace attnc::schedules {

const char *deviceName(Device device) {
  switch (device) {
  case Device::Host:
    return "host";
  case Device::Cuda:
    return "cuda";
  case Device::OpenCL:
    return "opencl";
  }
  return "?";
}

Device TargetDesc::device() const {
  if (halide_.has_feature(Halide::Target::CUDA))
    return Device::Cuda;
  if (halide_.has_feature(Halide::Target::OpenCL))
    return Device::OpenCL;
  return Device::Host;
}

bool TargetDesc::storesHalfAsBits() const {
  // CUDA: Halide 21's PTX code generator fails an LLVM assertion ("Invalid
  // cast") on a bf16 -> f32 cast (the test decoder's bf16 weight).
  return device() == Device::Cuda ||
         (device() == Device::OpenCL &&
          !halide_.has_feature(Halide::Target::CLHalf));
}

bool TargetDesc::warpShuffles() const { return device() == Device::Cuda; }

int TargetDesc::gemmPanelWidth() const {
  return isGpu() ? 0 : cpuGemmPanelWidth(halide_);
}

int TargetDesc::attentionQueryTile(bool decoding) const {
  if (decoding)
    return 1;
  return isGpu() ? kGpuQueryTile : 32;
}

int TargetDesc::attentionKeyChunks(bool decoding) const {
  // CPU: 8 runs are enough for 2 to 8 cores and keep the merge small (a
  // task per head read its 256-byte pieces of rows kilobytes apart; runs of
  // whole rows stream). GPU: one thread per run (GpuSchedules.cpp).
  if (!decoding)
    return 1;
  return isGpu() ? kGpuDecodeKeyChunks : 8;
}

} // namespace attnc::schedules
