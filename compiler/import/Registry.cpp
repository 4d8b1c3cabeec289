//===- compiler/import/Registry.cpp - architectures by name ---------------===//
#include "compiler/import/Registry.h"

#include "llvm/ADT/STLExtras.h"

namespace attnc::import {

std::vector<std::string> ArchitectureRegistry::names() const {
  std::vector<std::string> all;
  for (const auto &entry : fns)
    all.push_back(entry.getKey().str());
  llvm::sort(all);
  return all;
}

const ArchitectureRegistry &getArchitectureRegistry() {
  static const ArchitectureRegistry registry = [] {
    ArchitectureRegistry r;
    registerGpt2(r);
    registerBert(r);
    registerLlama(r);
    registerT5(r);
    registerGemma2(r);
    registerGptNeox(r);
    registerVit(r);
    registerBart(r);
    return r;
  }();
  return registry;
}

} // namespace attnc::import
