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
// Halide's own `prefetch` directive cannot express it (PrefetchIR.h): it
// prefetches the whole region a loop iteration reads at once, as
// prefetchnta (BERT 1x128 took 3.6x longer with it).
//
//===----------------------------------------------------------------------===//
#include "schedules/cpu/PanelPrefetch.h"

#include "schedules/cpu/PrefetchIR.h"

using namespace Halide;
using namespace Halide::Internal;

namespace attnc::schedules {
namespace {

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
    std::optional<DenseLoads> row = denseLoads(step->body, p.weights);
    if (!row)
      return step;
    int32_t lines = row->lines();
    Expr tile = Variable::make(Int(32), p.tileLoop);
    Expr panel = Variable::make(Int(32), p.weights + ".stride.2");
    Expr row1 = Variable::make(Int(32), p.weights + ".stride.1");
    // Tiles from `lines` on prefetch the row the step before loaded, in L1,
    // so one loop serves every tile: a second copy of the loop without the
    // prefetch, under an `if` on the tile, ran slower than no prefetch at
    // all (BERT 1x128: 15.5 against 15.0 ms), which its machine code did
    // not explain.
    Expr index = simplify(
        row->base + int32_t(row->first) +
        select(tile < lines, panel + tile * row->lineElements(), -row1));
    // The prefetch sits at the top of the step: what it reads must not be
    // defined inside it.
    if (usesInnerNames(index, step->body))
      return step;
    return withPrefetchHost(
        p.weights,
        For::make(step->name, step->min, step->extent, step->for_type,
                  step->partition_policy, step->device_api,
                  Block::make(prefetchL2(p.weights, row->element, index),
                              step->body)));
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
