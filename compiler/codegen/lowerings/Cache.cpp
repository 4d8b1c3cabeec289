//===- compiler/codegen/lowerings/Cache.cpp - attn.cache_write ------------===//
#include "compiler/codegen/Lowering.h"
#include "dialects/attn/Analysis/DimSymbols.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

/// The row where each sequence's new rows go, checked before anything is
/// written: room for the new rows after the sequence's position.
static Func writePosition(CacheWriteOp op, KernelBuilder &b, Expr capacity,
                          Expr count) {
  Func position(b.name("cache_position"));
  Var s("s");
  const char *fix = "rows: start a new sequence, or give a cache with more "
                    "rows (a larger capacity dim)";
  if (!op.getPosition()) {
    position(s) =
        require(count <= capacity, 0, "prefill of", count,
                "tokens does not fit in the KV cache of", capacity, fix);
    return position;
  }
  Expr p = b.get(op.getPosition()).func(s);
  position(s) =
      require(p >= 0 && p <= capacity - count, p, "decoding", count,
              "tokens at position", p, "of sequence", s, "needs", p + count,
              "rows of the KV cache, which has", capacity, fix);
  return position;
}

/// The state a kernel's cache operand is, for errors ("a KV cache" where
/// it cannot be traced).
static std::string stateName(Value cache) {
  auto arg = dyn_cast<BlockArgument>(cache);
  auto kernel = cache.getParentRegion()->getParentOfType<KernelOp>();
  if (!arg || !kernel)
    return "a KV cache";
  auto outer = dyn_cast<BlockArgument>(kernel.getInputs()[arg.getArgNumber()]);
  auto func = kernel->getParentOfType<func::FuncOp>();
  if (!outer || !func)
    return "a KV cache";
  auto name =
      func.getArgAttrOfType<StringAttr>(outer.getArgNumber(), kStateAttr);
  return name ? "'" + name.getValue().str() + "'" : "a KV cache";
}

/// The scale of each group of `groups` of a new row's features, as an i8
/// cache quantizes it: max |x| / 127 (0 for an all-zero group), NaN where
/// the group holds an Inf or NaN (their max is taken as Inf, so the order
/// Halide's max gives NaNs does not matter). The i8 write and the scales'
/// write compute it with this one expression, so they agree bit for bit.
static Func groupScales(const Tensor &rows, int64_t features, int64_t groups,
                        KernelBuilder &b) {
  int size = int(features / groups);
  Var g("g"), s("s"), n("n");
  RDom e(0, size, b.name("group"));
  Expr x = rows.func(g * size + e, s, n);
  Expr largest = maximum(select(is_finite(x), abs(x), Float(32).max() * 2));
  Func scales(b.name("cache_scales"));
  // strict_float: a division as written (Halide would multiply by 1/127, a
  // different rounding from the documented max / 127).
  scales(g, s, n) = select(is_finite(largest), strict_float(largest / 127.0f),
                           Halide::cast<float>(NAN));
  return scales;
}

/// Only the new rows are stored: the pure definition is undefined, so the
/// cache's other rows are never read or written (no copy per step). An f16
/// or bf16 cache gets them rounded to its type; an i8 cache gets them
/// quantized by their group's scale, and its scales' state the scales.
static LogicalResult lowerCacheWrite(CacheWriteOp op, KernelBuilder &b) {
  const Tensor &cache = b.get(op.getCache());
  const Tensor &rows = b.get(op.getRows());
  if (cache.extents.size() != 3)
    return op.emitOpError("a KV cache must be [B, L, features]");
  int64_t features = op.getRows().getType().getShape().back();
  Func scales;
  if (std::optional<uint64_t> groups = op.getGroups()) {
    if (b.target.isGpu())
      return op.emitOpError("the i8 KV cache ")
             << stateName(op.getCache()) << " (or its scales) is not "
             << "supported on " << b.target.halide().to_string()
             << ": declare the caches f16, bf16 or f32 for a GPU target";
    scales = groupScales(rows, features, int64_t(*groups), b);
  }
  Expr capacity = cache.extents[1], count = rows.extents[1];
  std::vector<Var> v = b.vars(3);
  Func position = writePosition(op, b, capacity, count);
  Func out(b.name("cache"));
  auto type = cast<RankedTensorType>(op.getResult().getType());
  out(v) = undef(storedType(type, b.target));
  int width = op.getScales() ? int(*op.getGroups()) : int(features);
  RDom r(0, width, 0, count, b.name("row"));
  // Clamped for bounds inference only: the position is checked above, and
  // computed (so checked) before any row is written.
  Expr at = clamp(position(v[2]) + r.y, 0, capacity - 1);
  Expr row = rows.func(r.x, r.y, v[2]);
  if (op.getScales()) {
    row = scales(r.x, r.y, v[2]);
  } else if (scales.defined()) {
    // Round half to even (Halide's round), within +-127; an all-zero
    // group (scale 0) and a non-finite one (NaN) store 0s.
    Expr scale = scales(r.x / int(features / *op.getGroups()), r.y, v[2]);
    row =
        select(scale > 0.0f,
               clamp(round(strict_float(row / scale)), -127.0f, 127.0f), 0.0f);
  }
  out(r.x, at, v[2]) = narrowToStored(row, type, b.target);
  b.stages.stages.push_back(
      schedules::CacheWriteStage{out, position, r, width, scales});
  b.define(op.getResult(), {out, cache.extents, /*inPlace=*/true});
  return success();
}

void registerCacheLowerings(LoweringRegistry &registry) {
  registry.add<CacheWriteOp>(lowerCacheWrite);
}

} // namespace attnc::codegen
