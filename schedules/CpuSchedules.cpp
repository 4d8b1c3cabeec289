//===- schedules/CpuSchedules.cpp - schedules for SIMD CPUs ---------------===//
//
// Measured on the 2-core Sapphire Rapids CI machine (AVX-512), GPT-2 block
// at 1x128 through `attn-run --bench 20 --threads 2`: 49 ms with the GEMM
// tile's rows looped, 31 ms with them unrolled into a 2x16-wide by 8-row
// register block (1.6x), against the same schedule without unrolling. Flash
// attention tiles and bench/ baselines come with the performance work.
//
//===----------------------------------------------------------------------===//
#include "schedules/CpuSchedules.h"

#include <algorithm>

using namespace Halide;

namespace attnc::schedules {
namespace {

/// The widest power-of-two vector, at most the target's natural width, that
/// fits in `extent` (so static feature dims never need a remainder loop).
int vectorWidth(int64_t extent, const Target &target) {
  int width = target.natural_vector_size<float>();
  while (width > 1 && width > extent)
    width /= 2;
  return width;
}

/// Fuses `rows` with the outer dims vars[2..] into one parallel loop, so
/// batch 1 still spreads over cores. Returns the fused var.
Var parallelOver(Func f, Var rows, const std::vector<Var> &vars) {
  for (size_t d = 2; d < vars.size(); ++d) {
    Var fused(vars[d].name() + "_" + rows.name());
    f.fuse(rows, vars[d], fused);
    rows = fused;
  }
  f.parallel(rows);
  return rows;
}

/// An output computed row by row: vectorised over features, parallel rows.
Var scheduleRows(Func f, const std::vector<Var> &vars, int width) {
  Var rows = parallelOver(f, vars[1], vars);
  if (width > 1)
    f.vectorize(vars[0], width, TailStrategy::ShiftInwards);
  return rows;
}

/// Rows of a GEMM register tile.
const int kRowTile = 6;

/// GEMM register blocks: each tile computes `vectors` x W features of
/// `kRowTile` rows with the k loop outermost, so its partial sums stay in
/// registers (AVX-512: 4 x 6 = 24 of 32 zmm; AVX2: 2 x 6 = 12 of 16 ymm) and
/// every k step is one weight-vector load per vector and one broadcast per
/// row. A task walks one block of rows through one panel of features, so the
/// panel (K x nTile weights) stays in L2 while the rows stream past it.
/// Tiles always span whole row tiles (the algorithm clamps the input row), so
/// the block's size is constant and the last, shorter tile needs no guard.
void scheduleGemm(KernelStages &s, const Target &target, int width) {
  // Rows per block: the block's inputs fill about a quarter of a 2 MiB L2.
  const int64_t kBlockBytes = 512 * 1024;
  const std::vector<Var> &v = s.vars;
  Func f = s.final;
  // Features narrower than a panel get fewer vectors; their weights are
  // never packed (the panel width does not divide them).
  int nTile = gemmPanelWidth(target);
  while (nTile > width && nTile > s.features)
    nTile /= 2;
  int64_t blockTiles =
      std::max<int64_t>(1, kBlockBytes / (4 * s.gemm->inFeatures) / kRowTile);
  Var no("no"), ni("ni"), ro("ro"), ri("ri"), rb("rb"), rt("rt"), task("task");
  f.split(v[0], no, ni, nTile, TailStrategy::ShiftInwards)
      .split(v[1], ro, ri, kRowTile, TailStrategy::GuardWithIf)
      .split(ro, rb, rt, int(blockTiles), TailStrategy::GuardWithIf)
      .reorder(ni, ri, rt, no, rb)
      .fuse(no, rb, task)
      .vectorize(ni, width);
  parallelOver(f, task, v);
  Func gemm = s.gemm->func;
  gemm.compute_at(f, rt)
      .bound_extent(v[1], kRowTile)
      .vectorize(v[0], width)
      .unroll(v[0])
      .unroll(v[1]);
  gemm.update()
      .reorder(v[0], v[1], s.gemm->k.x)
      .vectorize(v[0], width)
      .unroll(v[0])
      .unroll(v[1]);
}

void scheduleNorm(KernelStages &s, int width) {
  Var rows = scheduleRows(s.final, s.vars, width);
  s.norm->mean.compute_at(s.final, rows);
  s.norm->invStd.compute_at(s.final, rows);
}

/// One task per (query row, batch): the row's scores for every head and key
/// live in a buffer of S x heads floats, then feed the weighted sum of values.
void scheduleAttention(KernelStages &s, int width) {
  Var rows = scheduleRows(s.final, s.vars, width);
  AttentionStage &a = *s.attention;
  for (Func f : {a.scores, a.rowMax, a.probs, a.rowSum, a.weighted})
    f.compute_at(s.final, rows);
  a.weighted.vectorize(s.vars[0], width);
  a.weighted.update().reorder(s.vars[0], a.keys.x).vectorize(s.vars[0], width);
}

} // namespace

int gemmPanelWidth(const Target &target) {
  int vectors = target.has_feature(Target::AVX512) ? 4 : 2;
  return vectors * target.natural_vector_size<float>();
}

void scheduleHand(KernelStages &s, const Target &target) {
  int width = vectorWidth(s.features, target);
  // Intermediates that other kernels also read are stored whole.
  for (Func f : s.outputs)
    if (f.name() != s.final.name())
      f.compute_root();
  if (s.gemm)
    scheduleGemm(s, target, width);
  else if (s.norm)
    scheduleNorm(s, width);
  else if (s.attention)
    scheduleAttention(s, width);
  else
    scheduleRows(s.final, s.vars, width);
}

void scheduleNaive(KernelStages &s) {
  if (s.gemm)
    s.gemm->func.compute_root();
  if (s.norm) {
    s.norm->mean.compute_root();
    s.norm->invStd.compute_root();
  }
  if (s.attention)
    for (Func f : {s.attention->scores, s.attention->rowMax,
                   s.attention->probs, s.attention->rowSum,
                   s.attention->weighted})
      f.compute_root();
}

} // namespace attnc::schedules
