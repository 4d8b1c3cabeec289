//===- schedules/gpu/GpuSchedules.cpp - schedules for GPUs ----------------===//
//
// Correct first: each anchor has the block and thread structure the issue
// asks for (GEMM register tiles, a block per norm row with a block
// reduction, flash attention with a block per query tile and a thread per
// query row, flash decoding with a thread per run of key tiles), and
// nothing was tuned: no GPU has run these schedules yet
// (docs/gpu.md). Flash attention stages each key tile's keys and values in
// shared memory; GEMM operands and decode's keys are read from global
// memory through the cache.
//
//===----------------------------------------------------------------------===//
#include "schedules/gpu/GpuSchedules.h"

#include <algorithm>

using namespace Halide;

namespace attnc::schedules {
namespace {

/// Threads of a 1-D block, and of a side of a 2-D one.
constexpr int kThreads1D = 128, kThreads2D = 16;
/// Shared memory a block may take: the 48 KiB every CUDA device (and
/// OpenCL's usual local memory) gives without asking for more.
constexpr int64_t kSharedBytes = 48 * 1024;
/// A GEMM block's output tile (features x rows) and each thread's part.
constexpr int kGemmTileX = 64, kGemmTileY = 32, kGemmThreadX = 4,
              kGemmThreadY = 4;

/// The largest power of two <= min(`limit`, `extent`), at least 1.
int powerOfTwoUpTo(int64_t extent, int limit) {
  int p = 1;
  while (2 * p <= limit && 2 * p <= extent)
    p *= 2;
  return p;
}

/// The pure vars of definition `update` of `f` (-1: the pure definition),
/// innermost first: those its left-hand side names at their own positions.
std::vector<Var> pureVarsOf(Func f, int update) {
  std::vector<Var> vars = f.args();
  if (update < 0)
    return vars;
  std::vector<Expr> lhs = f.update_args(update);
  std::vector<Var> pure;
  for (size_t i = 0; i < vars.size() && i < lhs.size(); ++i) {
    const auto *v = lhs[i].as<Internal::Variable>();
    if (v && !v->reduction_domain.defined() && v->name == vars[i].name())
      pure.push_back(vars[i]);
  }
  return pure;
}

/// Fuses vars[from..] (outermost dims, adjacent in loop order) into one
/// var, returned; vars[from] itself when there is only that one.
Var fuseOuter(Halide::Stage s, const std::vector<Var> &vars, size_t from) {
  Var outer = vars[from];
  for (size_t d = from + 1; d < vars.size(); ++d) {
    Var fused(vars[d].name() + "_" + outer.name());
    s.fuse(outer, vars[d], fused);
    outer = fused;
  }
  return outer;
}

/// One thread per point of `pure` (a definition's pure vars): 2-D tiles of
/// the innermost var by the others fused; loops over reduction vars run in
/// the thread. A definition without pure vars runs on one GPU thread.
void gpuThreadPerPoint(Halide::Stage s, const std::vector<Var> &pure) {
  if (pure.empty()) {
    s.gpu_single_thread();
    return;
  }
  Var xo("xo"), xi("xi");
  if (pure.size() == 1) {
    s.gpu_tile(pure[0], xo, xi, kThreads1D, TailStrategy::GuardWithIf);
    return;
  }
  Var outer = fuseOuter(s, pure, 1), yo("yo"), yi("yi");
  s.gpu_tile(pure[0], outer, xo, yo, xi, yi, kThreads2D, kThreads2D,
             TailStrategy::GuardWithIf);
}

/// `f` computed whole on the GPU, each of its definitions a thread per
/// point.
void gpuRoot(Func f) {
  f.compute_root();
  gpuThreadPerPoint(f, f.args());
  for (int u = 0; u < f.num_update_definitions(); ++u)
    gpuThreadPerPoint(f.update(u), pureVarsOf(f, u));
}

/// A few values checked with `require` (sequence lengths, a cache
/// position), computed whole on the host before the GPU kernels that read
/// them: a failed check is reported through the host's error handler,
/// which code on a GPU cannot call.
void onHost(Func f) { f.compute_root(); }

/// Register-tiled GEMM: a block computes a kGemmTileX x kGemmTileY tile of
/// outputs (features x rows, batch dims as a third block dim), each thread a
/// kGemmThreadX x kGemmThreadY part of it whose partial sums stay in
/// registers over the whole reduction. Threads of a warp read neighbouring
/// pieces of each weight row. A decode's GEMVs (few rows) take a thread
/// per output feature instead: a row tile would be padding.
void scheduleGemm(Func out, const std::vector<Var> &v, int64_t features,
                  GemmStage &g, bool fewRows) {
  Func gemm = g.func;
  Var xo("xo"), xi("xi"), tx("tx"), rx("rx");
  if (v.size() < 2 || fewRows) {
    int tile = powerOfTwoUpTo(features, kThreads1D);
    out.split(v[0], xo, xi, tile, TailStrategy::GuardWithIf);
    std::vector<VarOrRVar> blocks = {xo};
    if (v.size() >= 2)
      blocks.push_back(fuseOuter(out, v, 1));
    out.reorder(xi, xo);
    if (blocks.size() == 2)
      out.gpu_blocks(blocks[0], blocks[1]);
    else
      out.gpu_blocks(blocks[0]);
    out.gpu_threads(xi);
    gemm.compute_at(out, xi);
    return;
  }
  // Whole tiles along the features (ShiftInwards: a tile past the end moves
  // back over computed outputs), so a thread's part is a constant-size
  // register block; rows past the last are computed from the clamped last
  // row (lowerings/Linear.cpp) and never stored.
  int tileX = powerOfTwoUpTo(features, kGemmTileX);
  int partX = std::min(kGemmThreadX, tileX);
  Var yo("yo"), yi("yi"), ty("ty"), ry("ry");
  out.split(v[0], xo, xi, tileX, TailStrategy::ShiftInwards)
      .split(v[1], yo, yi, kGemmTileY, TailStrategy::GuardWithIf)
      .split(xi, tx, rx, partX)
      .split(yi, ty, ry, kGemmThreadY)
      .reorder(rx, ry, tx, ty, xo, yo);
  if (v.size() > 2)
    out.gpu_blocks(xo, yo, fuseOuter(out, v, 2));
  else
    out.gpu_blocks(xo, yo);
  out.gpu_threads(tx, ty).unroll(rx).unroll(ry);
  gemm.compute_at(out, tx)
      .bound_extent(v[1], kGemmThreadY)
      .unroll(v[0])
      .unroll(v[1]);
  gemm.update().reorder(v[0], v[1], g.k.x).unroll(v[0]).unroll(v[1]);
}

/// A norm (or softmax) per row: one block per row, its threads over the
/// features; each row statistic is a block reduction, every thread folding
/// a strided part of the row (rfactor) before one thread folds the parts.
void scheduleNorm(Func out, const std::vector<Var> &v, NormStage &n) {
  if (v.size() < 2) {
    gpuRoot(out);
    for (Func stat : n.rowStats)
      gpuRoot(stat);
    return;
  }
  Var row = fuseOuter(out, v, 1), fo("fo"), fi("fi");
  int threads = powerOfTwoUpTo(n.features, kThreads1D);
  out.split(v[0], fo, fi, threads, TailStrategy::GuardWithIf)
      .reorder(fo, fi, row)
      .gpu_blocks(row)
      .gpu_threads(fi);
  for (Func stat : n.rowStats) {
    stat.compute_at(out, row);
    if (threads == 1)
      continue;
    RVar ko("ko"), ki("ki");
    Var u("u");
    Func partial = stat.update().split(n.k.x, ko, ki, threads).rfactor(ki, u);
    partial.compute_at(out, row).gpu_threads(u);
    partial.update().gpu_threads(u);
  }
}

/// Flash attention over a prefill: one block per (query tile, head,
/// batch), one thread per query row keeping its row's state (running max,
/// sum and headDim outputs). The block walks the key tiles its rows may see
/// in order (the algorithm skips the others): its threads first copy the
/// tile's keys and values into shared memory together, then each folds the
/// tile into its row's state, so a key is read from global memory once per
/// block instead of once per row. Where a tile's keys, values and the
/// states do not fit kSharedBytes, each thread reads them itself.
void scheduleAttention(Func out, const std::vector<Var> &v, AttentionStage &a) {
  Var h("h"), c("c"), it("it"), ii("ii");
  out.split(v[0], h, c, a.headDim)
      .split(v[1], it, ii, a.queryTile, TailStrategy::GuardWithIf)
      .reorder(c, ii, it, h);
  if (v.size() > 2)
    out.gpu_blocks(it, h, fuseOuter(out, v, 2));
  else
    out.gpu_blocks(it, h);
  out.gpu_threads(ii);
  int64_t shared = int64_t(sizeof(float)) *
                   (AttentionStage::kKeyTile * (a.keyHeadDim + a.headDim) +
                    a.queryTile * (a.headDim + 2));
  if (shared > kSharedBytes) {
    a.queries.compute_at(out, ii);
    a.state.compute_at(out, ii);
    // The key tiles outside the head dims, so each tile is visited once.
    a.state.update().reorder(a.state.args()[0], a.tiles.x);
    for (Func g : {a.dot, a.tileMax, a.probs, a.tileSum, a.tileOut})
      g.compute_at(a.state, a.tiles.x);
    return;
  }
  // The states of the block's rows in shared memory, a thread per row.
  std::vector<Var> sv = a.state.args(); // c, ii, it, h, ...
  a.state.compute_at(out, it).gpu_threads(sv[1]);
  a.state.update().reorder(sv[0], sv[1], a.tiles.x).gpu_threads(sv[1]);
  // Per key tile, before the rows fold it: its keys and values, copied by
  // every thread of the block (the fused features x keys, a strip each).
  Func keys = a.keySource.in(a.dot), values = a.valueSource.in(a.tileOut);
  for (Func f : {keys, values}) {
    std::vector<Var> fv = f.args(); // c, j, batch...
    Var o("o"), t("t");
    f.compute_at(a.state, a.tiles.x)
        .store_in(MemoryType::GPUShared)
        .split(fv[1], o, t, a.queryTile, TailStrategy::GuardWithIf)
        .reorder(fv[0], t, o)
        .gpu_threads(t);
  }
  // A row's part of the tile in the thread folding it.
  for (Func g : {a.queries, a.dot, a.tileMax, a.probs, a.tileSum, a.tileOut})
    g.compute_at(a.state, sv[1]);
}

/// Flash decoding: one block per (head, query row); each of its threads
/// folds one run of key tiles into a state in shared memory, then the
/// head's threads merge the runs and write the outputs, one head dim each.
void scheduleDecodeAttention(Func out, const std::vector<Var> &v,
                             AttentionStage &a) {
  Var h("h"), c("c");
  out.split(v[0], h, c, a.headDim).reorder(c, h);
  Var rows = v.size() > 1 ? fuseOuter(out, v, 1) : Var();
  if (v.size() > 1)
    out.gpu_blocks(h, rows);
  else
    out.gpu_blocks(h);
  out.gpu_threads(c);
  Var e = a.queries.args()[1];
  a.queries.compute_at(out, h).gpu_threads(e);
  std::vector<Var> sv = a.state.args();
  Var chunk = sv[4];
  a.state.compute_at(out, h).gpu_threads(chunk);
  a.state.update().reorder(sv[0], a.tiles.x, chunk).gpu_threads(chunk);
  for (Func g : {a.dot, a.tileMax, a.probs, a.tileSum, a.tileOut})
    g.compute_at(a.state, a.tiles.x);
  Var mc = a.merged.args()[0];
  a.merged.compute_at(out, h).gpu_threads(mc);
  a.merged.update().gpu_threads(mc);
}

/// Attention with its probabilities (only models that ask for them): the
/// scores, row statistics, probabilities and weighted values each computed
/// whole, a thread per element, reductions in the thread.
void scheduleAttentionWeights(Func out, AttentionWeightsStage &a) {
  for (Func f : {a.scores, a.rowMax, a.rowSum, a.weights, a.result, out})
    gpuRoot(f);
}

/// New rows of a KV cache: the checked position on the host, then a
/// thread per (feature, new row). The rows written are distinct, which
/// Halide cannot prove of a position read at run time.
void scheduleCacheWrite(CacheWriteStage &c) {
  onHost(c.position);
  // The pure definition is undefined (the cache's other rows stay as they
  // are); placed on the GPU, it tells Halide the output is never touched on
  // the host, so a cache that lives on the device needs no host copy.
  gpuThreadPerPoint(c.result, c.result.args());
  RVar fo("fo"), fi("fi"), ro("ro"), ri("ri");
  c.result.update().allow_race_conditions().gpu_tile(
      c.rows.x, c.rows.y, fo, ro, fi, ri, kThreads2D, kThreads2D,
      TailStrategy::GuardWithIf);
}

} // namespace

void scheduleGpu(KernelStages &s) {
  // Intermediates other kernels also read, and lookup tables, are
  // computed whole; a cache written in place is scheduled by its stage.
  auto isCacheResult = [&](Func f) {
    return std::any_of(s.stages.begin(), s.stages.end(), [&](Stage &st) {
      return std::holds_alternative<CacheWriteStage>(st) &&
             stageResult(st).name() == f.name();
    });
  };
  for (Func f : s.outputs)
    if (f.name() != s.final.name() && !isCacheResult(f))
      gpuRoot(f);
  for (Func t : s.tables)
    gpuRoot(t);
  for (Func c : s.checks)
    onHost(c);
  for (size_t i = 0; i < s.stages.size(); ++i) {
    bool last = i + 1 == s.stages.size();
    Stage &stage = s.stages[i];
    Func out = last ? s.final : stageResult(stage).in();
    if (!last)
      out.compute_root();
    std::vector<Var> vars = out.args();
    std::visit(Overloaded{
                   [&](GemmStage &g) {
                     scheduleGemm(out, vars, last ? s.features : g.outFeatures,
                                  g, s.fewRows);
                   },
                   [&](NormStage &n) { scheduleNorm(out, vars, n); },
                   [&](AttentionStage &a) {
                     if (a.keyLengths.defined())
                       onHost(a.keyLengths);
                     if (a.queryTile == 1)
                       scheduleDecodeAttention(out, vars, a);
                     else
                       scheduleAttention(out, vars, a);
                   },
                   [&](AttentionWeightsStage &a) {
                     if (a.keyLengths.defined())
                       onHost(a.keyLengths);
                     scheduleAttentionWeights(out, a);
                   },
                   [&](CacheWriteStage &c) { scheduleCacheWrite(c); },
               },
               stage);
  }
  if (s.stages.empty())
    gpuThreadPerPoint(s.final, s.final.args());
}

void scheduleGpuLayout(KernelStages &s) {
  gpuThreadPerPoint(s.final, s.final.args());
}

} // namespace attnc::schedules
