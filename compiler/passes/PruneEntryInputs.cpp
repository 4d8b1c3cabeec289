//===- compiler/passes/PruneEntryInputs.cpp - an entry's own inputs -------===//
#include "compiler/passes/Passes.h"
#include "dialects/attn/Analysis/DimSymbols.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringSet.h"

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
    std::string pruned;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!arg.use_empty() || func.getArgAttr(i, kStateAttr))
        continue;
      auto name = func.getArgAttrOfType<StringAttr>(i, kName);
      // Decode's `position` is part of its signature, read or not.
      if (entry.getValue() == "decode" && name && name.getValue() == "position")
        continue;
      unread.set(i);
      pruned += (pruned.empty() ? "'" : ", '") +
                (name ? name.str() : "input" + std::to_string(i)) + "'";
    }
    if (unread.none())
      return markAllAnalysesPreserved();
    func.eraseArguments(unread);
    if (failed(checkSymbolsBound(func, entry.getValue(), pruned)))
      signalPassFailure();
  }

  /// Every symbol a value of `func` uses is bound by an argument's dim, as
  /// the runtime binds symbols from the entry's inputs and states only.
  LogicalResult checkSymbolsBound(func::FuncOp func, StringRef entry,
                                  StringRef pruned) {
    llvm::StringSet<> bound;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto names = func.getArgAttrOfType<ArrayAttr>(i, kDimSymbolsAttr))
        for (auto name : names.getAsRange<StringAttr>())
          bound.insert(name.getValue());
    FailureOr<DimSymbols> dims = DimSymbols::compute(func);
    if (failed(dims))
      return failure();
    WalkResult walk = func.walk([&](Operation *op) {
      for (Value result : op->getResults())
        for (StringAttr name : dims->lookup(result))
          if (name && !bound.contains(name.getValue())) {
            op->emitOpError("uses dim '")
                << name.getValue() << "', which no input or state of entry '"
                << entry << "' binds once its unread inputs (" << pruned
                << ") are dropped: give the entry a tensor of that dim";
            return WalkResult::interrupt();
          }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }
};
} // namespace
