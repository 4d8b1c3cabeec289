//===- schedules/cpu/PanelPrefetch.cpp - the next weight panel, early -----===//
//
// A prefill GEMM's task reads its panel of packed weights [K, panel width]
// in its first register tile; in a model the panel is cold (the other
// kernels' weights and activations passed through the caches since), and
// that tile waits on its loads. Four GEMMs of BERT's shapes at 1x128 (30 MB
// of weights, 1 thread, a 2-vCPU Sapphire Rapids) ran at 127 GFLOP/s, one
// alone at 156. Here each step of a task's first tiles also prefetches one
// line of the next panel's row into L2 (tile t its line t, for as many
// tiles as a row has lines: 4 for AVX-512's f32 panels), so the next task
// finds its panel there (docs/performance.md, "The next weight panel,
// prefetched").
//
// Halide's own `prefetch` directive cannot express it: it prefetches the
// whole region a loop iteration reads at once, and Halide 21 emits every
// prefetch as prefetchnta (BERT 1x128 took 3.6x longer with it). This pass
// calls LLVM's prefetch intrinsic itself, which Halide declares in every
// x86 module for its runtime's prefetch.
//
//===----------------------------------------------------------------------===//
#include "schedules/cpu/PanelPrefetch.h"

#include <optional>
#include <string>

using namespace Halide;
using namespace Halide::Internal;

namespace attnc::schedules {
namespace {

constexpr int kLineBytes = 64;
/// llvm.prefetch's operands: a read, locality 2 (prefetcht1 on x86: L2 and
/// outward, not L1), the data cache.
constexpr int kRead = 0, kLocality = 2, kDataCache = 1;

/// The weight loads of a reduction step's body, as their constant offsets
/// from the first one's index.
struct RowLoads {
  Expr base;
  Type element;
  int64_t first = 0, end = 0;
};

/// The loads of `weights` in a step's body; empty when an index is not a
/// dense ramp (or scalar) a constant distance from the others'.
class FindRowLoads : public IRVisitor {
public:
  explicit FindRowLoads(const std::string &weights) : weights(weights) {}
  std::optional<RowLoads> row;
  bool valid = true;

private:
  using IRVisitor::visit;
  void visit(const Load *op) override {
    IRVisitor::visit(op);
    if (op->name != weights)
      return;
    Expr base = op->index;
    int lanes = 1;
    if (const Ramp *r = op->index.as<Ramp>()) {
      if (!is_const_one(r->stride)) {
        valid = false;
        return;
      }
      base = r->base;
      lanes = r->lanes;
    }
    if (!row) {
      row = RowLoads{base, op->type.element_of(), 0, lanes};
      return;
    }
    std::optional<int64_t> offset = as_const_int(simplify(base - row->base));
    if (!offset) {
      valid = false;
      return;
    }
    row->first = std::min(row->first, *offset);
    row->end = std::max(row->end, *offset + lanes);
  }
  const std::string &weights;
};

/// The names a statement defines (lets and loops) inside itself.
class DefinedNames : public IRVisitor {
public:
  Scope<> names;

private:
  using IRVisitor::visit;
  void visit(const LetStmt *op) override {
    names.push(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Let *op) override {
    names.push(op->name);
    IRVisitor::visit(op);
  }
  void visit(const For *op) override {
    names.push(op->name);
    IRVisitor::visit(op);
  }
};

/// The pass: each PanelPrefetch's step loops, inside its tile loop, with
/// the prefetch.
class InsertPanelPrefetch : public IRMutator {
public:
  explicit InsertPanelPrefetch(std::vector<PanelPrefetch> prefetches)
      : prefetches(std::move(prefetches)) {}

private:
  using IRMutator::visit;

  Stmt visit(const For *op) override {
    for (const PanelPrefetch &p : prefetches) {
      if (op->name == p.tileLoop) {
        ScopedValue<const PanelPrefetch *> inTile(current, &p);
        return IRMutator::visit(op);
      }
      if (current == &p && op->name == p.stepLoop)
        return prefetching(op, p);
    }
    return IRMutator::visit(op);
  }

  /// `step` with line t of the next panel's row prefetched at each step of
  /// tile t, for the tiles before the row's line count.
  Stmt prefetching(const For *step, const PanelPrefetch &p) {
    FindRowLoads loads(p.weights);
    step->body.accept(&loads);
    if (!loads.valid || !loads.row)
      return step;
    const RowLoads &row = *loads.row;
    int bytes = row.element.bytes();
    int32_t lineElements = kLineBytes / bytes;
    int32_t lines =
        int32_t(((row.end - row.first) * bytes + kLineBytes - 1) / kLineBytes);
    Expr tile = Variable::make(Int(32), p.tileLoop);
    Expr panel = Variable::make(Int(32), p.weights + ".stride.2");
    Expr row1 = Variable::make(Int(32), p.weights + ".stride.1");
    // Tiles from `lines` on prefetch the row the step before loaded, in L1,
    // so one loop serves every tile: a second copy of the loop without the
    // prefetch, under an `if` on the tile, ran slower than no prefetch at
    // all (BERT 1x128: 15.5 against 15.0 ms), which its machine code did
    // not explain.
    Expr index =
        simplify(row.base + int32_t(row.first) +
                 select(tile < lines, panel + tile * lineElements, -row1));
    // The prefetch sits at the top of the step: what it reads must not be
    // defined inside it.
    DefinedNames inner;
    step->body.accept(&inner);
    if (expr_uses_vars(index, inner.names))
      return step;
    // The weights' host pointer once per loop, the address as an integer:
    // Halide 21 has no intrinsic for an element's address.
    std::string host = p.weights + ".prefetch_host";
    Expr hostBits = reinterpret(
        Int(64), Call::make(Handle(), Call::buffer_get_host,
                            {Variable::make(Handle(), p.weights + ".buffer")},
                            Call::Extern));
    Expr address = reinterpret(Handle(), Variable::make(Int(64), host) +
                                             cast(Int(64), index) * bytes);
    Stmt prefetch = Evaluate::make(
        Call::make(Int(32), "llvm.prefetch.p0",
                   {address, kRead, kLocality, kDataCache}, Call::Extern));
    return LetStmt::make(host, hostBits,
                         For::make(step->name, step->min, step->extent,
                                   step->for_type, step->partition_policy,
                                   step->device_api,
                                   Block::make(prefetch, step->body)));
  }

  std::vector<PanelPrefetch> prefetches;
  const PanelPrefetch *current = nullptr;
};

} // namespace

void addPanelPrefetches(Pipeline &pipeline,
                        const std::vector<PanelPrefetch> &prefetches) {
  if (!prefetches.empty())
    pipeline.add_custom_lowering_pass(new InsertPanelPrefetch(prefetches));
}

} // namespace attnc::schedules
