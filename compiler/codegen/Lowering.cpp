//===- compiler/codegen/Lowering.cpp - per-op Halide lowerings ------------===//
#include "compiler/codegen/Lowering.h"

using namespace mlir;

namespace attnc::codegen {

std::vector<Halide::Var> KernelBuilder::vars(size_t rank) {
  while (stages.vars.size() < rank)
    stages.vars.emplace_back("x" + std::to_string(stages.vars.size()));
  return {stages.vars.begin(), stages.vars.begin() + rank};
}

std::vector<Halide::Expr> KernelBuilder::args(size_t rank, size_t at,
                                              Halide::Expr index) {
  std::vector<Halide::Var> v = vars(rank);
  std::vector<Halide::Expr> result;
  for (size_t d = 0; d < rank; ++d)
    result.push_back(d == at ? index : Halide::Expr(v[d]));
  return result;
}

std::string KernelBuilder::name(llvm::StringRef base) {
  return base.str() + "_" + std::to_string(counter++);
}

const Tensor &KernelBuilder::get(Value value) const {
  auto it = values.find(value);
  assert(it != values.end() && "value used before its lowering defined it");
  return it->second;
}

void KernelBuilder::define(Value value, Tensor tensor) {
  values[value] = std::move(tensor);
}

const LowerFn *LoweringRegistry::lookup(Operation *op) const {
  std::optional<RegisteredOperationName> name = op->getRegisteredInfo();
  if (!name)
    return nullptr;
  auto it = fns.find(name->getTypeID());
  return it == fns.end() ? nullptr : &it->second;
}

const LoweringRegistry &getLoweringRegistry() {
  static const LoweringRegistry registry = [] {
    LoweringRegistry r;
    registerAttentionLowerings(r);
    registerCacheLowerings(r);
    registerElementwiseLowerings(r);
    registerLinearLowerings(r);
    registerNormLowerings(r);
    registerPositionLowerings(r);
    registerShapeLowerings(r);
    return r;
  }();
  return registry;
}

} // namespace attnc::codegen
