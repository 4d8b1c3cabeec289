//===- dialects/attn/IR/AttnInterfaces.cpp - attn op interfaces -----------===//
#include "dialects/attn/IR/AttnInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::attn;

void mlir::attn::getBroadcastDimGroups(Operation *op,
                                       SmallVectorImpl<DimGroup> &groups) {
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      DimGroup group{{result, d}};
      int64_t fromEnd = type.getRank() - d;
      for (Value operand : op->getOperands()) {
        auto otype = dyn_cast<RankedTensorType>(operand.getType());
        if (otype && otype.getRank() >= fromEnd)
          group.push_back({operand, otype.getRank() - fromEnd});
      }
      groups.push_back(std::move(group));
    }
  }
}

#include "dialects/attn/IR/AttnInterfaces.cpp.inc"
