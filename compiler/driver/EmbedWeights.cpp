//===- compiler/driver/EmbedWeights.cpp - weights built in ----------------===//
#include "compiler/driver/EmbedWeights.h"

#include "compiler/driver/Link.h"
#include "compiler/driver/TempDir.h"

#include "attn/attn.h"
#include "attn/safetensors.h"
#include "dialects/attn/IR/AttnOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <map>
#include <memory>

using namespace mlir;
using namespace mlir::attn;
namespace st = ::attn::safetensors;

namespace attnc::driver {
namespace {

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// Up to three names of `file` closest to `name`, quoted, for "did you mean".
std::string closestNames(const st::Checkpoint &file, StringRef name) {
  SmallVector<std::pair<unsigned, StringRef>> scored;
  for (const st::Tensor &t : file.tensors())
    scored.push_back({name.edit_distance(t.name), t.name});
  llvm::stable_sort(scored, llvm::less_first());
  std::string s;
  for (auto [i, entry] : llvm::enumerate(ArrayRef(scored).take_front(3)))
    s += (i ? ", '" : "'") + entry.second.str() + "'";
  return s;
}

/// Checks one attn.weight against the file, reporting at the op.
LogicalResult checkWeight(WeightOp op, const st::Checkpoint &file) {
  ArrayRef<int64_t> declared = op.getType().getShape();
  const st::Tensor *t = file.find(op.getName());
  if (!t) {
    InFlightDiagnostic diag = op.emitError()
                              << "weight '" << op.getName() << "' is not in '"
                              << file.path() << "'";
    if (file.tensors().empty())
      return diag << ", which holds no tensors: give the model's weights file";
    return diag << "; closest names there: " << closestNames(file, op.getName())
                << ": fix the name in the model or export the weight";
  }
  Type element = op.getType().getElementType();
  attn_model_dtype declaredDType = *modelDType(element);
  std::optional<int32_t> dtype = st::attnDType(t->dtype);
  if (!dtype || *dtype != declaredDType) {
    InFlightDiagnostic diag =
        op.emitError() << "weight '" << op.getName() << "' in '"
                       << file.pathOf(*t) << "' has dtype "
                       << st::dtypeName(t->dtype)
                       << " but the model declares it " << element << ": ";
    // A float the language has: declaring it so keeps the file's precision.
    if (dtype && *dtype != ATTN_MODEL_I32)
      diag << "declare it '" << StringRef(st::dtypeName(t->dtype)).lower()
           << shapeString(declared) << "' in the model, or ";
    return diag << "convert it to " << attn_dtype_lookup(declaredDType)->name
                << " when exporting (attnc never converts weights)";
  }
  if (ArrayRef<int64_t>(t->shape) != declared)
    return op.emitError() << "weight '" << op.getName() << "' in '"
                          << file.pathOf(*t) << "' has shape "
                          << shapeString(t->shape)
                          << " but the model declares it "
                          << shapeString(declared)
                          << ": fix the declaration or the exported tensor";
  if (std::optional<WeightLayout> layout = op.getLayout()) {
    bool inOut = *layout == WeightLayout::in_out;
    if (std::optional<std::string> conflict =
            st::conflictingQuantizedLayout(file, *t, inOut))
      return op.emitError() << "weight '" << op.getName() << "' in '"
                            << file.pathOf(*t) << "' " << *conflict;
  }
  return success();
}

/// The private library that computes the constants block: its "run" takes
/// no inputs and writes each constant to an output, the init kernels'
/// results and a copy of each weight a kernel reads as it is.
struct ConstantsLibrary {
  Plan plan;
  /// Per output of "run": where the block holds it.
  std::vector<uint64_t> offsets;
  uint64_t blockSize = 0;
  /// Where the block holds each weight read as it is, by weights-table index.
  std::map<int32_t, uint64_t> weightOffsets;
};

class ConstantsPlanner {
public:
  explicit ConstantsPlanner(const OutlinedInit &init) : init(init) {
    lib.plan.modelName = "attnc_embedded_weights";
    lib.plan.weights = init.weights;
    run.name = "run";
    weightBuffer.assign(init.weights.size(), -1);
  }

  ConstantsLibrary plan() {
    lib.blockSize = init.constantsSize;
    for (const InitStep &s : init.steps) {
      PlanStep step{lib.plan.addKernel(KernelOp(s.kernel)), {}};
      lib.plan.kernels[step.kernel].forInit = true;
      for (int32_t w : s.weights)
        step.args.push_back(weightArg(w));
      auto type = cast<RankedTensorType>(s.kernel->getResult(0).getType());
      step.args.push_back(addOutput(*modelDType(type.getElementType()),
                                    type.getShape(), s.offset));
      run.steps.push_back(std::move(step));
    }
    // The weights kernels read as they are, in table order, after them.
    for (const auto &[value, ref] : init.constants)
      if (ref.kind == ATTN_MODEL_BUFFER_WEIGHT)
        lib.weightOffsets[ref.index] = 0;
    for (auto &[w, offset] : lib.weightOffsets) {
      const PlanWeight &weight = init.weights[w];
      offset = llvm::alignTo(lib.blockSize, kConstantAlignment);
      lib.blockSize = offset + dtypeSize(weight.dtype) *
                                   ShapedType::getNumElements(weight.shape);
      int32_t from = weightArg(w);
      run.steps.push_back(
          {lib.plan.copyKernel(),
           {from, addOutput(weight.dtype, weight.shape, offset)}});
    }
    lib.blockSize = llvm::alignTo(lib.blockSize, kConstantAlignment);
    lib.plan.entries.push_back(std::move(run));
    return std::move(lib);
  }

private:
  /// The buffer of weight `w`, shared by every step that reads it.
  int32_t weightArg(int32_t w) {
    if (weightBuffer[w] < 0) {
      weightBuffer[w] = run.buffers.size();
      run.buffers.push_back({ATTN_MODEL_BUFFER_WEIGHT, w, init.weights[w].dtype,
                             staticDims(init.weights[w].shape), 0});
    }
    return weightBuffer[w];
  }

  int32_t addOutput(attn_model_dtype dtype, llvm::ArrayRef<int64_t> shape,
                    uint64_t offset) {
    int32_t buffer = run.buffers.size();
    int32_t index = run.outputs.size();
    run.buffers.push_back(
        {ATTN_MODEL_BUFFER_OUTPUT, index, dtype, staticDims(shape), 0});
    run.outputs.push_back({"constant" + std::to_string(index), buffer});
    lib.offsets.push_back(offset);
    return buffer;
  }

  const OutlinedInit &init;
  ConstantsLibrary lib;
  PlanEntry run;
  std::vector<int32_t> weightBuffer;
};

/// Loads the library at `path` with the weights file and runs it, each
/// output written in place into `blob`.
LogicalResult runConstantsLibrary(Location loc, const std::string &path,
                                  const std::string &weightsPath,
                                  const ConstantsLibrary &lib,
                                  std::vector<uint8_t> &blob) {
  attn_load_options options{};
  options.size = sizeof options;
  options.weights = weightsPath.c_str();
  attn_model *raw = nullptr;
  if (attn_model_load_with_options(path.c_str(), &options, &raw) != ATTN_OK)
    return emitError(loc) << "cannot load the weights of '" << weightsPath
                          << "' to embed them: " << attn_last_error();
  std::unique_ptr<attn_model, void (*)(attn_model *)> model(raw,
                                                            attn_model_free);
  const PlanEntry &run = lib.plan.entries.front();
  // Every output's dims are static: the extents its buffer records.
  std::vector<std::vector<int64_t>> dims(run.outputs.size());
  std::vector<attn_tensor> outputs;
  for (auto [i, out] : llvm::enumerate(run.outputs)) {
    const PlanBuffer &buffer = run.buffers[out.buffer];
    for (const PlanDim &dim : buffer.dims)
      dims[i].push_back(dim.extent);
    outputs.push_back({out.name.c_str(), buffer.dtype, int32_t(dims[i].size()),
                       dims[i].data(), blob.data() + lib.offsets[i]});
  }
  if (attn_model_run(model.get(), nullptr, 0, outputs.data(),
                     int32_t(outputs.size())) != ATTN_OK)
    return emitError(loc) << "computing the weights to embed from '"
                          << weightsPath << "' failed: " << attn_last_error();
  return success();
}

} // namespace

FailureOr<WeightsFileUse> checkWeightsFile(ArrayRef<func::FuncOp> funcs,
                                           StringRef weightsPath) {
  func::FuncOp model = funcs.front();
  st::Expected<st::Checkpoint> file = st::Checkpoint::open(weightsPath.str());
  if (!file)
    return emitError(UnknownLoc::get(model.getContext()))
           << "cannot read weights: " << file.message();
  bool ok = true;
  llvm::StringSet<> declared;
  for (func::FuncOp func : funcs)
    func.walk([&](WeightOp op) {
      if (declared.insert(op.getName()).second)
        ok &= succeeded(checkWeight(op, *file));
    });
  if (!ok)
    return failure();
  WeightsFileUse use;
  for (const st::Tensor &t : file->tensors())
    if (!declared.contains(t.name))
      use.unusedTensors.push_back(t.name);
  use.fileTensors = file->tensors().size();
  return use;
}

FailureOr<EmbeddedWeights> embedWeights(MLIRContext *context,
                                        const OutlinedInit &init,
                                        StringRef weightsPath,
                                        StringRef compilerVersion,
                                        const codegen::ObjectCache &cache) {
  Location loc = UnknownLoc::get(context);
  ConstantsLibrary lib = ConstantsPlanner(init).plan();
  EmbeddedWeights result;
  for (const auto &[value, ref] : init.constants)
    result.constants[value] = ref.kind == ATTN_MODEL_BUFFER_WEIGHT
                                  ? ConstantRef{ATTN_MODEL_BUFFER_CONSTANT, -1,
                                                lib.weightOffsets.at(ref.index)}
                                  : ref;
  // Zeros between constants: the same file gives the same library.
  result.blob.assign(lib.blockSize, 0);
  if (lib.offsets.empty())
    return result;

  // The host runs it, whatever the model's target: the init kernels move
  // and scale floats, which every target does bit for bit alike.
  llvm::Expected<schedules::BuildTarget> host =
      codegen::parseTarget("host", schedules::ScheduleKind::Layout);
  if (!host)
    return emitError(loc) << llvm::toString(host.takeError());
  TempDir tmp;
  if (std::error_code ec = tmp.create())
    return emitError(loc) << "cannot create a temporary directory: "
                          << ec.message() << ": check TMPDIR";
  LinkOptions link{*host, tmp.file("embedded_weights.so"),
                   compilerVersion.str(), /*verbose=*/false, cache};
  if (failed(linkModel(context, lib.plan, {}, link)) ||
      failed(runConstantsLibrary(loc, link.outputPath, weightsPath.str(), lib,
                                 result.blob)))
    return failure();
  return result;
}

} // namespace attnc::driver
