//===- compiler/driver/InitWeights.cpp - random weights for a model -------===//
#include "compiler/driver/InitWeights.h"

#include "compiler/driver/LowPrecision.h"
#include "compiler/driver/Plan.h"

#include "attn/safetensors.h"
#include "dialects/attn/IR/AttnOps.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
namespace st = ::attn::safetensors;

namespace attnc::driver {
namespace {

/// splitmix64: tiny, fast, and the same numbers on every platform.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi).
  float uniform(double lo, double hi) {
    return float(lo + (hi - lo) * double(next() >> 11) * 0x1.0p-53);
  }

private:
  uint64_t state;
};

/// FNV-1a, so each tensor's stream depends on its name, not on the order of
/// declarations: adding a weight leaves the others unchanged.
uint64_t hashName(StringRef name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

/// Drawn as the ops that read the weight say (WeightInitOpInterface); a
/// weight no op speaks for is drawn as a matrix `[out, in]` or a bias.
std::vector<float> randomTensor(WeightOp op, uint64_t seed) {
  ArrayRef<int64_t> shape = op.getType().getShape();
  int64_t count = op.getType().getNumElements();
  SplitMix64 rng(seed ^ hashName(op.getName()));
  WeightInit init =
      getWeightInit(op.getResult())
          .value_or(shape.size() >= 2 ? WeightInit::fanIn(shape.size() - 1)
                                      : WeightInit::nearZero());
  double lo = -0.02, hi = 0.02;
  if (init.kind == WeightInit::Kind::FanIn && init.fanInDim < shape.size()) {
    double bound =
        1.0 / std::sqrt(double(std::max<int64_t>(shape[init.fanInDim], 1)));
    lo = -bound;
    hi = bound;
  } else if (init.kind == WeightInit::Kind::NearOne) {
    lo = 0.9;
    hi = 1.1;
  }
  std::vector<float> data(count);
  for (float &x : data)
    x = rng.uniform(lo, hi);
  return data;
}

} // namespace

LogicalResult writeRandomWeights(func::FuncOp func, StringRef path,
                                 uint64_t seed) {
  st::Writer writer;
  llvm::StringMap<WeightOp> seen;
  WalkResult walk = func.walk([&](WeightOp op) {
    auto [it, inserted] = seen.try_emplace(op.getName(), op);
    if (!inserted) {
      if (it->second.getType() == op.getType())
        return WalkResult::advance();
      op.emitError() << "weight '" << op.getName() << "' is declared as "
                     << op.getType() << " here but as " << it->second.getType()
                     << " before: give both one shape";
      return WalkResult::interrupt();
    }
    // Drawn in f32 and rounded to the declared precision.
    attn_model_dtype dtype = *modelDType(op.getType().getElementType());
    if (dtype == ATTN_MODEL_I8 || dtype == ATTN_MODEL_U8) {
      op.emitError() << "random weights are drawn in f32, bf16 or f16, not "
                        "for quantized weight '"
                     << op.getName()
                     << "': draw them for the model declared f32 and "
                        "quantize them with 'attnc quantize'";
      return WalkResult::interrupt();
    }
    std::vector<uint8_t> data = narrow(randomTensor(op, seed), dtype);
    ArrayRef<int64_t> shape = op.getType().getShape();
    st::Status added =
        writer.add(op.getName().str(), *st::fromAttnDType(dtype),
                   {shape.begin(), shape.end()}, data.data(), data.size());
    if (!added) {
      op.emitError() << added.message();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  writer.setMetadata("generator",
                     "attnc --init-weights --seed=" + std::to_string(seed));
  if (st::Status written = writer.write(path.str()); !written)
    return emitError(UnknownLoc::get(func.getContext()))
           << "cannot write random weights: " << written.message();
  return success();
}

} // namespace attnc::driver
