//===- dialects/attn/Analysis/DimSymbols.cpp - names of dynamic dims ------===//
#include "dialects/attn/Analysis/DimSymbols.h"

#include "dialects/attn/IR/AttnOps.h"

#include <optional>

using namespace mlir;
using namespace mlir::attn;

FailureOr<DimSymbols> DimSymbols::compute(func::FuncOp func) {
  DimSymbols result;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return func.emitError("argument ")
             << arg.getArgNumber() << " is not a ranked tensor";
    auto attr =
        func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), kDimSymbolsAttr);
    int64_t dynamic = type.getNumDynamicDims();
    if ((attr ? int64_t(attr.size()) : 0) != dynamic)
      return func.emitError("argument ")
             << arg.getArgNumber() << " has " << dynamic
             << " dynamic dims but its '" << kDimSymbolsAttr
             << "' attribute names " << (attr ? attr.size() : 0);
    SmallVector<StringAttr, 4> dims;
    unsigned next = 0;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        dims.push_back({});
        continue;
      }
      auto name = dyn_cast<StringAttr>(attr[next++]);
      if (!name || name.empty())
        return func.emitError("argument ")
               << arg.getArgNumber() << " has a dynamic dim with no symbol";
      dims.push_back(name);
    }
    result.names[arg] = std::move(dims);
  }
  if (failed(result.propagate(func.getBody().front())))
    return failure();
  return result;
}

ArrayRef<StringAttr> DimSymbols::lookup(Value value) const {
  auto it = names.find(value);
  assert(it != names.end() && "value outside the analysed function");
  return it->second;
}

LogicalResult DimSymbols::propagate(Block &block) {
  for (Operation &op : block)
    if (failed(propagate(&op)))
      return failure();
  return success();
}

LogicalResult DimSymbols::propagate(Operation *op) {
  if (auto kernel = dyn_cast<KernelOp>(op)) {
    Block &body = kernel.getBody().front();
    for (auto [arg, in] : llvm::zip(body.getArguments(), kernel.getInputs()))
      names[arg] = names.lookup(in);
    if (failed(propagate(body)))
      return failure();
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [res, v] : llvm::zip(kernel.getResults(), yield.getValues()))
      names[res] = names.lookup(v);
    return success();
  }
  // Each group of dims has one extent: a dynamic result dim takes the
  // symbol its operands in the group agree on.
  SmallVector<DimGroup> groups;
  if (auto map = dyn_cast<DimMapOpInterface>(op))
    map.getDimGroups(groups);
  else
    getBroadcastDimGroups(op, groups);
  for (Value result : op->getResults())
    if (auto type = dyn_cast<RankedTensorType>(result.getType()))
      names[result].assign(type.getRank(), StringAttr());
  for (const DimGroup &group : groups) {
    StringAttr name;
    std::optional<int64_t> nameDim;
    for (const DimRef &ref : group) {
      if (isa<OpResult>(ref.value) && ref.value.getDefiningOp() == op)
        continue;
      auto type = cast<RankedTensorType>(ref.value.getType());
      if (!type.isDynamicDim(ref.dim))
        continue;
      StringAttr operandName = names.lookup(ref.value)[ref.dim];
      if (name && name != operandName)
        return op->emitOpError("operand dim ")
               << ref.dim << " is '" << name.getValue() << "' on one side and '"
               << operandName.getValue() << "' on the other";
      name = operandName;
      nameDim = ref.dim;
    }
    for (const DimRef &ref : group) {
      if (!isa<OpResult>(ref.value) || ref.value.getDefiningOp() != op)
        continue;
      auto type = cast<RankedTensorType>(ref.value.getType());
      if (!type.isDynamicDim(ref.dim)) {
        if (name)
          return op->emitOpError("result dim ")
                 << ref.dim << " is static but operand dim " << *nameDim
                 << " is '" << name.getValue() << "'";
        continue;
      }
      names[ref.value][ref.dim] = name;
    }
  }
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d) && !names[result][d])
        return op->emitOpError("result dim ")
               << d << " is dynamic but no operand names its symbol";
  }
  return success();
}
