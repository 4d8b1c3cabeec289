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

std::optional<WeightInit> mlir::attn::getWeightInit(Value value) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (auto reader = dyn_cast<WeightInitOpInterface>(user)) {
      if (std::optional<WeightInit> init = reader.getWeightInit(use))
        return init;
    } else if (auto expr = dyn_cast<WeightExprOpInterface>(user)) {
      if (std::optional<WeightInit> init = getWeightInit(user->getResult(0)))
        return expr.getOperandWeightInit(use, *init);
    }
  }
  return std::nullopt;
}

#include "dialects/attn/IR/AttnInterfaces.cpp.inc"
