//===- compiler/codegen/lowerings/Elementwise.cpp - elementwise ops -------===//
//
// Elementwise ops are plain Funcs that schedules inline into their consumer:
// the epilogues of a GEMM or norm, or a kernel of their own.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/Lowering.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {
namespace {

/// erf(x) by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): Halide has no
/// erf, and GELU's exact form needs one.
Expr erfApprox(Expr x) {
  Expr ax = abs(x);
  Expr t = 1.0f / (1.0f + 0.3275911f * ax);
  Expr poly =
      t * (0.254829592f +
           t * (-0.284496736f +
                t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  Expr y = 1.0f - poly * expNonPositive(-ax * ax);
  return select(x < 0.0f, -y, y);
}

/// The unary elementwise ops (BuiltinFunctionOpInterface), one line each.
std::vector<std::pair<TypeID, Expr (*)(Expr)>> unaryOps() {
  return {
      // max(NaN, 0) is 0 in Halide (a > b ? a : b); torch.relu keeps NaN.
      {TypeID::get<ReluOp>(),
       [](Expr x) { return select(is_nan(x), x, max(x, 0.0f)); }},
      {TypeID::get<GeluOp>(),
       [](Expr x) {
         return 0.5f * x * (1.0f + erfApprox(x * float(M_SQRT1_2)));
       }},
      {TypeID::get<GeluTanhOp>(),
       [](Expr x) {
         const float k = std::sqrt(2.0f / float(M_PI));
         return 0.5f * x * (1.0f + vectorTanh(k * (x + 0.044715f * x * x * x)));
       }},
      {TypeID::get<TanhOp>(), [](Expr x) { return vectorTanh(x); }},
      {TypeID::get<SigmoidOp>(),
       [](Expr x) { return 1.0f / (1.0f + ieeeExp(-x)); }},
      {TypeID::get<SiluOp>(), [](Expr x) { return x / (1.0f + ieeeExp(-x)); }},
  };
}

/// `f` applied to the operands, which broadcast by rank: an operand of
/// lower rank than the result is indexed by the innermost vars only.
LogicalResult lowerMap(Operation *op, KernelBuilder &b,
                       const std::function<Expr(ArrayRef<Expr>)> &f) {
  const Tensor *widest = nullptr;
  std::vector<Expr> operands;
  for (Value operand : op->getOperands()) {
    const Tensor &t = b.get(operand);
    if (!widest || t.extents.size() > widest->extents.size())
      widest = &t;
    operands.push_back(t.func(b.vars(t.extents.size())));
  }
  Func out(b.name(op->getName().stripDialect()));
  out(b.vars(widest->extents.size())) = f(operands);
  b.define(op->getResult(0), {out, widest->extents});
  return success();
}

} // namespace

Expr ieeeExp(Expr x) {
  // A non-finite x is its own exp but for -Inf (sign bit set, not NaN).
  Expr negativeInf = is_inf(x) && reinterpret<int32_t>(x) < 0;
  return select(is_finite(x), exp(x), select(negativeInf, 0.0f, x));
}

Expr expNonPositive(Expr x) { return select(is_nan(x), x, exp(x)); }

Expr expNonPositiveInLoop(Expr x) {
  // exp(x) = 2^-n p(r), n = round(-x / ln 2), r = x + n ln 2 in [-ln2/2,
  // ln2/2], p Cephes expf's polynomial. Halide's exp takes n = floor (two
  // instructions per 256-bit half on AVX-512) and checks overflow: about 30
  // vector instructions a vector, 22 here.
  // Below -87, exp(x) < 1.7e-38 is flushed to 0, as Halide's exp does
  // below -87.3: 2^-n p(r) with p(r) < 1 would be a denormal there, and an
  // x86 core takes a microcode assist per denormal it makes or reads.
  Expr t = max(x, -87.0f);
  // t <= 0, so 0.5 - t / ln 2 > 0 and truncation is floor: 0 <= n <= 126.
  Expr n = cast<int32_t>(0.5f - t * 1.44269504088896341f);
  // One rounded ln 2 (Halide's simplifier folds a two-part one into it),
  // off by 1.9e-9: r is off by n times that, at most 1.5 ulp of exp(x) for
  // x > -20 and 4.5 ulp below (numpy's fp64 exp over 5M points).
  Expr r = t + cast<float>(n) * 0.693147182f;
  Expr p = 1.9875691500e-4f;
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                  1.6666665459e-1f, 5.0000001201e-1f})
    p = p * r + c;
  p = p * (r * r) + r + 1.0f;
  Expr scale = reinterpret<float>((127 - n) << 23);
  return select(is_nan(x), x, x < -87.0f, 0.0f, p * scale);
}

/// tanh(x) = 1 - 2 / (exp(2x) + 1): Halide lowers `tanh` to a scalar libm
/// call per lane, `exp` to a vector polynomial (GPT-2's tanh GELU ran at 60%
/// of its GEMM's speed). Exp's overflow gives 1 and its underflow -1, the
/// limits; NaN stays NaN.
Expr vectorTanh(Expr x) { return 1.0f - 2.0f / (ieeeExp(2.0f * x) + 1.0f); }

/// act(in(2j)) * in(2j + 1), act one of unaryOps() found by its op name.
static LogicalResult lowerGlu(GluOp op, KernelBuilder &b) {
  std::optional<RegisteredOperationName> name = RegisteredOperationName::lookup(
      ("attn." + op.getActivation()).str(), op.getContext());
  auto fns = unaryOps();
  auto it = llvm::find_if(fns, [&](const auto &entry) {
    return name && entry.first == name->getTypeID();
  });
  if (it == fns.end())
    return op.emitOpError("has no lowering for activation '")
           << op.getActivation() << "'";
  const Tensor &in = b.get(op.getInput());
  size_t rank = in.extents.size();
  std::vector<Var> v = b.vars(rank);
  Func out(b.name("glu"));
  out(v) = it->second(in.func(b.args(rank, 0, 2 * v[0]))) *
           in.func(b.args(rank, 0, 2 * v[0] + 1));
  std::vector<Expr> extents = in.extents;
  extents[0] = int(op.getType().getShape().back());
  b.define(op.getResult(), {out, extents});
  return success();
}

void registerElementwiseLowerings(LoweringRegistry &registry) {
  for (auto [op, fn] : unaryOps())
    registry.add(op, [fn = fn](Operation *o, KernelBuilder &b) {
      return lowerMap(o, b, [&](ArrayRef<Expr> x) { return fn(x[0]); });
    });
  registry.add<AddOp>([](AddOp op, KernelBuilder &b) {
    return lowerMap(op, b, [](ArrayRef<Expr> x) { return x[0] + x[1]; });
  });
  registry.add<SubOp>([](SubOp op, KernelBuilder &b) {
    return lowerMap(op, b, [](ArrayRef<Expr> x) { return x[0] - x[1]; });
  });
  registry.add<MulOp>([](MulOp op, KernelBuilder &b) {
    return lowerMap(op, b, [](ArrayRef<Expr> x) { return x[0] * x[1]; });
  });
  registry.add<GluOp>(lowerGlu);
  registry.add<SoftcapOp>([](SoftcapOp op, KernelBuilder &b) {
    float cap = op.getCap().convertToFloat();
    return lowerMap(op, b, [&](ArrayRef<Expr> x) {
      return cap * vectorTanh(x[0] * (1.0f / cap));
    });
  });
  registry.add<ScaleOp>([](ScaleOp op, KernelBuilder &b) {
    float factor = op.getFactor().convertToFloat();
    return lowerMap(op, b, [&](ArrayRef<Expr> x) { return x[0] * factor; });
  });
}

} // namespace attnc::codegen
