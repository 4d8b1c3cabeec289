//===- compiler/codegen/KernelCodegen.cpp - attn.kernel -> object ---------===//
#include "compiler/codegen/KernelCodegen.h"

#include "attn/model_abi.h"
#include "compiler/codegen/HalideAlgorithm.h"
#include "dialects/attn/Analysis/DimSymbols.h"
#include "schedules/AutoSchedule.h"
#include "schedules/cpu/CpuSchedules.h"
#include "schedules/cpu/PanelPrefetch.h"
#include "schedules/cpu/RowPrefetch.h"
#include "schedules/gpu/GpuSchedules.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"


#include <algorithm>
#include <cstdlib>
#include <mutex>

using namespace mlir;

namespace attnc::codegen {
namespace {

/// The estimate of a symbolic dim with a declared bound (the sequence, e.g.
/// `S <= 1024`): the bound, at most this, the S that the example and the
/// benchmarks run (GPT-2 estimated at S = 1024 ran the same within noise).
constexpr int64_t kBoundedDimEstimate = 128;
/// The estimate of an unbounded symbolic dim (the batch, `B`).
constexpr int64_t kUnboundedDimEstimate = 1;

/// The extents the autoscheduler tunes for, per kernel input and output,
/// innermost first: static dims as typed, symbolic dims from the model
/// function's `attn.symbols` bounds (see the constants above).
struct KernelEstimates {
  std::vector<schedules::Extents> inputs, outputs;
};

FailureOr<KernelEstimates> estimateKernel(attn::KernelOp kernel) {
  auto func = kernel->getParentOfType<func::FuncOp>();
  if (!func)
    return kernel.emitError("is not inside the model function, so the "
                            "autoscheduler has no estimates of its dims");
  FailureOr<attn::DimSymbols> symbols = attn::DimSymbols::compute(func);
  if (failed(symbols))
    return failure();
  // [["B", 0], ["S", 1024]] as the frontend sets it (DimSymbols.h); a
  // symbol it does not list, or a malformed entry, counts as unbounded.
  llvm::StringMap<int64_t> bounds;
  if (auto list = func->getAttrOfType<ArrayAttr>(attn::kSymbolsAttr))
    for (Attribute entry : list)
      if (auto pair = dyn_cast<ArrayAttr>(entry); pair && pair.size() == 2)
        if (auto name = dyn_cast<StringAttr>(pair[0]))
          if (auto bound = dyn_cast<IntegerAttr>(pair[1]))
            bounds[name.getValue()] = bound.getInt();
  auto extents = [&](Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    ArrayRef<StringAttr> names = symbols->lookup(value);
    schedules::Extents result;
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      if (!type.isDynamicDim(d)) {
        result.push_back(type.getDimSize(d));
        continue;
      }
      int64_t bound = size_t(d) < names.size() && names[d]
                          ? bounds.lookup(names[d].getValue())
                          : 0;
      result.push_back(bound > 0 ? std::min(bound, kBoundedDimEstimate)
                                 : kUnboundedDimEstimate);
    }
    return result;
  };
  KernelEstimates estimates;
  for (Value input : kernel.getInputs())
    estimates.inputs.push_back(extents(input));
  for (Value result : kernel->getResults())
    estimates.outputs.push_back(extents(result));
  return estimates;
}

} // namespace

const char *autoschedulerName() { return schedules::autoschedulerName(); }

/// What `host-cuda` without a capability means.
constexpr Halide::Target::Feature kDefaultCudaCapability =
    Halide::Target::CUDACapability75;

/// A GPU API other than CUDA and OpenCL that `target` asks for, or null.
static const char *unsupportedGpuApi(const Halide::Target &target) {
  static const std::pair<Halide::Target::Feature, const char *> apis[] = {
      {Halide::Target::Metal, "metal"},
      {Halide::Target::Vulkan, "vulkan"},
      {Halide::Target::D3D12Compute, "d3d12compute"},
      {Halide::Target::WebGPU, "webgpu"},
      {Halide::Target::HVX, "hvx"}};
  for (auto [feature, name] : apis)
    if (target.has_feature(feature))
      return name;
  return nullptr;
}

llvm::Expected<BuildTarget> parseTarget(llvm::StringRef name,
                                        ScheduleKind schedule) {
  auto bad = [&](llvm::StringRef which, const llvm::Twine &why) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unknown target '" + which + "': " + why +
            "; use 'host', a Halide target such as x86-64-linux-avx2 or "
            "x86-64-linux-avx512, a comma-separated list of them (most "
            "capable first), " +
            kMultiTargetName +
            " (AVX-512 and AVX2), host-cuda (with a capability, e.g. "
            "host-cuda-cuda_capability_80) or host-opencl");
  };
  Halide::Target host = Halide::get_host_target();
  if (name == "host")
    return BuildTarget({schedules::TargetDesc(host)}, schedule);
  std::string list = name.str();
  if (name == kMultiTargetName)
    list = "x86-64-linux-avx512_skylake,x86-64-linux-avx2-fma-f16c-sse41";
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(list).split(parts, ',');
  std::vector<schedules::TargetDesc> variants;
  for (llvm::StringRef part : parts) {
    part = part.trim();
    if (!Halide::Target::validate_target_string(part.str()))
      return bad(part, "not a Halide target string");
    Halide::Target target(part.str());
    if (target.arch != host.arch || target.bits != host.bits ||
        target.os != host.os)
      return bad(part, "it is not this machine's architecture and OS (" +
                           host.to_string() +
                           "), so the library could not be linked here");
    if (const char *api = unsupportedGpuApi(target))
      return bad(part, llvm::Twine("attnc has no schedules for ") + api);
    if (target.has_feature(Halide::Target::CUDA) &&
        target.has_feature(Halide::Target::OpenCL))
      return bad(part, "a library runs on one GPU API, cuda or opencl");
    if (target.has_gpu_feature() && parts.size() > 1)
      return bad(part, "a GPU target is built alone, not in a list of "
                       "CPU variants");
    // Without a capability Halide writes sm_20 PTX, which no CUDA of the
    // last years assembles: take the oldest GPUs CUDA 13 supports (Turing).
    if (target.has_feature(Halide::Target::CUDA) &&
        target.get_cuda_capability_lower_bound() < 30)
      target = target.with_feature(kDefaultCudaCapability);
    variants.emplace_back(target);
  }
  return BuildTarget(std::move(variants), schedule);
}

int32_t modelDevice(const BuildTarget &target) {
  switch (target.baseline().device()) {
  case schedules::Device::Host:
    return ATTN_MODEL_DEVICE_HOST;
  case schedules::Device::Cuda:
    return ATTN_MODEL_DEVICE_CUDA;
  case schedules::Device::OpenCL:
    return ATTN_MODEL_DEVICE_OPENCL;
  }
  return ATTN_MODEL_DEVICE_HOST;
}

int32_t modelPrecision(const BuildTarget &target) {
  switch (target.precision()) {
  case schedules::Precision::F32:
    return ATTN_MODEL_PRECISION_F32;
  case schedules::Precision::BF16:
    return ATTN_MODEL_PRECISION_BF16;
  case schedules::Precision::Int8:
    return ATTN_MODEL_PRECISION_INT8;
  }
  return ATTN_MODEL_PRECISION_F32;
}

llvm::Error checkSchedule(const BuildTarget &target) {
  const schedules::TargetDesc &baseline = target.baseline();
  if (!baseline.isGpu() || target.schedule() == ScheduleKind::Hand)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "--schedule=%s is for CPU targets; target '%s' runs on %s, which only "
      "--schedule=hand (the default) schedules",
      target.schedule() == ScheduleKind::Auto ? "auto" : "naive",
      baseline.halide().to_string().c_str(),
      schedules::deviceName(baseline.device()));
}

llvm::Error checkPrecision(const BuildTarget &target) {
  if (target.precision() == schedules::Precision::F32)
    return llvm::Error::success();
  const char *precision = schedules::precisionName(target.precision());
  // Only the CPU schedules compute bf16 pairs and int8 dot products.
  for (const schedules::TargetDesc &variant : target.variants())
    if (variant.isGpu())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--precision=%s is for CPU targets; target '%s' runs on %s: use "
          "--precision=f32 there",
          precision, variant.halide().to_string().c_str(),
          schedules::deviceName(variant.device()));
  if (target.precision() != schedules::Precision::BF16)
    return llvm::Error::success();
  if (target.schedule() != ScheduleKind::Hand)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--precision=bf16 needs --schedule=hand (the default), whose GEMMs "
        "read the weights as bf16 pairs; --schedule=%s computes in f32 only",
        target.schedule() == ScheduleKind::Auto ? "auto" : "naive");
  for (const schedules::TargetDesc &variant : target.variants())
    if (!variant.hasBf16Dot())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--precision=bf16 needs AVX512_BF16 (vdpbf16ps) in every variant, "
          "and target '%s' lacks it: build for avx512_zen4, avx512_zen5 or "
          "avx512_sapphirerapids (--target=host on such a CPU), or use "
          "--precision=f32",
          variant.halide().to_string().c_str());
  return llvm::Error::success();
}

/// The kernel's Halide pipeline, scheduled for `target`, and its arguments.
struct ScheduledKernel {
  Halide::Pipeline pipeline;
  std::vector<Halide::Argument> args;
  Halide::Target target;
};

/// `variant`'s target as kernels are compiled for it. The runtime passes
/// each call's context (errors, later devices) as Halide's user context.
static Halide::Target kernelTarget(const schedules::TargetDesc &variant) {
  return variant.halide()
      .with_feature(Halide::Target::NoRuntime)
      .with_feature(Halide::Target::UserContext);
}

/// Builds and schedules `kernel` for one variant; Halide errors propagate
/// as exceptions.
static FailureOr<ScheduledKernel>
scheduleKernel(attn::KernelOp kernel, ScheduleKind schedule,
               schedules::Precision precision,
               const schedules::TargetDesc &desc) {
  Halide::Target halideTarget = kernelTarget(desc);
  std::vector<Halide::ImageParam> params;
  schedules::KernelStages stages;
  if (failed(buildAlgorithm(kernel, desc, precision, params, stages)))
    return failure();
  Halide::Pipeline pipeline(stages.outputs);
  switch (schedule) {
  case ScheduleKind::Hand:
    if (desc.isGpu())
      schedules::scheduleGpu(stages, desc);
    else
      schedules::scheduleHand(stages, desc);
    schedules::addPanelPrefetches(pipeline, stages.prefetches);
    schedules::addRowPrefetches(pipeline, stages.rowPrefetches);
    break;
  case ScheduleKind::Naive:
    schedules::scheduleNaive(stages);
    break;
  case ScheduleKind::Layout:
    if (desc.isGpu())
      schedules::scheduleGpuLayout(stages);
    else
      schedules::scheduleLayout(stages, desc);
    break;
  case ScheduleKind::Auto: {
    FailureOr<KernelEstimates> estimates = estimateKernel(kernel);
    if (failed(estimates))
      return failure();
    std::string error = schedules::scheduleAuto(
        pipeline, params, estimates->inputs, estimates->outputs, halideTarget);
    if (!error.empty())
      return emitError(UnknownLoc::get(kernel.getContext()))
             << "--schedule=auto: " << error;
    break;
  }
  }
  return ScheduledKernel{
      pipeline, {params.begin(), params.end()}, halideTarget};
}

namespace {
#define ATTNC_STR2(x) #x
#define ATTNC_STR(x) ATTNC_STR2(x)
/// Cache entries are Halide's output: named by its version.
constexpr const char *kHalideVersion =
    "halide-" ATTNC_STR(HALIDE_VERSION_MAJOR) "." ATTNC_STR(
        HALIDE_VERSION_MINOR) "." ATTNC_STR(HALIDE_VERSION_PATCH);
#undef ATTNC_STR
#undef ATTNC_STR2

/// "halide-runtime/halide-X.Y.Z/<target>": the runtime depends on nothing
/// else. Target strings are letters, digits, '-' and '_'.
std::string runtimeEntryName(const Halide::Target &t) {
  std::string name = t.to_string();
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '-' && c != '_')
      c = '_';
  return (llvm::Twine("halide-runtime/") + kHalideVersion + "/" + name).str();
}

/// The executable whose cache entries this attnc's are: its own, or, in a
/// build configured with ATTNC_CACHE_AS (the sanitizer builds), the plain
/// attnc built from the same sources. Halide compiles a kernel with the
/// same uninstrumented code either way, so the sanitizer job reads back
/// what the plain tests compiled; what it must still check, the lowering
/// that builds each kernel's pipeline, runs on every hit there
/// (`compileKernel`).
#ifdef ATTNC_CACHE_AS
constexpr const char *kCacheIdentity = ATTNC_CACHE_AS;
constexpr bool kLowerOnCacheHits = true;
#else
constexpr const char *kCacheIdentity = "/proc/self/exe";
constexpr bool kLowerOnCacheHits = false;
#endif

/// XXH3-128 of this program's own executable (or kCacheIdentity's): the
/// lowerings, the schedules and everything else attnc decides a kernel's
/// code with. Read once (attnc is a few MB); empty when it cannot be read
/// (nothing is cached then).
const std::string &compilerDigest() {
  static const std::string digest = [] {
    auto exe = llvm::MemoryBuffer::getFile(kCacheIdentity, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!exe)
      return std::string();
    return xxh3Digest((*exe)->getBuffer());
  }();
  return digest;
}

/// "kernels/halide-X.Y.Z/<2 hex>/<32 hex>": XXH3-128 of everything the
/// objects' bytes are made from: attnc's executable, the function's name,
/// each variant's target, the schedule and precision, and the kernel op
/// (its structural key: body, attributes and types, by which the library's
/// identical kernels share one function). A lowering that comes to read
/// anything outside its kernel must add it here and to the structural key.
/// None, so nothing is cached, when this executable cannot be read, and for
/// Halide's autoscheduler, whose schedules come from a plugin
/// ($ATTNC_AUTOSCHEDULER_PLUGIN) and the model function's dims.
std::optional<std::string> kernelEntryName(attn::KernelOp kernel,
                                           const BuildTarget &target,
                                           llvm::StringRef fnName) {
  if (compilerDigest().empty() || target.schedule() == ScheduleKind::Auto)
    return std::nullopt;
  std::string key;
  llvm::raw_string_ostream os(key);
  auto field = [&](llvm::StringRef bytes) {
    os << bytes.size() << ':' << bytes;
  };
  field(compilerDigest());
  field(fnName);
  for (const schedules::TargetDesc &variant : target.variants())
    field(kernelTarget(variant).to_string());
  os << int(target.schedule()) << ':' << int(target.precision()) << ':';
  field(kernel.getStructuralKey());
  os.flush();
  std::string hex = xxh3Digest(key);
  return (llvm::Twine("kernels/") + kHalideVersion + "/" + hex.substr(0, 2) +
          "/" + hex)
      .str();
}

/// Halide's warnings, less two that would only be noise:
/// - the one for every kernel that reads bf16 or f16 weights on a CPU
///   without native half floats: attnc widens them in registers on purpose
///   (docs/language.md);
/// - "Ignoring assertion inside <API> kernel": a GPU kernel cannot check
///   the fixed storage the GPU attention gives its key-tile
///   temporaries (schedules/gpu, boundTileTemps), whose one-tile extent
///   bounds inference cannot prove past the decode's last tile; that
///   function says why it holds.
/// Errors are thrown as Halide's own, as without a reporter.
class CompileReporter : public Halide::CompileTimeErrorReporter {
public:
  void warning(const char *msg) override {
    llvm::StringRef text(msg);
    if (!text.contains("float16 type operation is emulated") &&
        !text.contains("Ignoring assertion inside"))
      llvm::errs() << "Warning: " << msg;
  }
  [[noreturn]] void error(const char *msg) override {
    throw Halide::CompileError(msg);
  }
};

void installCompileReporter() {
  static CompileReporter reporter;
  static bool installed =
      (Halide::set_custom_compile_time_error_reporter(&reporter), true);
  (void)installed;
}

/// Halide's LLVM reads its options from HL_LLVM_ARGS once, at the process's
/// first compile: the target's own (TargetDesc::llvmOptions) are added to
/// what the environment gives before then. A process compiles for one
/// target (attnc), or the first one decides.
void configureHalideLlvm(const BuildTarget &target) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::string options;
    for (const schedules::TargetDesc &variant : target.variants()) {
      std::string own = variant.llvmOptions();
      if (!own.empty() && options.find(own) == std::string::npos)
        options += (options.empty() ? "" : " ") + own;
    }
    if (options.empty())
      return;
    const char *given = std::getenv("HL_LLVM_ARGS");
    if (given && *given)
      options = std::string(given) + " " + options;
    ::setenv("HL_LLVM_ARGS", options.c_str(), 1);
  });
}
} // namespace

FailureOr<std::vector<std::string>>
compileKernel(attn::KernelOp kernel, const BuildTarget &target,
              llvm::StringRef fnName, llvm::StringRef objectPath,
              const ObjectCache &cache, CacheOutcome &outcome) {
  installCompileReporter();
  configureHalideLlvm(target);
  const std::vector<schedules::TargetDesc> &variants = target.variants();
  // One object, or one per target ("<object>-v<i>.o") and a wrapper
  // choosing one by the CPU's features ("<object>_wrapper.o").
  std::vector<std::string> objects, suffixes;
  std::vector<Halide::Target> targets;
  if (variants.size() == 1) {
    objects.push_back(objectPath.str());
  } else {
    llvm::StringRef stem = objectPath.drop_back(
        llvm::sys::path::extension(objectPath).size());
    for (auto [i, variant] : llvm::enumerate(variants)) {
      targets.push_back(kernelTarget(variant));
      suffixes.push_back("v" + std::to_string(i));
      objects.push_back((stem + "-" + suffixes.back() + ".o").str());
    }
    objects.push_back((stem + "_wrapper.o").str());
  }
  std::optional<std::string> entry =
      cache.enabled() ? kernelEntryName(kernel, target, fnName) : std::nullopt;
  bool hit = entry && cache.fetch(*entry, objects, outcome.damaged);
  if (hit && !kLowerOnCacheHits) {
    outcome.hit = true;
    return objects;
  }
  try {
    std::vector<ScheduledKernel> scheduled;
    for (const schedules::TargetDesc &variant : variants) {
      FailureOr<ScheduledKernel> k = scheduleKernel(
          kernel, target.schedule(), target.precision(), variant);
      if (failed(k))
        return failure();
      scheduled.push_back(std::move(*k));
    }
    if (hit) {
      outcome.hit = true;
      return objects;
    }
    if (variants.size() == 1) {
      ScheduledKernel &k = scheduled.front();
      k.pipeline.compile_to(
          {{Halide::OutputFileType::object, objectPath.str()}}, k.args,
          fnName.str(), k.target);
    } else {
      Halide::compile_multitarget(
          fnName.str(), {{Halide::OutputFileType::object, objectPath.str()}},
          targets, suffixes,
          [&](const std::string &name, const Halide::Target &t) {
            // Halide asks for the targets it was given (`t` is one of them).
            auto at = llvm::find(targets, t);
            if (at == targets.end())
              throw Halide::CompileError("no variant has target " +
                                         t.to_string());
            ScheduledKernel &k = scheduled[at - targets.begin()];
            return k.pipeline.compile_to_module(k.args, name, t);
          });
    }
    if (entry)
      if (llvm::Error err = cache.store(*entry, objects))
        outcome.notStored = llvm::toString(std::move(err));
    return objects;
  } catch (const Halide::Error &e) {
    return kernel.emitError("Halide failed to compile kernel ")
           << kernel.getSymName() << ": " << e.what();
  }
}

LogicalResult emitKernelText(attn::KernelOp kernel, const BuildTarget &target,
                             KernelText what, llvm::StringRef path) {
  installCompileReporter();
  configureHalideLlvm(target);
  try {
    FailureOr<ScheduledKernel> k = scheduleKernel(
        kernel, target.schedule(), target.precision(), target.baseline());
    if (failed(k))
      return failure();
    if (what == KernelText::Stmt)
      k->pipeline.compile_to_lowered_stmt(
          path.str(), k->args, Halide::StmtOutputFormat::Text, k->target);
    else
      k->pipeline.compile_to(
          {{Halide::OutputFileType::device_code, path.str()}}, k->args,
          kernel.getSymName().str(), k->target);
  } catch (const Halide::Error &e) {
    return kernel.emitError("Halide failed to lower kernel ")
           << kernel.getSymName() << ": " << e.what();
  }
  return success();
}

llvm::Error compileHalideRuntime(const BuildTarget &target,
                                 llvm::StringRef objectPath,
                                 const ObjectCache &cache,
                                 CacheOutcome &outcome) {
  configureHalideLlvm(target);
  const Halide::Target &t = target.baseline().halide();
  std::string entry = runtimeEntryName(t);
  std::vector<std::string> files{objectPath.str()};
  if (cache.fetch(entry, files, outcome.damaged)) {
    outcome.hit = true;
    return llvm::Error::success();
  }
  try {
    Halide::compile_standalone_runtime(objectPath.str(), t);
  } catch (const Halide::Error &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "Halide failed to compile its runtime: %s",
                                   e.what());
  }
  if (cache.enabled())
    if (llvm::Error err = cache.store(entry, files))
      outcome.notStored = llvm::toString(std::move(err));
  return llvm::Error::success();
}

} // namespace attnc::codegen
