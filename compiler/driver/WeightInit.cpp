//===- compiler/driver/WeightInit.cpp - weights read at load --------------===//
#include "compiler/driver/WeightInit.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <functional>
#include <map>

using namespace mlir;
using namespace mlir::attn;

namespace attnc::driver {
namespace {

constexpr llvm::StringLiteral kInitFunctionName = "attn_init";

class Outliner {
public:
  explicit Outliner(ArrayRef<func::FuncOp> funcs)
      : funcs(funcs), func(funcs.front()) {}

  FailureOr<OutlinedInit> run() {
    if (failed(collectWeights()))
      return failure();
    SmallVector<Value> roots = collectRoots();
    createInitFunction();
    for (Value root : roots)
      if (!result.constants.count(root))
        result.constants[root] = refFor(root);
    OpBuilder::atBlockEnd(initBlock).create<func::ReturnOp>(func.getLoc());
    return std::move(result);
  }

private:
  /// The weights table: each attn.weight name once, in program order.
  LogicalResult collectWeights() {
    auto visit = [&](WeightOp op) {
      auto [it, inserted] =
          weightIndex.try_emplace(op.getName(), result.weights.size());
      ArrayRef<int64_t> shape = op.getType().getShape();
      // The verifier admits only element types the ABI has.
      attn_model_dtype dtype = *modelDType(op.getType().getElementType());
      attn_model_weight_layout layout = modelWeightLayout(op);
      if (inserted) {
        result.weights.push_back(
            {op.getName().str(), {shape.begin(), shape.end()}, dtype, layout});
        weightTypes.push_back(op.getType());
        return WalkResult::advance();
      }
      const PlanWeight &first = result.weights[it->second];
      if (ArrayRef(first.shape) == shape && first.dtype == dtype &&
          first.layout == layout)
        return WalkResult::advance();
      op.emitError() << "weight '" << op.getName()
                     << "' is declared again with another shape, dtype or "
                        "layout: give each weight one type";
      return WalkResult::interrupt();
    };
    for (func::FuncOp f : funcs)
      if (f.walk(visit).wasInterrupted())
        return failure();
    return success();
  }

  /// Kernels read weight expressions; a model may also return one.
  SmallVector<Value> collectRoots() {
    llvm::SetVector<Value> roots;
    for (func::FuncOp f : funcs)
      for (Operation &op : f.getBody().front())
        if (isa<KernelOp, func::ReturnOp>(op))
          for (Value operand : op.getOperands())
            if (Operation *def = operand.getDefiningOp();
                def && isWeightExpressionOp(def))
              roots.insert(operand);
    return roots.takeVector();
  }

  void createInitFunction() {
    auto module = func->getParentOfType<ModuleOp>();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto init = b.create<func::FuncOp>(
        func.getLoc(), kInitFunctionName,
        FunctionType::get(func.getContext(), weightTypes, {}));
    init.setPrivate();
    initBlock = init.addEntryBlock();
  }

  /// The expression computing `value`, naming its weights: equal keys are
  /// one constant (a weight tied in two places is transposed once).
  std::string key(Value value) {
    Operation *op = value.getDefiningOp();
    if (auto w = dyn_cast<WeightOp>(op))
      return "weight(" + w.getName().str() + ")";
    std::string s;
    llvm::raw_string_ostream os(s);
    os << op->getName() << op->getAttrDictionary() << value.getType() << "(";
    for (Value operand : op->getOperands())
      os << key(operand) << ",";
    os << ")";
    return s;
  }

  ConstantRef refFor(Value root) {
    if (auto w = root.getDefiningOp<WeightOp>())
      return {ATTN_MODEL_BUFFER_WEIGHT, int32_t(weightIndex.at(w.getName())),
              0};
    auto [it, inserted] = byKey.try_emplace(key(root), ConstantRef{});
    if (inserted)
      it->second = outline(root);
    return it->second;
  }

  /// A new init kernel computing `root` into a new constant.
  ConstantRef outline(Value root) {
    // The expression's ops in dependency order, and the weights it reads.
    llvm::SetVector<Operation *> ops;
    llvm::SetVector<WeightOp> leaves;
    std::function<void(Value)> visit = [&](Value v) {
      Operation *op = v.getDefiningOp();
      if (auto w = dyn_cast<WeightOp>(op)) {
        leaves.insert(w);
        return;
      }
      for (Value operand : op->getOperands())
        visit(operand);
      ops.insert(op);
    };
    visit(root);

    InitStep step;
    SmallVector<Value> inputs;
    for (WeightOp w : leaves.getArrayRef()) {
      int32_t index = weightIndex.at(w.getName());
      step.weights.push_back(index);
      inputs.push_back(initBlock->getArgument(index));
    }
    std::string name = llvm::formatv("init{0}_{1}", result.steps.size(),
                                     WeightOp(leaves.front()).getName());
    OpBuilder b = OpBuilder::atBlockEnd(initBlock);
    auto kernel = b.create<KernelOp>(root.getLoc(), TypeRange{root.getType()},
                                     b.getStringAttr(name), inputs);
    Block *body = b.createBlock(&kernel.getBody());
    IRMapping mapping;
    for (auto [leaf, in] : llvm::zip(leaves, inputs)) {
      WeightOp w = leaf;
      mapping.map(w.getResult(), body->addArgument(in.getType(), w.getLoc()));
    }
    for (Operation *op : ops)
      b.clone(*op, mapping);
    b.create<YieldOp>(root.getLoc(), mapping.lookup(root));

    auto type = cast<RankedTensorType>(root.getType());
    uint64_t offset = llvm::alignTo(result.constantsSize, kConstantAlignment);
    result.constantsSize =
        offset +
        type.getNumElements() * dtypeSize(*modelDType(type.getElementType()));
    step.kernel = kernel;
    step.offset = offset;
    result.steps.push_back(std::move(step));
    return {ATTN_MODEL_BUFFER_CONSTANT, -1, offset};
  }

  ArrayRef<func::FuncOp> funcs;
  func::FuncOp func;
  OutlinedInit result;
  llvm::StringMap<size_t> weightIndex;
  /// The declared type of each weight in the table.
  SmallVector<Type> weightTypes;
  std::map<std::string, ConstantRef> byKey;
  Block *initBlock = nullptr;
};

} // namespace

FailureOr<OutlinedInit> outlineWeightInit(ArrayRef<func::FuncOp> funcs) {
  return Outliner(funcs).run();
}

void addInitEntry(Plan &plan, const OutlinedInit &init) {
  plan.weights = init.weights;
  plan.constantsSize = llvm::alignTo(init.constantsSize, kConstantAlignment);
  PlanEntry entry;
  entry.name = "init";
  // One buffer per weight read, shared by the kernels that read it.
  std::vector<int32_t> weightBuffer(init.weights.size(), -1);
  for (const InitStep &s : init.steps) {
    PlanStep step{plan.addKernel(KernelOp(s.kernel)), {}};
    plan.kernels[step.kernel].forInit = true;
    for (int32_t w : s.weights) {
      if (weightBuffer[w] < 0) {
        weightBuffer[w] = entry.buffers.size();
        entry.buffers.push_back({ATTN_MODEL_BUFFER_WEIGHT, w,
                                 init.weights[w].dtype,
                                 staticDims(init.weights[w].shape), 0});
      }
      step.args.push_back(weightBuffer[w]);
    }
    auto type = cast<RankedTensorType>(s.kernel->getResult(0).getType());
    step.args.push_back(entry.buffers.size());
    entry.buffers.push_back({ATTN_MODEL_BUFFER_CONSTANT, -1,
                             *modelDType(type.getElementType()),
                             staticDims(type.getShape()), s.offset});
    entry.steps.push_back(std::move(step));
  }
  plan.entries.push_back(std::move(entry));
}

} // namespace attnc::driver
