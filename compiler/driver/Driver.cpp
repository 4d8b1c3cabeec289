//===- compiler/driver/Driver.cpp - IR and weights to a model library -----===//
#include "compiler/driver/Driver.h"

#include "compiler/driver/Link.h"
#include "compiler/driver/Plan.h"
#include "compiler/driver/WeightFolder.h"
#include "compiler/driver/WeightInit.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace attnc::driver {

llvm::StringRef getVersionString() { return ATTNC_VERSION_STRING; }

FailureOr<func::FuncOp> getModelFunction(ModuleOp module) {
  if (auto model = module.lookupSymbol<func::FuncOp>("model"))
    return model;
  auto funcs = module.getOps<func::FuncOp>();
  if (!funcs.empty() && std::next(funcs.begin()) == funcs.end())
    return *funcs.begin();
  return module.emitError("expected one model function (@model), found ")
         << std::distance(funcs.begin(), funcs.end())
         << " functions and none named @model";
}

/// `attnc --verbose`: how many of the file's tensors the model ignores, and
/// the first few of them (a whole checkpoint for part of a model is fine).
static void reportUnusedTensors(const WeightSection &weights,
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

/// Constants folded now and embedded in the library (attnc --weights).
static FailureOr<Plan> planEmbedded(func::FuncOp func,
                                    const CompileOptions &options,
                                    std::vector<uint8_t> &blob) {
  FailureOr<WeightSection> weights = foldWeights(func, options.weightsPath);
  if (failed(weights))
    return failure();
  if (options.verbose)
    reportUnusedTensors(*weights, options.weightsPath);
  FailureOr<Plan> plan =
      buildPlan(func, weights->constants, options.defaultModelName);
  if (succeeded(plan))
    plan->constantsSize = weights->blob.size();
  blob = std::move(weights->blob);
  return plan;
}

/// Weights read from a file at load, constants computed by "init".
static FailureOr<Plan> planLoadTime(func::FuncOp func,
                                    const CompileOptions &options) {
  FailureOr<WeightInit> init = outlineWeightInit(func);
  if (failed(init))
    return failure();
  FailureOr<Plan> plan =
      buildPlan(func, init->constants, options.defaultModelName);
  if (succeeded(plan))
    addInitEntry(*plan, *init);
  return plan;
}

static LogicalResult build(func::FuncOp func, const CompileOptions &options) {
  std::vector<uint8_t> blob;
  FailureOr<Plan> plan = options.weightsPath.empty()
                             ? planLoadTime(func, options)
                             : planEmbedded(func, options, blob);
  if (failed(plan))
    return failure();
  LinkOptions link{options.target, options.outputPath, getVersionString().str(),
                   options.verbose};
  return linkModel(func.getContext(), *plan, blob, link);
}

LogicalResult compileModel(ModuleOp module, const CompileOptions &options) {
  FailureOr<func::FuncOp> func = getModelFunction(module);
  if (succeeded(func) && succeeded(build(*func, options)))
    return success();
  llvm::sys::fs::remove(options.outputPath);
  return failure();
}

} // namespace attnc::driver
