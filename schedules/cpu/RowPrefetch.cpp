//===- schedules/cpu/RowPrefetch.cpp - rows read in order, early ----------===//
//
// A decode attention streams its KV cache: per key tile, the scores read the
// tile's key rows one after the other, then the values its value rows
// (GPT-2 small: rows of 768 f16s, 1.5 KiB). On the 2-vCPU AMD EPYC Zen 4
// those loops read 11-14 GB/s, where one plain stream of loads reads 20-23:
// the hardware prefetcher keeps too few lines in flight ahead of loops that
// convert and multiply each one. Here each iteration of a loop reading a
// row (or a part of one) also prefetches the same lines kAheadBytes further
// on, rounded up to whole rows, into L2 (prefetcht1, PrefetchIR.h). Past
// the cache's last rows the prefetches read what follows it, or nothing: a
// prefetch never faults.
//
// GPT-2 small's decode at context 4096 (4-bit weights, f16 caches, 1
// thread, the libraries loaded in one process and their steps timed in
// turns; the attention's share of `perf` samples): 6 KiB ahead took
// 0.82-0.87 of the attention's time without the prefetch, 16 KiB 0.86-0.94,
// 40 KiB 1.0, 1-3 KiB 1.1-1.2 (a row the loop reads next); an f32 cache
// 0.95, 2 threads 0.89, context 1024 1.0 (docs/performance.md, "The KV
// cache's rows, prefetched").
//
//===----------------------------------------------------------------------===//
#include "schedules/cpu/RowPrefetch.h"

#include "schedules/cpu/PrefetchIR.h"

#include <algorithm>

using namespace Halide;
using namespace Halide::Internal;

namespace attnc::schedules {
namespace {

constexpr int32_t kAheadBytes = 6 * 1024;

/// Whether the lowered loop `lowered` is the scheduled loop `scheduled`:
/// Halide renames a loop whose min it moves to 0 `<name>.rebased`.
bool isLoop(const std::string &lowered, const std::string &scheduled) {
  return lowered == scheduled || lowered == scheduled + ".rebased";
}

class InsertRowPrefetch : public IRMutator {
public:
  explicit InsertRowPrefetch(std::vector<RowPrefetch> prefetches)
      : prefetches(std::move(prefetches)) {}

private:
  using IRMutator::visit;

  Stmt visit(const For *op) override {
    for (const RowPrefetch &p : prefetches)
      if (std::any_of(
              p.loops.begin(), p.loops.end(),
              [&](const std::string &l) { return isLoop(op->name, l); }))
        if (std::optional<Stmt> s = prefetching(op, p))
          return *s;
    return IRMutator::visit(op);
  }

  /// `loop` with the lines each iteration reads of `p.buffer` prefetched
  /// in the rows ahead; nullopt where its body does not read dense rows.
  std::optional<Stmt> prefetching(const For *loop, const RowPrefetch &p) {
    std::optional<DenseLoads> row = denseLoads(loop->body, p.buffer);
    if (!row)
      return std::nullopt;
    Expr first =
        simplify(withLeadingLets(row->base + int32_t(row->first), loop->body));
    if (usesInnerNames(first, loop->body))
      return std::nullopt;
    std::string ahead = p.buffer + ".prefetch_ahead";
    Expr aheadVar = Variable::make(Int(32), ahead);
    std::vector<Stmt> body;
    for (int32_t line = 0; line < row->lines(); ++line)
      body.push_back(prefetchL2(p.buffer, row->element,
                                first + aheadVar + line * row->lineElements()));
    body.push_back(loop->body);
    Stmt withPrefetches =
        For::make(loop->name, loop->min, loop->extent, loop->for_type,
                  loop->partition_policy, loop->device_api, Block::make(body));
    // Whole rows, at least kAheadBytes of them, as elements.
    Expr stride = Variable::make(Int(32), p.buffer + ".stride.1");
    Expr rowBytes = max(stride * row->element.bytes(), 1);
    Expr rows = (kAheadBytes + rowBytes - 1) / rowBytes;
    return withPrefetchHost(
        p.buffer, LetStmt::make(ahead, rows * stride, withPrefetches));
  }

  std::vector<RowPrefetch> prefetches;
};

} // namespace

void addRowPrefetches(Pipeline &pipeline,
                      const std::vector<RowPrefetch> &prefetches) {
  if (!prefetches.empty())
    pipeline.add_custom_lowering_pass(new InsertRowPrefetch(prefetches));
}

} // namespace attnc::schedules
