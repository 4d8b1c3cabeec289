//===- compiler/driver/WeightFolder.cpp - model weights section -----------===//
#include "compiler/driver/WeightFolder.h"

#include "compiler/driver/LowPrecision.h"
#include "compiler/driver/Plan.h"

#include "attn/safetensors.h"
#include "dialects/attn/IR/AttnOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstring>
#include <memory>

using namespace mlir;
using namespace mlir::attn;
namespace st = ::attn::safetensors;

namespace attnc::driver {
namespace {

using Constant = HostTensor;

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// Up to three names of `file` closest to `name`, quoted, for "did you mean".
std::string closestNames(const st::File &file, StringRef name) {
  SmallVector<std::pair<unsigned, StringRef>> scored;
  for (const st::Tensor &t : file.tensors())
    scored.push_back({name.edit_distance(t.name), t.name});
  llvm::stable_sort(scored, llvm::less_first());
  std::string s;
  for (auto [i, entry] : llvm::enumerate(ArrayRef(scored).take_front(3)))
    s += (i ? ", '" : "'") + entry.second.str() + "'";
  return s;
}

/// Checks one attn.weight against the file, reporting at the op.
LogicalResult checkWeight(WeightOp op, const st::File &file) {
  ArrayRef<int64_t> declared = op.getType().getShape();
  const st::Tensor *t = file.find(op.getName());
  if (!t) {
    InFlightDiagnostic diag = op.emitError()
                              << "weight '" << op.getName() << "' is not in '"
                              << file.path() << "'";
    if (file.tensors().empty())
      return diag << ", which holds no tensors: give the model's weights file";
    return diag << "; closest names there: " << closestNames(file, op.getName())
                << ": fix the name in the model or export the weight";
  }
  Type element = op.getType().getElementType();
  attn_model_dtype declaredDType = *modelDType(element);
  std::optional<int32_t> dtype = st::attnDType(t->dtype);
  if (!dtype || *dtype != declaredDType) {
    InFlightDiagnostic diag =
        op.emitError() << "weight '" << op.getName() << "' in '" << file.path()
                       << "' has dtype " << st::dtypeName(t->dtype)
                       << " but the model declares it " << element << ": ";
    // A float the language has: declaring it so keeps the file's precision.
    if (dtype && *dtype != ATTN_MODEL_I32)
      diag << "declare it '" << StringRef(st::dtypeName(t->dtype)).lower()
           << shapeString(declared) << "' in the model, or ";
    return diag << "convert it to " << attn_dtype_lookup(declaredDType)->name
                << " when exporting (attnc never converts weights)";
  }
  if (ArrayRef<int64_t>(t->shape) != declared)
    return op.emitError() << "weight '" << op.getName() << "' in '"
                          << file.path() << "' has shape "
                          << shapeString(t->shape)
                          << " but the model declares it "
                          << shapeString(declared)
                          << ": fix the declaration or the exported tensor";
  return success();
}

/// Evaluates weight expressions, each value once.
class Evaluator {
public:
  explicit Evaluator(const st::File &file) : file(file) {}

  /// The constant `value` evaluates to, or failure (reported at its op).
  FailureOr<const Constant *> evaluate(Value value) {
    auto it = memo.find(value);
    if (it != memo.end())
      return it->second.get();
    Operation *op = value.getDefiningOp();
    if (!op || !isWeightExpressionOp(op))
      return emitError(value.getLoc())
             << "kernel operand is neither a model input, a kernel result nor "
                "a weight expression (attn.weight or an op computed on weights "
                "alone): run the attn pipeline before linking";
    auto result = std::make_unique<Constant>();
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(value.getType()).getShape();
    result->shape.assign(shape.begin(), shape.end());
    if (failed(compute(op, *result)))
      return failure();
    const Constant *ptr = result.get();
    memo[value] = std::move(result);
    return ptr;
  }

private:
  LogicalResult compute(Operation *op, Constant &out) {
    if (auto w = dyn_cast<WeightOp>(op)) {
      // checkWeight has vouched for dtype and shape.
      const st::Tensor *t = file.find(w.getName());
      out.data = widen(t->data, t->numElements(),
                       *modelDType(w.getType().getElementType()));
      return success();
    }
    SmallVector<const Constant *, 4> in;
    for (Value operand : op->getOperands()) {
      FailureOr<const Constant *> c = evaluate(operand);
      if (failed(c))
        return failure();
      in.push_back(*c);
    }
    cast<WeightExprOpInterface>(op).evaluate(in, out);
    return success();
  }

  const st::File &file;
  llvm::DenseMap<Value, std::unique_ptr<Constant>> memo;
};

/// Appends constants to the blob, storing equal byte strings once.
class BlobBuilder {
public:
  explicit BlobBuilder(std::vector<uint8_t> &blob) : blob(blob) {}

  /// `c` stored as `dtype`, its value's element type.
  uint64_t add(const Constant &c, attn_model_dtype dtype) {
    std::vector<uint8_t> encoded = narrow(c.data, dtype);
    ArrayRef<uint8_t> bytes(encoded);
    uint64_t hash = llvm::xxh3_64bits(bytes);
    for (auto [offset, size] : stored[hash])
      if (size == bytes.size() &&
          std::equal(bytes.begin(), bytes.end(), blob.begin() + offset))
        return offset;
    uint64_t offset = blob.size();
    blob.insert(blob.end(), bytes.begin(), bytes.end());
    blob.resize(llvm::alignTo(blob.size(), kConstantAlignment));
    stored[hash].push_back({offset, bytes.size()});
    return offset;
  }

private:
  std::vector<uint8_t> &blob;
  llvm::DenseMap<uint64_t, SmallVector<std::pair<uint64_t, uint64_t>, 1>>
      stored;
};

} // namespace

FailureOr<WeightSection> foldWeights(func::FuncOp func,
                                     llvm::StringRef weightsPath) {
  st::Expected<st::File> file = st::File::open(weightsPath.str());
  if (!file)
    return emitError(UnknownLoc::get(func.getContext()))
           << "cannot read weights: " << file.message();

  bool ok = true;
  func.walk([&](WeightOp op) { ok &= succeeded(checkWeight(op, *file)); });
  if (!ok)
    return failure();

  WeightSection section;
  llvm::StringSet<> declared;
  func.walk([&](WeightOp op) { declared.insert(op.getName()); });
  for (const st::Tensor &t : file->tensors())
    if (!declared.contains(t.name))
      section.unusedTensors.push_back(t.name);
  section.fileTensors = file->tensors().size();
  Evaluator evaluator(*file);
  BlobBuilder blob(section.blob);
  // Kernels read weights; a model may also return one.
  for (Operation &op : func.getBody().front()) {
    if (!isa<KernelOp, func::ReturnOp>(op))
      continue;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || isa<KernelOp>(def) || section.constants.count(operand))
        continue;
      FailureOr<const Constant *> c = evaluator.evaluate(operand);
      if (failed(c))
        return failure();
      Type element = cast<RankedTensorType>(operand.getType()).getElementType();
      section.constants[operand] = {ATTN_MODEL_BUFFER_CONSTANT, -1,
                                    blob.add(**c, *modelDType(element))};
    }
  }
  return section;
}

} // namespace attnc::driver
