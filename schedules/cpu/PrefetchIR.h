//===- schedules/cpu/PrefetchIR.h - prefetches in lowered loops -*- C++ -*-===//
//
// What the lowering passes that prefetch (PanelPrefetch, RowPrefetch) share:
// the loads of a buffer that a loop body reads as dense rows, and an L2
// prefetch of one of its elements. Halide's own `prefetch` directive fetches
// a loop iteration's whole region at once and Halide 21 emits it as
// prefetchnta; these passes call LLVM's prefetch intrinsic, which Halide
// declares in every x86 module for its runtime's prefetch.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SCHEDULES_CPU_PREFETCHIR_H
#define ATTNC_SCHEDULES_CPU_PREFETCHIR_H

#include "Halide.h"

#include <optional>
#include <string>

namespace attnc::schedules {

constexpr int kCacheLineBytes = 64;

/// The loads of a buffer in a loop body, as their constant offsets from the
/// first one's index: elements [base + first, base + end).
struct DenseLoads {
  Halide::Expr base;
  Halide::Type element;
  int64_t first = 0, end = 0;

  /// The cache lines the loads span (from the first element on).
  int32_t lines() const;
  /// Elements per cache line.
  int32_t lineElements() const;
};

/// The loads of `buffer` in `body`; nullopt when there is none, or when an
/// index is not a dense ramp (or a scalar) a constant distance from the
/// others'.
std::optional<DenseLoads> denseLoads(const Halide::Internal::Stmt &body,
                                     const std::string &buffer);

/// Whether `e` uses a name that `body` defines (a let or a loop inside it):
/// then it cannot be evaluated before the body.
bool usesInnerNames(const Halide::Expr &e, const Halide::Internal::Stmt &body);

/// `e` with the lets that open `body` (the chain of LetStmts at its top)
/// substituted, so that it may be evaluated before the body: Halide places a
/// loop-invariant let that reads memory (a sequence's position) inside the
/// loop that uses it.
Halide::Expr withLeadingLets(Halide::Expr e, Halide::Internal::Stmt body);

/// An L2 prefetch (prefetcht1 on x86: L2 and outward, not L1) of `buffer`'s
/// element `index`, through the host pointer withPrefetchHost binds.
Halide::Internal::Stmt prefetchL2(const std::string &buffer,
                                  Halide::Type element, Halide::Expr index);

/// `s` with `buffer`'s host pointer bound for prefetchL2 (once, outside a
/// loop): Halide 21 has no intrinsic for an element's address.
Halide::Internal::Stmt withPrefetchHost(const std::string &buffer,
                                        Halide::Internal::Stmt s);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_CPU_PREFETCHIR_H
