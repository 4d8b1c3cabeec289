//===- compiler/import/Registry.h - architectures by name -------*- C++ -*-===//
//
// The `architectures` names of config.json that attnc import reads, each
// with the writer of its family. A family registers its names from one
// function (registerGpt2, ...), called from getArchitectureRegistry, so a
// new architecture is one file and one line there.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_IMPORT_REGISTRY_H
#define ATTNC_COMPILER_IMPORT_REGISTRY_H

#include "compiler/import/AttnWriter.h"
#include "compiler/import/ImportContext.h"

#include "llvm/ADT/StringMap.h"

namespace attnc::import {

/// Writes the model's body (the model block and what it declares) for the
/// architecture `ctx.architecture()`, reporting problems to `ctx`.
using ImportFn = void (*)(ImportContext &ctx, AttnWriter &writer);

class ArchitectureRegistry {
public:
  void add(llvm::StringRef name, ImportFn import) { fns[name] = import; }
  /// The writer of `name`, or null.
  ImportFn find(llvm::StringRef name) const { return fns.lookup(name); }
  /// Every registered name, sorted.
  std::vector<std::string> names() const;

private:
  llvm::StringMap<ImportFn> fns;
};

const ArchitectureRegistry &getArchitectureRegistry();

void registerGpt2(ArchitectureRegistry &registry);
void registerBert(ArchitectureRegistry &registry);
void registerLlama(ArchitectureRegistry &registry);
void registerT5(ArchitectureRegistry &registry);
void registerGemma2(ArchitectureRegistry &registry);
void registerGptNeox(ArchitectureRegistry &registry);
void registerVit(ArchitectureRegistry &registry);
void registerBart(ArchitectureRegistry &registry);

} // namespace attnc::import

#endif // ATTNC_COMPILER_IMPORT_REGISTRY_H
