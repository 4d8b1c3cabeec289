//===- compiler/driver/Plan.cpp - execution plan of a model ---------------===//
#include "compiler/driver/Plan.h"

#include "dialects/attn/Analysis/DimSymbols.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::attn;

namespace attnc::driver {
namespace {

class PlanBuilder {
public:
  PlanBuilder(func::FuncOp func, const ConstantMap &constants,
              const DimSymbols &dims, Plan &plan)
      : func(func), constants(constants), dimSymbols(dims), plan(plan) {}

  /// Adds the function's entry to the plan.
  LogicalResult build(StringRef defaultName) {
    auto name = func->getAttrOfType<StringAttr>(kModelNameAttr);
    if (plan.modelName.empty())
      plan.modelName = name ? name.str() : defaultName.str();
    auto entryName = func->getAttrOfType<StringAttr>(mlir::attn::kEntryAttr);
    run.name = entryName ? entryName.str() : "run";
    for (const PlanEntry &other : plan.entries)
      if (other.name == run.name)
        return func.emitOpError("is a second '")
               << run.name << "' entry: give each function its own entry";
    if (failed(collectSymbols()) || failed(addInputs()))
      return failure();
    for (Operation &op : func.getBody().front()) {
      if (isWeightExpressionOp(&op))
        continue;
      if (auto kernel = dyn_cast<KernelOp>(op)) {
        if (failed(addKernel(kernel)))
          return failure();
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        if (failed(addOutputs(ret)))
          return failure();
      } else {
        return op.emitOpError("is outside every attn.kernel: only kernels and "
                              "weight expressions can be linked; run the attn "
                              "pipeline first");
      }
    }
    plan.entries.push_back(std::move(run));
    return success();
  }

private:
  /// Symbols from `attn.symbols`, or else from the arguments' dim names; the
  /// entries of one model share them.
  LogicalResult collectSymbols() {
    if (!plan.symbols.empty()) {
      for (auto [i, symbol] : llvm::enumerate(plan.symbols))
        symbolIndex[symbol.first] = i;
      return success();
    }
    if (Attribute attr = func->getAttr(mlir::attn::kSymbolsAttr)) {
      auto list = dyn_cast<ArrayAttr>(attr);
      if (!list)
        return symbolsError();
      for (Attribute entry : list) {
        auto pair = dyn_cast<ArrayAttr>(entry);
        if (!pair || pair.size() != 2)
          return symbolsError();
        auto symName = dyn_cast<StringAttr>(pair[0]);
        auto bound = dyn_cast<IntegerAttr>(pair[1]);
        if (!symName || symName.empty() || !bound || bound.getInt() < 0)
          return symbolsError();
        if (!addSymbol(symName.getValue(), bound.getInt()))
          return func.emitOpError("declares symbol '")
                 << symName.getValue() << "' twice in '"
                 << mlir::attn::kSymbolsAttr << "'";
      }
      return success();
    }
    for (BlockArgument arg : func.getArguments())
      for (StringAttr symName : dimSymbols.lookup(arg))
        if (symName)
          addSymbol(symName.getValue(), 0);
    return success();
  }

  LogicalResult symbolsError() {
    return func.emitOpError("has a malformed '")
           << mlir::attn::kSymbolsAttr
           << "' attribute: expected an array of [name, bound] pairs such as "
              "[[\"B\", 0], [\"S\", 1024]] (bound 0: unbounded)";
  }

  bool addSymbol(StringRef symName, int64_t bound) {
    if (!symbolIndex.try_emplace(symName, plan.symbols.size()).second)
      return false;
    plan.symbols.push_back({symName.str(), bound});
    return true;
  }

  /// A new buffer shaped like `value`, or failure reported at `loc` about
  /// `what` (e.g. "input 'x'").
  FailureOr<int32_t> addBuffer(Value value, attn_model_buffer_kind kind,
                               Location loc, const Twine &what) {
    auto type = cast<RankedTensorType>(value.getType());
    PlanBuffer buffer;
    buffer.kind = kind;
    if (std::optional<attn_model_dtype> dtype =
            modelDType(type.getElementType()))
      buffer.dtype = *dtype;
    else
      return emitError(loc) << what << " has type " << type
                            << " has an element type a model library cannot "
                               "hold: use f32, i32, bf16, f16, i8 or ui8";
    ArrayRef<StringAttr> names = dimSymbols.lookup(value);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        buffer.dims.push_back({-1, type.getDimSize(d)});
        continue;
      }
      auto it = symbolIndex.find(names[d].getValue());
      if (it == symbolIndex.end())
        return emitError(loc)
               << what << " dim " << d << " is symbol '" << names[d].getValue()
               << "', which the model's '" << mlir::attn::kSymbolsAttr
               << "' does not declare: declare it with its bound";
      buffer.dims.push_back({int32_t(it->second), 0});
    }
    run.buffers.push_back(std::move(buffer));
    bufferOf[value] = run.buffers.size() - 1;
    return int32_t(run.buffers.size() - 1);
  }

  LogicalResult addInputs() {
    llvm::StringSet<> names;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (auto state =
              func.getArgAttrOfType<StringAttr>(i, mlir::attn::kStateAttr)) {
        if (failed(addState(arg, state.getValue())))
          return failure();
        continue;
      }
      auto attr = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
      std::string name = attr ? attr.str() : "input" + std::to_string(i);
      if (!names.insert(name).second)
        return func.emitOpError("has two inputs named '")
               << name << "': give each input its own name";
      FailureOr<int32_t> buffer = addBuffer(
          arg, ATTN_MODEL_BUFFER_INPUT, func.getLoc(), "input '" + name + "'");
      if (failed(buffer))
        return failure();
      run.buffers[*buffer].index = run.inputs.size();
      run.inputs.push_back({name, *buffer});
    }
    return success();
  }

  /// A state argument: a STATE buffer of the descriptor's state table, which
  /// every entry that takes the state shares.
  LogicalResult addState(BlockArgument arg, StringRef name) {
    FailureOr<int32_t> buffer = addBuffer(
        arg, ATTN_MODEL_BUFFER_STATE, func.getLoc(), "state '" + name + "'");
    if (failed(buffer))
      return failure();
    PlanBuffer &b = run.buffers[*buffer];
    if (b.dtype != ATTN_MODEL_F32 && b.dtype != ATTN_MODEL_F16 &&
        b.dtype != ATTN_MODEL_BF16 && b.dtype != ATTN_MODEL_I8)
      return func.emitOpError("state '")
             << name << "' must be f32, f16, bf16 or i8";
    auto it = llvm::find_if(plan.states,
                            [&](const PlanState &s) { return s.name == name; });
    if (it == plan.states.end()) {
      plan.states.push_back({name.str(), b.dims, b.dtype});
      it = plan.states.end() - 1;
    } else if (it->dtype != b.dtype ||
               !llvm::equal(
                   it->dims, b.dims, [](const PlanDim &x, const PlanDim &y) {
                     return x.symbol == y.symbol && x.extent == y.extent;
                   })) {
      return func.emitOpError("state '")
             << name << "' has another type than in an earlier entry";
    }
    b.index = int32_t(it - plan.states.begin());
    return success();
  }

  /// The buffer a kernel result is written to: its own temp, or for a
  /// cache write the cache's own buffer (the kernel writes it in place).
  FailureOr<int32_t> resultBuffer(KernelOp kernel, unsigned i) {
    auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
    if (auto write = yield.getOperand(i).getDefiningOp<CacheWriteOp>())
      if (auto arg = dyn_cast<BlockArgument>(write.getCache()))
        return sourceBuffer(kernel.getInputs()[arg.getArgNumber()],
                            kernel.getLoc());
    return addBuffer(
        kernel.getResult(i), ATTN_MODEL_BUFFER_TEMP, kernel.getLoc(),
        "result " + Twine(i) + " of kernel @" + kernel.getSymName());
  }

  /// The buffer of a kernel operand or returned value: an input, a kernel
  /// result, or a constant or weight (created on first use).
  FailureOr<int32_t> sourceBuffer(Value value, Location loc) {
    auto it = bufferOf.find(value);
    if (it != bufferOf.end())
      return it->second;
    auto ref = constants.find(value);
    if (ref == constants.end())
      return emitError(loc) << "operand has no constant or weight: the "
                               "weights were planned for another function";
    FailureOr<int32_t> buffer =
        addBuffer(value, ref->second.kind, value.getLoc(), "weight");
    if (succeeded(buffer)) {
      run.buffers[*buffer].index = ref->second.index;
      run.buffers[*buffer].offset = ref->second.offset;
    }
    return buffer;
  }

  /// The flops of `kernel`'s ops as terms in the model's symbols; a static
  /// dim multiplies the coefficient.
  std::vector<FlopTerm> flopTerms(KernelOp kernel) {
    std::vector<FlopTerm> terms;
    kernel.getBody().walk([&](FlopCountOpInterface op) {
      SmallVector<std::pair<Value, unsigned>> dims;
      FlopTerm term{op.getFlopCount(dims), {}};
      for (auto [value, d] : dims) {
        auto type = cast<RankedTensorType>(value.getType());
        if (!type.isDynamicDim(d)) {
          term.coeff *= double(type.getDimSize(d));
          continue;
        }
        ArrayRef<StringAttr> names = dimSymbols.lookup(value);
        auto it = d < names.size() && names[d]
                      ? symbolIndex.find(names[d].getValue())
                      : symbolIndex.end();
        if (it == symbolIndex.end())
          return; // a dim without a symbol: this op is not counted
        term.symbols.push_back(int32_t(it->second));
      }
      if (term.symbols.size() <= ATTN_MODEL_MAX_FLOP_SYMBOLS)
        terms.push_back(std::move(term));
    });
    return terms;
  }

  LogicalResult addKernel(KernelOp kernel) {
    PlanStep step{plan.addKernel(kernel), {}};
    plan.kernels[step.kernel].flops = flopTerms(kernel);
    for (Value operand : kernel.getInputs()) {
      FailureOr<int32_t> buffer = sourceBuffer(operand, kernel.getLoc());
      if (failed(buffer))
        return failure();
      step.args.push_back(*buffer);
    }
    for (unsigned i = 0; i < kernel.getNumResults(); ++i) {
      FailureOr<int32_t> buffer = resultBuffer(kernel, i);
      if (failed(buffer))
        return failure();
      bufferOf[kernel.getResult(i)] = *buffer;
      step.args.push_back(*buffer);
    }
    run.steps.push_back(std::move(step));
    return success();
  }

  /// Kernel results become outputs in place; anything else (an input, a
  /// weight, a value returned twice) is copied into an output buffer of its
  /// own, because the runtime binds each output to exactly one buffer.
  LogicalResult addOutputs(func::ReturnOp ret) {
    if (ret.getNumOperands() == 0)
      return ret.emitOpError("returns nothing: a model needs an output");
    llvm::StringSet<> names;
    std::vector<PlanStep> copies;
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      auto attr = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
      std::string name = attr ? attr.str() : "output" + std::to_string(i);
      if (!names.insert(name).second)
        return func.emitOpError("has two outputs named '")
               << name << "': give each output its own name";
      FailureOr<int32_t> source = sourceBuffer(value, ret.getLoc());
      if (failed(source))
        return failure();
      int32_t out = *source;
      if (run.buffers[*source].kind != ATTN_MODEL_BUFFER_TEMP) {
        FailureOr<int32_t> copy =
            addBuffer(value, ATTN_MODEL_BUFFER_OUTPUT, ret.getLoc(),
                      "output '" + name + "'");
        if (failed(copy))
          return failure();
        out = *copy;
        copies.push_back({plan.copyKernel(), {*source, out}});
      }
      run.buffers[out].kind = ATTN_MODEL_BUFFER_OUTPUT;
      run.buffers[out].index = i;
      run.buffers[out].offset = 0;
      run.outputs.push_back({name, out});
    }
    for (PlanStep &copy : copies)
      run.steps.push_back(std::move(copy));
    return success();
  }

  func::FuncOp func;
  const ConstantMap &constants;
  const DimSymbols &dimSymbols;
  Plan &plan;
  PlanEntry run;
  llvm::StringMap<unsigned> symbolIndex;
  llvm::DenseMap<Value, int32_t> bufferOf;
};

} // namespace

int32_t Plan::addKernel(KernelOp op) {
  std::string fnName = "attn_k" + std::to_string(kernels.size()) + "_";
  for (char c : op.getSymName())
    fnName += llvm::isAlnum(c) ? c : '_';
  fnName =
      fnByStructure.try_emplace(op.getStructuralKey(), fnName).first->second;
  kernels.push_back({op, op.getSymName().str(), fnName,
                     int32_t(op.getInputs().size()),
                     int32_t(op.getNumResults())});
  return kernels.size() - 1;
}

int32_t Plan::copyKernel() {
  if (copyIndex < 0) {
    copyIndex = kernels.size();
    kernels.push_back({nullptr, kCopyKernelName.str(), "", 1, 1});
  }
  return copyIndex;
}

std::vector<PlanDim> staticDims(ArrayRef<int64_t> shape) {
  std::vector<PlanDim> dims;
  for (int64_t d : shape)
    dims.push_back({-1, d});
  return dims;
}

std::optional<attn_model_dtype> modelDType(Type element) {
  if (element.isF32())
    return ATTN_MODEL_F32;
  if (element.isSignlessInteger(32))
    return ATTN_MODEL_I32;
  if (element.isBF16())
    return ATTN_MODEL_BF16;
  if (element.isF16())
    return ATTN_MODEL_F16;
  if (element.isSignlessInteger(8))
    return ATTN_MODEL_I8;
  if (element.isUnsignedInteger(8)) // 4-bit weights, two per byte
    return ATTN_MODEL_U8;
  return std::nullopt;
}

attn_model_weight_layout modelWeightLayout(WeightOp op) {
  std::optional<WeightLayout> layout = op.getLayout();
  if (!layout)
    return ATTN_MODEL_WEIGHT_ANY;
  return *layout == WeightLayout::in_out ? ATTN_MODEL_WEIGHT_IN_OUT
                                         : ATTN_MODEL_WEIGHT_OUT_IN;
}

FailureOr<Plan> buildPlan(ArrayRef<func::FuncOp> funcs,
                          const ConstantMap &constants, StringRef defaultName) {
  Plan plan;
  for (func::FuncOp func : funcs) {
    FailureOr<DimSymbols> dims = DimSymbols::compute(func);
    if (failed(dims) ||
        failed(PlanBuilder(func, constants, *dims, plan).build(defaultName)))
      return failure();
  }
  return plan;
}

} // namespace attnc::driver
