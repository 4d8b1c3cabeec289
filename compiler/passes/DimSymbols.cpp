//===- compiler/passes/DimSymbols.cpp - names of dynamic dims -------------===//
#include "compiler/passes/DimSymbols.h"

#include "dialects/attn/IR/AttnOps.h"

using namespace mlir;
using namespace mlir::attn;

FailureOr<DimSymbols> DimSymbols::compute(func::FuncOp func) {
  DimSymbols result;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return func.emitError("argument ")
             << arg.getArgNumber() << " is not a ranked tensor";
    auto attr = func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(),
                                                 kDimSymbolsAttr);
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
  // Every op keeps its leading dims: a dynamic result dim takes its name
  // from the operands of the same rank, which must all agree on it.
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    SmallVector<StringAttr, 4> dims(type.getRank());
    for (int64_t d = 0; d < type.getRank(); ++d) {
      for (Value operand : op->getOperands()) {
        auto otype = dyn_cast<RankedTensorType>(operand.getType());
        if (!otype || otype.getRank() != type.getRank() ||
            !otype.isDynamicDim(d))
          continue;
        StringAttr name = names.lookup(operand)[d];
        if (!type.isDynamicDim(d))
          return op->emitOpError("result dim ")
                 << d << " is static but operand dim " << d << " is '"
                 << name.getValue() << "'";
        if (dims[d] && dims[d] != name)
          return op->emitOpError("operand dim ")
                 << d << " is '" << dims[d].getValue() << "' on one side and '"
                 << name.getValue() << "' on the other";
        dims[d] = name;
      }
      if (type.isDynamicDim(d) && !dims[d])
        return op->emitOpError("result dim ")
               << d << " is dynamic but no operand names its symbol";
    }
    names[result] = std::move(dims);
  }
  return success();
}
