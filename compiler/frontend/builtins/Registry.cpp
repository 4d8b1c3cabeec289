//===- compiler/frontend/builtins/Registry.cpp - every builtin ------------===//
//
// Part of attnc. The one list of the builtin families. Registration is by
// explicit calls: a static initializer in a static library would be dropped
// by the linker when nothing else refers to its file.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"

using namespace attnc;

BuiltinRegistry
attnc::makeBuiltinRegistry(llvm::ArrayRef<std::string> functions) {
  BuiltinRegistry registry;
  registerLinearBuiltins(registry);
  registerNormBuiltins(registry);
  registerElementwiseBuiltins(registry);
  registerEmbeddingBuiltins(registry);
  registerPositionBiasBuiltins(registry);
  registerAttentionBuiltins(registry);
  registerTensorBuiltins(registry);
  registerFunctionBuiltins(registry, functions);
  return registry;
}
