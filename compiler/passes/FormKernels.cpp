//===- compiler/passes/FormKernels.cpp - group ops into attn.kernel -------===//
#include "compiler/passes/Passes.h"
#include "dialects/attn/Analysis/DimSymbols.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFORMKERNELSPASS
#include "compiler/passes/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// True for values computed from weights alone: the driver folds them into
/// constants, so they are kernel inputs, never kernel work.
class WeightExprs {
public:
  bool contains(Value v) {
    auto it = known.find(v);
    if (it != known.end())
      return it->second;
    Operation *def = v.getDefiningOp();
    bool result = def && isWeightExpressionOp(def) &&
                  llvm::all_of(def->getOperands(), [&](Value operand) {
                    return contains(operand);
                  });
    if (isa_and_nonnull<WeightOp>(def))
      result = true;
    known[v] = result;
    return result;
  }

private:
  llvm::DenseMap<Value, bool> known;
};

/// A group of ops that becomes one kernel, in program order.
struct Group {
  SmallVector<Operation *> ops;
  std::string name;
  /// The op that started the group when it is an anchor.
  FusionOpInterface anchor;
  /// True while every op of the group is an elementwise epilogue.
  bool elementwise = true;
};

/// The single user of `op`'s only result, if there is exactly one.
Operation *soleUser(Operation *op) {
  if (op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return nullptr;
  return *op->getResult(0).getUsers().begin();
}

FusionRole roleOf(Operation *op) {
  auto fusion = dyn_cast<FusionOpInterface>(op);
  // An op without a role is a kernel of its own, as an anchor is.
  return fusion ? fusion.getFusionRole() : FusionRole::Anchor;
}

struct FormKernels : attn::impl::AttnFormKernelsPassBase<FormKernels> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Block &body = func.getBody().front();
    WeightExprs weights;

    // Assign ops to groups in program order by their FusionOpInterface
    // roles: an epilogue joins its producer's group, an anchor that absorbs
    // elementwise producers joins an all-elementwise group, and anything
    // else starts a group, pulling in the prologues only it reads.
    llvm::DenseMap<Operation *, unsigned> groupOf;
    std::vector<Group> groups;
    auto join = [&](Operation *op, unsigned g) {
      groupOf[op] = g;
      groups[g].ops.push_back(op);
      groups[g].name += "_" + op->getName().stripDialect().str();
      groups[g].elementwise &= roleOf(op) == FusionRole::Epilogue;
    };
    auto start = [&](Operation *op) {
      groups.push_back({});
      groups.back().anchor = dyn_cast<FusionOpInterface>(op);
      join(op, groups.size() - 1);
    };
    /// The group whose last op is `producer`, when `consumer` is its only user.
    auto producerGroup = [&](Operation *consumer,
                             Value v) -> std::optional<unsigned> {
      Operation *producer = v.getDefiningOp();
      if (!producer || soleUser(producer) != consumer ||
          !groupOf.count(producer))
        return std::nullopt;
      unsigned g = groupOf[producer];
      if (groups[g].ops.back() != producer)
        return std::nullopt;
      return g;
    };

    for (Operation &op : body.without_terminator()) {
      if (isa<KernelOp>(op) ||
          (op.getNumResults() == 1 && weights.contains(op.getResult(0))))
        continue;
      std::optional<unsigned> target;
      auto fusion = dyn_cast<FusionOpInterface>(op);
      if (roleOf(&op) == FusionRole::Epilogue) {
        for (Value operand : op.getOperands()) {
          std::optional<unsigned> g = producerGroup(&op, operand);
          if (g &&
              (groups[*g].elementwise ||
               (groups[*g].anchor && groups[*g].anchor.acceptsEpilogues()))) {
            target = g;
            break;
          }
        }
      } else if (fusion && fusion.absorbsElementwiseProducer()) {
        if (auto g = producerGroup(&op, op.getOperand(0));
            g && groups[*g].elementwise)
          target = g;
      }
      if (target) {
        join(&op, *target);
        continue;
      }
      start(&op);
      if (!fusion || fusion.getFusionRole() == FusionRole::Epilogue)
        continue;
      // Activation prologues that feed only this anchor (or this prologue:
      // a rotary embedding of a slice) are read in place.
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || roleOf(def) != FusionRole::Prologue ||
            weights.contains(operand) || !groupOf.count(def))
          continue;
        unsigned g = groupOf[def];
        if (groups[g].ops.back() != def ||
            llvm::any_of(groups[g].ops,
                         [](Operation *member) {
                           return roleOf(member) != FusionRole::Prologue;
                         }) ||
            llvm::any_of(def->getUsers(),
                         [&](Operation *u) { return u != &op; }))
          continue;
        for (Operation *member : groups[g].ops)
          groupOf[member] = groups.size() - 1;
        groups.back().ops.insert(groups.back().ops.begin(),
                                 groups[g].ops.begin(), groups[g].ops.end());
        groups[g].ops.clear();
      }
    }

    OpBuilder builder(&getContext());
    unsigned index = 0;
    for (Group &group : groups) {
      if (group.ops.empty())
        continue;
      llvm::sort(group.ops, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      outline(builder, group, "k" + std::to_string(index++) + group.name,
              weights);
    }
  }

  /// Replaces the ops of `group` by one attn.kernel.
  void outline(OpBuilder &builder, Group &group, StringRef name,
               WeightExprs &weights) {
    llvm::SmallPtrSet<Operation *, 8> members(group.ops.begin(),
                                              group.ops.end());
    llvm::SetVector<Value> activations, weightInputs;
    SmallVector<Value> escaping;
    for (Operation *op : group.ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && members.contains(def))
          continue;
        (weights.contains(operand) ? weightInputs : activations)
            .insert(operand);
      }
      // A cache write's result is its effect (the state written in place):
      // the kernel yields it even when nothing reads it (a prefill).
      for (Value result : op->getResults())
        if (isa<CacheWriteOp>(op) ||
            llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !members.contains(user);
            }))
          escaping.push_back(result);
    }
    SmallVector<Value> inputs(activations.begin(), activations.end());
    inputs.append(weightInputs.begin(), weightInputs.end());

    Operation *last = group.ops.back();
    builder.setInsertionPointAfter(last);
    auto kernel = builder.create<KernelOp>(last->getLoc(),
                                           ValueRange(escaping).getTypes(),
                                           builder.getStringAttr(name), inputs);
    if (auto entry = getOperation()->getAttrOfType<StringAttr>(kEntryAttr);
        entry && entry.getValue() == "decode")
      kernel->setAttr(kDecodeKernelAttr, builder.getUnitAttr());
    Block *block = builder.createBlock(&kernel.getBody());
    IRMapping mapping;
    for (Value in : inputs)
      mapping.map(in, block->addArgument(in.getType(), in.getLoc()));
    for (Operation *op : group.ops)
      builder.clone(*op, mapping);
    SmallVector<Value> yielded;
    for (Value v : escaping)
      yielded.push_back(mapping.lookup(v));
    builder.create<YieldOp>(last->getLoc(), yielded);

    for (auto [v, result] : llvm::zip(escaping, kernel.getResults()))
      v.replaceAllUsesWith(result);
    for (Operation *op : llvm::reverse(group.ops))
      op->erase();
  }
};
} // namespace
