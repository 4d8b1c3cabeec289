//===- compiler/driver/Driver.cpp - IR and weights to a model library -----===//
#include "compiler/driver/Driver.h"

#include "compiler/driver/EmbedWeights.h"
#include "compiler/driver/Link.h"
#include "compiler/driver/Plan.h"
#include "compiler/driver/WeightInit.h"
#include "dialects/attn/Analysis/DimSymbols.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace attnc::driver {

llvm::StringRef getVersionString() { return ATTNC_VERSION_STRING; }

/// The functions the module's entries are made from: the model's ("run")
/// and those marked with an `attn.entry` (a decoder's "prefill", "decode").
static SmallVector<func::FuncOp> entryCandidates(ModuleOp module,
                                                 bool withEntry) {
  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isPrivate() &&
        bool(func->getAttr(mlir::attn::kEntryAttr)) == withEntry)
      funcs.push_back(func);
  return funcs;
}

FailureOr<func::FuncOp> getModelFunction(ModuleOp module) {
  if (auto model = module.lookupSymbol<func::FuncOp>("model"))
    return model;
  SmallVector<func::FuncOp> funcs = entryCandidates(module, false);
  if (funcs.size() == 1)
    return funcs.front();
  return module.emitError("expected one model function (@model), found ")
         << funcs.size() << " functions and none named @model";
}

FailureOr<SmallVector<func::FuncOp>> getEntryFunctions(ModuleOp module) {
  FailureOr<func::FuncOp> model = getModelFunction(module);
  if (failed(model))
    return failure();
  SmallVector<func::FuncOp> funcs{*model};
  llvm::append_range(funcs, entryCandidates(module, true));
  return funcs;
}

/// `attnc --verbose`: how many of the file's tensors the model ignores, and
/// the first few of them (a whole checkpoint for part of a model is fine).
static void reportUnusedTensors(const WeightsFileUse &weights,
                                llvm::StringRef path) {
  const std::vector<std::string> &unused = weights.unusedTensors;
  llvm::errs() << llvm::formatv(
      "attnc: the model reads {0} of the {1} tensors in '{2}'",
      weights.fileTensors - unused.size(), weights.fileTensors, path);
  if (unused.empty()) {
    llvm::errs() << "\n";
    return;
  }
  constexpr size_t kShown = 5;
  llvm::errs() << "; " << unused.size() << " are not used: ";
  for (size_t i = 0; i < std::min(unused.size(), kShown); ++i)
    llvm::errs() << (i ? ", " : "") << "'" << unused[i] << "'";
  if (unused.size() > kShown)
    llvm::errs() << ", ...";
  llvm::errs() << "\n";
}

/// Weights read from a file at load, constants computed by "init".
static FailureOr<Plan> planLoadTime(ArrayRef<func::FuncOp> funcs,
                                    const CompileOptions &options) {
  FailureOr<OutlinedInit> init = outlineWeightInit(funcs);
  if (failed(init))
    return failure();
  FailureOr<Plan> plan =
      buildPlan(funcs, init->constants, options.defaultModelName);
  if (succeeded(plan))
    addInitEntry(*plan, *init);
  return plan;
}

/// Weights and the constants "init" computes from them, computed now by the
/// same kernels and embedded in the library (attnc --weights).
static FailureOr<Plan> planEmbedded(ArrayRef<func::FuncOp> funcs,
                                    const CompileOptions &options,
                                    std::vector<uint8_t> &blob) {
  FailureOr<WeightsFileUse> use = checkWeightsFile(funcs, options.weightsPath);
  if (failed(use))
    return failure();
  if (options.verbose)
    reportUnusedTensors(*use, options.weightsPath);
  FailureOr<OutlinedInit> init = outlineWeightInit(funcs);
  if (failed(init))
    return failure();
  FailureOr<EmbeddedWeights> weights =
      embedWeights(func::FuncOp(funcs.front()).getContext(), *init,
                   options.weightsPath, getVersionString(), options.cache);
  if (failed(weights))
    return failure();
  if (options.verbose)
    llvm::errs() << llvm::formatv(
        "attnc: embedding {0} bytes of constants, {1} of them computed by "
        "{2} init kernels\n",
        weights->blob.size(), init->constantsSize, init->steps.size());
  FailureOr<Plan> plan =
      buildPlan(funcs, weights->constants, options.defaultModelName);
  if (succeeded(plan))
    plan->constantsSize = weights->blob.size();
  blob = std::move(weights->blob);
  return plan;
}

static LogicalResult build(ArrayRef<func::FuncOp> funcs,
                           const CompileOptions &options) {
  std::vector<uint8_t> blob;
  FailureOr<Plan> plan = options.weightsPath.empty()
                             ? planLoadTime(funcs, options)
                             : planEmbedded(funcs, options, blob);
  if (failed(plan))
    return failure();
  LinkOptions link{options.target, options.outputPath, getVersionString().str(),
                   options.verbose, options.cache};
  func::FuncOp model = funcs.front();
  return linkModel(model.getContext(), *plan, blob, link);
}

LogicalResult compileModel(ModuleOp module, const CompileOptions &options) {
  FailureOr<SmallVector<func::FuncOp>> funcs = getEntryFunctions(module);
  if (succeeded(funcs) && succeeded(build(*funcs, options)))
    return success();
  // An older library is removed so no build system takes it for the result;
  // whatever else is at -o (a directory) is the user's.
  if (llvm::sys::fs::is_regular_file(options.outputPath))
    llvm::sys::fs::remove(options.outputPath);
  return failure();
}

} // namespace attnc::driver
