//===- compiler/passes/PruneEntryInputs.cpp - an entry's own inputs -------===//
#include "compiler/passes/Passes.h"
#include "dialects/attn/Analysis/DimSymbols.h"

#include "llvm/ADT/BitVector.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNPRUNEENTRYINPUTSPASS
#include "compiler/passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
/// The argument attribute naming an input (compiler/driver/Plan.h's).
constexpr llvm::StringLiteral kName = "attn.name";

struct PruneEntryInputs
    : attn::impl::AttnPruneEntryInputsPassBase<PruneEntryInputs> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto entry = func->getAttrOfType<StringAttr>(kEntryAttr);
    if (!entry)
      return markAllAnalysesPreserved();
    llvm::BitVector unread(func.getNumArguments());
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!arg.use_empty() || func.getArgAttr(i, kStateAttr))
        continue;
      auto name = func.getArgAttrOfType<StringAttr>(i, kName);
      // Decode's `position` is part of its signature, read or not.
      if (entry.getValue() == "decode" && name && name.getValue() == "position")
        continue;
      unread.set(i);
    }
    if (unread.none())
      return markAllAnalysesPreserved();
    func.eraseArguments(unread);
  }
};
} // namespace
