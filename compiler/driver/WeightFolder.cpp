//===- compiler/driver/WeightFolder.cpp - model weights section -----------===//
#include "compiler/driver/WeightFolder.h"

#include "attn/safetensors.h"
#include "dialects/attn/IR/AttnOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstring>
#include <memory>

using namespace mlir;
using namespace mlir::attn;
namespace st = ::attn::safetensors;

namespace attnc::driver {
namespace {

/// A float32 row-major tensor.
struct Constant {
  SmallVector<int64_t, 4> shape;
  std::vector<float> data;
};

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
  if (t->dtype != st::DType::F32)
    return op.emitError() << "weight '" << op.getName() << "' in '"
                          << file.path() << "' has dtype "
                          << st::dtypeName(t->dtype)
                          << " but attnc reads F32 weights: convert it to "
                             "float32 when exporting";
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
                "a weight expression (attn.weight, transpose, slice, concat, "
                "scale, pack_panels): run the attn pipeline before linking";
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
      out.data.resize(t->numElements());
      std::memcpy(out.data.data(), t->data, t->sizeBytes);
      return success();
    }
    SmallVector<const Constant *, 4> in;
    for (Value operand : op->getOperands()) {
      FailureOr<const Constant *> c = evaluate(operand);
      if (failed(c))
        return failure();
      in.push_back(*c);
    }
    if (isa<TransposeOp>(op)) {
      int64_t rows = in[0]->shape[0], cols = in[0]->shape[1];
      out.data.resize(rows * cols);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          out.data[c * rows + r] = in[0]->data[r * cols + c];
    } else if (auto pack = dyn_cast<PackPanelsOp>(op)) {
      // [in, out] -> [out / width, in, width]
      int64_t rows = in[0]->shape[0], cols = in[0]->shape[1];
      int64_t width = pack.getWidth();
      out.data.resize(rows * cols);
      for (int64_t p = 0; p < cols / width; ++p)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < width; ++j)
            out.data[(p * rows + r) * width + j] =
                in[0]->data[r * cols + p * width + j];
    } else if (auto scale = dyn_cast<ScaleOp>(op)) {
      float factor = scale.getFactor().convertToFloat();
      out.data = in[0]->data;
      for (float &x : out.data)
        x *= factor;
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      ArrayRef<int64_t> shape = in[0]->shape;
      int64_t dim = slice.getDim();
      int64_t outer = product(shape.take_front(dim));
      int64_t inner = product(shape.drop_front(dim + 1));
      int64_t run = slice.getSize() * inner;
      out.data.reserve(outer * run);
      for (int64_t o = 0; o < outer; ++o) {
        auto from =
            in[0]->data.begin() + (o * shape[dim] + slice.getOffset()) * inner;
        out.data.insert(out.data.end(), from, from + run);
      }
    } else {
      int64_t dim = cast<ConcatOp>(op).getDim();
      int64_t outer = product(ArrayRef(out.shape).take_front(dim));
      int64_t inner = product(ArrayRef(out.shape).drop_front(dim + 1));
      out.data.reserve(product(out.shape));
      for (int64_t o = 0; o < outer; ++o)
        for (const Constant *part : in) {
          int64_t run = part->shape[dim] * inner;
          auto from = part->data.begin() + o * run;
          out.data.insert(out.data.end(), from, from + run);
        }
    }
    return success();
  }

  static int64_t product(ArrayRef<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }

  const st::File &file;
  llvm::DenseMap<Value, std::unique_ptr<Constant>> memo;
};

/// Appends constants to the blob, storing equal byte strings once.
class BlobBuilder {
public:
  explicit BlobBuilder(std::vector<uint8_t> &blob) : blob(blob) {}

  uint64_t add(const Constant &c) {
    ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>(c.data.data()),
                            c.data.size() * sizeof(float));
    uint64_t hash = llvm::xxh3_64bits(bytes);
    for (auto [offset, size] : stored[hash])
      if (size == bytes.size() &&
          std::equal(bytes.begin(), bytes.end(), blob.begin() + offset))
        return offset;
    uint64_t offset = blob.size();
    blob.insert(blob.end(), bytes.begin(), bytes.end());
    blob.resize(llvm::alignTo(blob.size(), kWeightAlignment));
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
  Evaluator evaluator(*file);
  BlobBuilder blob(section.blob);
  // Kernels read weights; a model may also return one.
  for (Operation &op : func.getBody().front()) {
    if (!isa<KernelOp, func::ReturnOp>(op))
      continue;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || isa<KernelOp>(def) || section.offsets.count(operand))
        continue;
      FailureOr<const Constant *> c = evaluator.evaluate(operand);
      if (failed(c))
        return failure();
      section.offsets[operand] = blob.add(**c);
    }
  }
  return section;
}

} // namespace attnc::driver
