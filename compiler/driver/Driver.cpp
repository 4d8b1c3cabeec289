//===- compiler/driver/Driver.cpp - IR and weights to a model library -----===//
#include "compiler/driver/Driver.h"

#include "compiler/driver/Link.h"
#include "compiler/driver/Plan.h"
#include "compiler/driver/WeightFolder.h"

#include "llvm/Support/FileSystem.h"

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

static LogicalResult build(func::FuncOp func, const CompileOptions &options) {
  FailureOr<WeightSection> weights = foldWeights(func, options.weightsPath);
  if (failed(weights))
    return failure();
  FailureOr<Plan> plan = buildPlan(func, *weights, options.defaultModelName);
  if (failed(plan))
    return failure();
  LinkOptions link{options.target, options.outputPath, getVersionString().str(),
                   options.verbose};
  return linkModel(func.getContext(), *plan, *weights, link);
}

LogicalResult compileModel(ModuleOp module, const CompileOptions &options) {
  FailureOr<func::FuncOp> func = getModelFunction(module);
  if (succeeded(func) && succeeded(build(*func, options)))
    return success();
  llvm::sys::fs::remove(options.outputPath);
  return failure();
}

} // namespace attnc::driver
