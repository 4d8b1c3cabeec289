//===- compiler/codegen/lowerings/Cache.cpp - attn.cache_write ------------===//
#include "compiler/codegen/Lowering.h"

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

/// Only the new rows are stored: the pure definition is undefined, so the
/// cache's other rows are never read or written (no copy per step). An f16
/// or bf16 cache gets them rounded to its type.
static LogicalResult lowerCacheWrite(CacheWriteOp op, KernelBuilder &b) {
  const Tensor &cache = b.get(op.getCache());
  const Tensor &rows = b.get(op.getRows());
  if (cache.extents.size() != 3)
    return op.emitOpError("a KV cache must be [B, L, features]");
  Expr capacity = cache.extents[1], count = rows.extents[1];
  std::vector<Var> v = b.vars(3);
  Func position = writePosition(op, b, capacity, count);
  Func out(b.name("cache"));
  auto type = cast<RankedTensorType>(op.getResult().getType());
  out(v) = undef(storedType(type, b.target));
  RDom r(0, rows.extents[0], 0, count, b.name("row"));
  // Clamped for bounds inference only: the position is checked above, and
  // computed (so checked) before any row is written.
  Expr at = clamp(position(v[2]) + r.y, 0, capacity - 1);
  out(r.x, at, v[2]) =
      narrowToStored(rows.func(r.x, r.y, v[2]), type, b.target);
  int64_t features = op.getRows().getType().getShape().back();
  b.stages.stages.push_back(
      schedules::CacheWriteStage{out, position, r, features});
  b.define(op.getResult(), {out, cache.extents, /*inPlace=*/true});
  return success();
}

void registerCacheLowerings(LoweringRegistry &registry) {
  registry.add<CacheWriteOp>(lowerCacheWrite);
}

} // namespace attnc::codegen
