//===- compiler/codegen/lowerings/Linear.cpp - attn.linear ----------------===//
#include "compiler/codegen/HalfBits.h"
#include "compiler/codegen/Int4Bits.h"
#include "compiler/codegen/Lowering.h"
#include "compiler/codegen/lowerings/Int8Gemm.h"
#include "compiler/codegen/lowerings/Int8Linear.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

/// The AMX micro-kernel's symbol (compiler/driver/glue/amx.c).
static const char *const kAmxGemmSymbol = "attn_amx_bf16_gemm";

/// bf16 pairs of inputs (attnc --precision=bf16): the weight is [out / p,
/// in / 2, p, 2] bf16 (w(t, n % p, q, n / p) holds input 2q + t of output
/// n), the input is rounded to bf16 as the weights were at load (to nearest,
/// ties to even; HalfBits.h), and each pair's two products are summed in
/// f32 (the pattern of AVX512_BF16's vdpbf16ps once a schedule vectorizes
/// the pair, `t`, under a vector of outputs). For AMX
/// (TargetDesc::usesAmxTiles) a prefill calls the AMX micro-kernel instead,
/// and a decode step does where it has enough sequences (GemmStage::amxGemm,
/// amxWhen).
static LogicalResult lowerLinearBf16(LinearOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  const Tensor &weights = b.get(op.getWeight());
  Func w = weights.func;
  size_t rank = in.extents.size();
  int64_t k = op.getInFeatures(), n = op.getOutFeatures();
  auto wtype = op.getWeight().getType();
  int p = int(wtype.getDimSize(2)), panels = int(wtype.getDimSize(0));
  int64_t padded = int64_t(panels) * p;
  std::vector<Var> v = b.vars(rank);
  // Past the last panel (tiles of whole panels over padded ones) the last
  // panel is read again and the bias clamped; those outputs are never
  // stored.
  Expr panel = padded == n ? v[0] / p : min(v[0] / p, panels - 1);
  Expr biasAt = padded == n ? Expr(v[0]) : min(v[0], int(n) - 1);
  std::vector<Expr> clamped(v.begin(), v.end());
  clamped[1] = min(v[1], in.extents[1] - 1);
  Func lhs(b.name("gemm_in")), rhs(b.name("gemm_w")), gemm(b.name("gemm"));
  lhs(v) = narrowToHalf(in.func(clamped), BFloat(16), true);
  Var t(b.name("t")), q(b.name("q"));
  Expr bias = op.getBias() ? b.get(op.getBias()).func(biasAt) : Expr(0.0f);
  std::vector<Expr> extents = in.extents;
  extents[0] = int(n);
  // AMX's multiplies, in the micro-kernel every library for such a target
  // links (compiler/driver/glue/amx.c): the sums from zero, the bias added
  // after. It reads the bf16 input and the packed weights as they lie in
  // memory. A prefill always takes it; a decode step ([B, 1, K]) from
  // gemmRowTile sequences on, one tile row per sequence, and the GEMVs
  // below for fewer.
  Func amx;
  if (b.target.usesAmxTiles(k) && weights.stored.defined() &&
      (!b.stages.fewRows || rank == 3)) {
    amx = Func(b.name("gemm_amx"));
    amx.define_extern(kAmxGemmSymbol,
                      {lhs, weights.stored.parameter(), Expr(int32_t(k))},
                      Float(32), v, NameMangling::C);
  }
  if (amx.defined() && !b.stages.fewRows) {
    gemm(v) = amx(v) + bias;
    schedules::GemmStage stage{gemm, RDom(), k, n, padded, lhs, Func()};
    stage.bf16Pairs = true;
    stage.amxGemm = amx;
    b.stages.stages.push_back(stage);
    b.define(op.getResult(), {gemm, extents});
    return success();
  }
  RDom r(0, 2, 0, int(k / 2), b.name("k"));
  // A panel's pairs are 2p consecutive values; indexed as such, a vector
  // of outputs' pairs is one dense ramp Halide's simplifier sees whole.
  Expr flat = (2 * v[0] + t) % (2 * p);
  rhs(v[0], t, q) = w(flat % 2, flat / 2, q, panel);
  gemm(v) = bias;
  gemm(v) += cast(Float(32), lhs(b.args(rank, 0, 2 * r.y + r.x))) *
             cast(Float(32), rhs(v[0], r.x, r.y));
  schedules::GemmStage stage{gemm, r, k, n, padded, lhs, rhs};
  stage.bf16Pairs = true;
  Func result = gemm;
  if (amx.defined()) {
    stage.amxGemm = amx;
    stage.amxWhen = in.extents[2] >= b.target.gemmRowTile();
    result = Func(b.name("gemm_or_amx"));
    result(v) = select(stage.amxWhen, amx(v) + bias, gemm(v));
  }
  b.stages.stages.push_back(stage);
  b.define(op.getResult(), {result, extents});
  return success();
}

static LogicalResult lowerLinear(LinearOp op, KernelBuilder &b) {
  if (op.getWeight().getType().getRank() == 4)
    return op.getWeight().getType().getElementType().isInteger(8)
               ? lowerInt8Gemm(op, b)
               : lowerLinearBf16(op, b);
  if (usesInt8Dot(op, b.target))
    return lowerInt8Linear(op, b);
  const Tensor &in = b.get(op.getInput());
  Func w = b.get(op.getWeight()).func;
  size_t rank = in.extents.size();
  int64_t k = op.getInFeatures(), n = op.getOutFeatures();
  std::vector<Var> v = b.vars(rank);
  RDom r(0, int(k), b.name("k"));
  // Halide's dim 0 is the innermost: [in, out] storage reads w(n, k), and
  // panels [out / p, in, p] read w(n % p, k, n / p).
  auto weight = [&](Expr nn, Expr kk) -> Expr {
    switch (op.getLayout()) {
    case WeightLayout::out_in:
      return w(kk, nn);
    case WeightLayout::in_out:
      return w(nn, kk);
    case WeightLayout::panels: {
      // Past the last panel (tiles of whole panels over padded ones) the
      // last panel is read again; those outputs are never stored.
      auto wtype = op.getWeight().getType();
      int p = int(wtype.getDimSize(2)), panels = int(wtype.getDimSize(0));
      if (panels * p == op.getOutFeatures())
        return w(nn % p, kk, nn / p);
      return w(nn % p, kk, min(nn / p, panels - 1));
    }
    }
    llvm_unreachable("unknown weight layout");
  };
  // Padded panels: whole panels may be computed past the last output, with
  // the bias clamped to it.
  int64_t padded = n;
  Expr biasAt = v[0];
  if (op.getLayout() == WeightLayout::panels) {
    auto w = op.getWeight().getType();
    padded = w.getDimSize(0) * w.getDimSize(2);
    if (padded != n)
      biasAt = min(v[0], int(n) - 1);
  }
  // The operands as Funcs of their own (inlined unless a schedule places
  // them: GPU schedules stage their k-tiles in shared memory). Rows are
  // clamped to the last one so a schedule may compute whole row tiles past
  // it (constant-size register blocks); those rows are never stored.
  std::vector<Expr> clamped(v.begin(), v.end());
  clamped[1] = min(v[1], in.extents[1] - 1);
  Func lhs(b.name("gemm_in")), rhs(b.name("gemm_w"));
  lhs(v) = in.func(clamped);
  Func gemm(b.name("gemm"));
  Expr bias = op.getBias() ? b.get(op.getBias()).func(biasAt) : Expr(0.0f);
  auto wtype = op.getWeight().getType();
  if (wtype.getElementType().isUnsignedInteger(8)) {
    // 4-bit values two per byte along `in` (the even input in the low
    // nibble), dequantized in registers as they load (q - 8, times its
    // group's scale), so the GEMM reads an eighth of f32's bytes.
    auto stype = cast<RankedTensorType>(op.getScales().getType());
    bool outIn = op.getLayout() == WeightLayout::out_in;
    int64_t group = k / stype.getDimSize(outIn ? 1 : 0);
    Func s = b.get(op.getScales()).func;
    // Halide's dims run innermost first: [out, in / G] reads s(g, n).
    Expr nn = padded != n ? min(v[0], int(n) - 1) : Expr(v[0]);
    auto scale = [&](Expr g) { return outIn ? s(g, nn) : s(nn, g); };
    rhs(v[0], v[1]) =
        int4At(weight(v[0], v[1] / 2), v[1]) * scale(v[1] / int(group));
    if (b.target.reducesWeightGroups() && group % 2 == 0) {
      // Each group's sum of input * (q - 8), a byte (two inputs) per step,
      // times its scale: a multiply per group instead of one per weight.
      // The scale varies along the reduction, so it cannot wait for the
      // whole sum as an i8 matrix's does.
      RDom groups(0, int(k / group), b.name("g"));
      RDom pairs(0, int(group / 2), b.name("pair"));
      Var gv(b.name("group"));
      std::vector<Var> pv = {v[0], gv};
      pv.insert(pv.end(), v.begin() + 1, v.end());
      Expr even = gv * int(group) + 2 * pairs.x;
      Expr pair = weight(v[0], gv * int(group / 2) + pairs.x);
      Func sums(b.name("group_sums"));
      sums(pv) = 0.0f;
      sums(pv) += lhs(b.args(rank, 0, even)) * lowInt4(pair) +
                  lhs(b.args(rank, 0, even + 1)) * highInt4(pair);
      std::vector<Expr> at = {v[0], groups.x};
      at.insert(at.end(), v.begin() + 1, v.end());
      gemm(v) = bias;
      gemm(v) += scale(groups.x) * sums(at);
      b.stages.stages.push_back(schedules::GemmStage{gemm, groups, k, n, padded,
                                                     lhs, rhs, sums, pairs});
      std::vector<Expr> extents = in.extents;
      extents[0] = int(n);
      b.define(op.getResult(), {gemm, extents});
      return success();
    }
  } else {
    rhs(v[0], v[1]) = weight(v[0], v[1]);
  }
  // An i8 matrix is summed as its integers (widened to f32 as they load),
  // and each output is scaled once after its sum: x . (s W) = s (x . W), one
  // multiply per output instead of one per weight. The result is then an
  // elementwise epilogue of the GEMM, inlined where the schedule puts it.
  bool perOutput =
      op.getScales() &&
      cast<RankedTensorType>(op.getScales().getType()).getRank() == 1;
  gemm(v) = perOutput ? Expr(0.0f) : bias;
  gemm(v) += lhs(b.args(rank, 0, r.x)) * rhs(v[0], r.x);
  schedules::GemmStage stage{gemm, r, k, n, padded, lhs, rhs};
  const Halide::ImageParam &stored = b.get(op.getWeight()).stored;
  if (op.getLayout() == WeightLayout::panels && stored.defined())
    stage.panelWeights = stored.name();
  b.stages.stages.push_back(stage);
  std::vector<Expr> extents = in.extents;
  extents[0] = int(n);
  if (!perOutput) {
    b.define(op.getResult(), {gemm, extents});
    return success();
  }
  Func scaled(b.name("dequantized"));
  scaled(v) = gemm(v) * b.get(op.getScales()).func(biasAt) + bias;
  b.define(op.getResult(), {scaled, extents});
  return success();
}

void registerLinearLowerings(LoweringRegistry &registry) {
  registry.add<LinearOp>(lowerLinear);
}

} // namespace attnc::codegen
