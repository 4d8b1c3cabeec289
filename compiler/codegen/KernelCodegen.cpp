//===- compiler/codegen/KernelCodegen.cpp - attn.kernel -> object ---------===//
#include "compiler/codegen/KernelCodegen.h"

#include "compiler/codegen/HalideAlgorithm.h"
#include "schedules/CpuSchedules.h"

using namespace mlir;

namespace attnc::codegen {

llvm::Expected<std::string> resolveTarget(llvm::StringRef name) {
  auto bad = [&](const llvm::Twine &why) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unknown target '" + name + "': " + why +
            "; use 'host' or a Halide target such as x86-64-linux-avx2 or "
            "x86-64-linux-avx512");
  };
  Halide::Target host = Halide::get_host_target();
  if (name == "host")
    return host.to_string();
  if (!Halide::Target::validate_target_string(name.str()))
    return bad("not a Halide target string");
  Halide::Target target(name.str());
  if (target.arch != host.arch || target.bits != host.bits ||
      target.os != host.os)
    return bad("it is not this machine's architecture and OS (" +
               host.to_string() + "), so the library could not be linked here");
  if (target.has_gpu_feature())
    return bad("GPU targets are not supported yet");
  return target.to_string();
}

LogicalResult compileKernel(attn::KernelOp kernel, const KernelTarget &target,
                            llvm::StringRef fnName,
                            llvm::StringRef objectPath) {
  try {
    std::vector<Halide::ImageParam> params;
    schedules::KernelStages stages;
    if (failed(buildAlgorithm(kernel, params, stages)))
      return failure();
    Halide::Target halideTarget =
        Halide::Target(target.halideTarget)
            .with_feature(Halide::Target::NoRuntime);
    if (target.schedule == ScheduleKind::Naive)
      schedules::scheduleNaive(stages);
    else
      schedules::scheduleHand(stages, halideTarget);
    std::vector<Halide::Argument> args(params.begin(), params.end());
    Halide::Pipeline pipeline(stages.outputs);
    pipeline.compile_to({{Halide::OutputFileType::object, objectPath.str()}},
                        args, fnName.str(), halideTarget);
  } catch (const Halide::Error &e) {
    return kernel.emitError("Halide failed to compile kernel ")
           << kernel.getSymName() << ": " << e.what();
  }
  return success();
}

llvm::Error compileHalideRuntime(const KernelTarget &target,
                                 llvm::StringRef objectPath) {
  try {
    Halide::compile_standalone_runtime(objectPath.str(),
                                       Halide::Target(target.halideTarget));
  } catch (const Halide::Error &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "Halide failed to compile its runtime: %s",
                                   e.what());
  }
  return llvm::Error::success();
}

int64_t weightPanelWidth(const KernelTarget &target) {
  if (target.schedule != ScheduleKind::Hand)
    return 0;
  return schedules::gemmPanelWidth(Halide::Target(target.halideTarget));
}

} // namespace attnc::codegen
