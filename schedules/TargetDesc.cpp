//===- schedules/TargetDesc.cpp - what kernels are built for --------------===//
#include "schedules/TargetDesc.h"

#include "schedules/cpu/CpuSchedules.h"

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

int TargetDesc::gemmPanelWidth() const { return cpuGemmPanelWidth(halide_); }

int TargetDesc::attentionQueryTile(bool decoding) const {
  return decoding ? 1 : 32;
}

int TargetDesc::attentionKeyChunks(bool decoding) const {
  // 8 runs are enough for 2 to 8 cores and keep the merge small (a task per
  // head read its 256-byte pieces of rows kilobytes apart; runs of whole
  // rows stream).
  return decoding ? 8 : 1;
}

} // namespace attnc::schedules
