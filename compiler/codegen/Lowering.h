//===- compiler/codegen/Lowering.h - per-op Halide lowerings ----*- C++ -*-===//
//
// Each attn op that can appear in a kernel has one lowering: a function that
// defines the Halide Funcs computing its results (algorithm only, never a
// schedule) and records the stages a schedule places. Lowerings are kept in
// one registry keyed by op, filled by the files under lowerings/, so a new op
// adds a lowering there and touches nothing else in codegen.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_LOWERING_H
#define ATTNC_COMPILER_CODEGEN_LOWERING_H

#include "dialects/attn/IR/AttnOps.h"
#include "schedules/KernelStages.h"
#include "schedules/TargetDesc.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace attnc::codegen {

/// A value inside a kernel: its Func and its extents, innermost first.
struct Tensor {
  Halide::Func func;
  std::vector<Halide::Expr> extents;
  /// The Func updates its output buffer in place (a cache write: only some
  /// of it is defined), so it must be the pipeline's output itself, never
  /// copied out of a buffer of its own.
  bool inPlace = false;
  /// For a kernel input, its buffer as stored (undefined otherwise): what an
  /// extern stage reads without a copy.
  Halide::ImageParam stored;
};

/// What a lowering sees of the kernel being built.
class KernelBuilder {
public:
  KernelBuilder(schedules::KernelStages &stages,
                const schedules::TargetDesc &target,
                schedules::Precision precision)
      : stages(stages), target(target), precision(precision) {}

  /// The kernel's vars 0..rank-1 (innermost first), shared by every Func.
  std::vector<Halide::Var> vars(size_t rank);
  /// Vars 0..rank-1 as call arguments, with `index` replacing var `at`.
  std::vector<Halide::Expr> args(size_t rank, size_t at = ~size_t(0),
                                 Halide::Expr index = {});
  /// A name unique in the kernel, for Funcs and RDoms.
  std::string name(llvm::StringRef base);

  /// The Tensor computing `value` (a kernel input or an earlier result).
  const Tensor &get(mlir::Value value) const;
  void define(mlir::Value value, Tensor tensor);

  /// Where lowerings record the anchors (GEMMs, norms, attention) they build.
  schedules::KernelStages &stages;
  /// What the kernel is built for: the algorithm reads only the shapes the
  /// target fixes (attention tiles), never a schedule.
  const schedules::TargetDesc &target;
  /// --precision. The linears read theirs from their weights' packed type;
  /// attention from here (bf16 products at BF16, see lowerings/Attention.cpp).
  schedules::Precision precision;

private:
  llvm::DenseMap<mlir::Value, Tensor> values;
  unsigned counter = 0;
};

/// Defines the results of `op` with `builder.define`; reports unsupported
/// forms at the op.
using LowerFn =
    std::function<mlir::LogicalResult(mlir::Operation *, KernelBuilder &)>;

class LoweringRegistry {
public:
  template <typename OpTy>
  void add(std::function<mlir::LogicalResult(OpTy, KernelBuilder &)> fn) {
    fns[mlir::TypeID::get<OpTy>()] = [fn](mlir::Operation *op,
                                          KernelBuilder &b) {
      return fn(llvm::cast<OpTy>(op), b);
    };
  }
  /// Registers `fn` for an op known by its TypeID (for tables of ops).
  void add(mlir::TypeID op, LowerFn fn) { fns[op] = std::move(fn); }
  /// The lowering of `op`, or null.
  const LowerFn *lookup(mlir::Operation *op) const;

private:
  llvm::DenseMap<mlir::TypeID, LowerFn> fns;
};

/// exp(x) as IEEE and PyTorch give it at the ends: NaN for NaN, +Inf for
/// +Inf, 0 for -Inf. Halide's vector exp (a polynomial scaled by 2^k, k an
/// integer) gives 0 for NaN and +Inf, which turned a NaN score or input into
/// a plausible number. The checks are strict (is_finite), as Halide builds
/// the rest with fast-math flags that let LLVM assume finite values.
Halide::Expr ieeeExp(Halide::Expr x);

/// ieeeExp(x) for an x that is never above 0 unless NaN (a score less its
/// row's maximum, -x^2): Halide's exp already gives 0 for -Inf, so only NaN
/// is checked, one compare and blend in the attention loop instead of
/// ieeeExp's several.
Halide::Expr expNonPositive(Halide::Expr x);

/// expNonPositive(x) in 22 vector instructions against ~30, for a loop of
/// its own (an attention's probabilities: 15% of a long attention's time
/// before), at about 1.5 ulp for x > -20. It keeps ~4 more constants in
/// registers: in a GEMM's epilogue (erf's, BERT's GELU) LLVM held them
/// across the register tile's loop and spilled the tile (the GEMM 10%
/// slower), so epilogues keep expNonPositive.
Halide::Expr expNonPositiveInLoop(Halide::Expr x);

/// tanh(x) through exp, which Halide vectorises (its `tanh` is a scalar libm
/// call per lane); absolute error ~1e-7.
Halide::Expr vectorTanh(Halide::Expr x);

/// How a tensor of `type` is stored on `target`: f32 and i32 as such; bf16
/// and f16 (weights, KV caches) in that precision, as their bits (uint16)
/// where the target has no half type (HalfBits.h); i8 matrices as int8, a
/// 4-bit matrix's bytes of two values (ui8) as uint8. Kernels widen every
/// load to f32 but the 4-bit bytes, which `attn.linear` takes apart
/// (HalideAlgorithm.cpp).
Halide::Type storedType(mlir::RankedTensorType type,
                        const schedules::TargetDesc &target);

/// `value`, an f32, as a tensor of `type` stores it: rounded to nearest
/// even into bf16 or f16 (as PyTorch's `.to()`), cast otherwise.
Halide::Expr narrowToStored(Halide::Expr value, mlir::RankedTensorType type,
                            const schedules::TargetDesc &target);

/// Every lowering, built once.
const LoweringRegistry &getLoweringRegistry();

// One per file under lowerings/.
void registerAttentionLowerings(LoweringRegistry &registry);
void registerCacheLowerings(LoweringRegistry &registry);
void registerElementwiseLowerings(LoweringRegistry &registry);
void registerLinearLowerings(LoweringRegistry &registry);
void registerNormLowerings(LoweringRegistry &registry);
void registerPositionLowerings(LoweringRegistry &registry);
void registerShapeLowerings(LoweringRegistry &registry);

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_LOWERING_H
