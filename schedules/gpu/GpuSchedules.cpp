//===- schedules/gpu/GpuSchedules.cpp - schedules for GPUs ----------------===//
//
// Each anchor has the block and thread structure the issue asks for: GEMMs
// in blocks of one warp whose lanes keep their partial sums in registers
// while the block stages k-tiles of both operands in shared memory; norms
// as a warp per row, the last row statistic folded with warp shuffles;
// flash attention with a block per query tile, a thread per query row and
// each key tile staged in shared memory; decode GEMVs over runs of their
// inputs; flash decoding with a block per run of key tiles. Correct on an
// H200; prefill 4-10x PyTorch's time, and why (docs/gpu.md, "First
// figures" and session 39). CUDA and OpenCL share
// every loop; only where a warp's lanes keep their values differs (Warp).
//
//===----------------------------------------------------------------------===//
#include "schedules/gpu/GpuSchedules.h"

#include <algorithm>
#include <stdexcept>

using namespace Halide;

namespace attnc::schedules {
namespace {

/// Threads of a 1-D block, and of a side of a 2-D one.
constexpr int kThreads1D = 128, kThreads2D = 16;
/// Lanes of a warp.
constexpr int kWarp = 32;
/// A GEMM block is one warp: kWarp x kGemmLaneCols features by kGemmRows
/// rows, whose partial sums stay in its lanes (kGemmLaneCols x kGemmRows
/// each) over the whole reduction, taken kGemmKTile at a time. Two features
/// a lane (64 a block) rather than four: twice the blocks, and every block
/// of the bench at 0.88-0.98 of its time on an H200 (docs/gpu.md, session
/// 39).
constexpr int kGemmLaneCols = 2, kGemmRows = 8, kGemmKTile = 32;
/// A decode's GEMV: the runs of inputs a block's outputs are summed in,
/// where the inputs divide into runs of at least kGemvMinRun.
constexpr int kGemvSplits = 8, kGemvMinRun = 32;

/// The largest power of two <= min(`limit`, `extent`), at least 1.
int powerOfTwoUpTo(int64_t extent, int limit) {
  int p = 1;
  while (2 * p <= limit && 2 * p <= extent)
    p *= 2;
  return p;
}

/// Loops over a warp's lanes, the same on every GPU: on CUDA Halide's lanes,
/// whose values stay in each lane's registers (a lane reading another's is
/// a warp shuffle); elsewhere threads, with those values in shared memory
/// (TargetDesc::warpShuffles). So PoCL runs the structure CUDA runs.
class Warp {
public:
  explicit Warp(const TargetDesc &target) : shuffles_(target.warpShuffles()) {}

  void lanes(Halide::Stage s, const VarOrRVar &v) const {
    if (shuffles_)
      s.gpu_lanes(v);
    else
      s.gpu_threads(v);
  }
  /// Where a Func computed over the lanes of a block of one warp lives.
  MemoryType laneMemory() const {
    return shuffles_ ? MemoryType::Register : MemoryType::GPUShared;
  }

private:
  bool shuffles_;
};

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

/// A decode's GEMV (a few rows, each its own block row): a block of kWarp
/// outputs by kGemvSplits runs of the inputs, a thread per (output, run)
/// summing its run into shared memory (a warp reads kWarp adjacent weights
/// of one input at a time), then a thread per output adding the runs. A
/// thread per output alone left 18 blocks of GPT-2's 2304 outputs, each
/// thread 768 dependent steps: 12 ms a token on an H200.
void scheduleSplitGemv(Func out, const std::vector<Var> &v, GemmStage &g) {
  Var xo("xo"), xi("xi"), u("u");
  Var rows = fuseOuter(out, v, 1);
  out.split(v[0], xo, xi, kWarp, TailStrategy::GuardWithIf)
      .reorder(xi, xo, rows)
      .gpu_blocks(xo, rows)
      .gpu_threads(xi);
  RVar ko("ko"), ki("ki");
  Func runs = g.func.update()
                  .split(g.k.x, ko, ki, int(g.inFeatures / kGemvSplits))
                  .rfactor(ko, u);
  g.func.compute_at(out, xi);
  // The row dims (one per block) outside the threads' output and run.
  std::vector<Var> pv = runs.args(); // n, rows..., u
  std::vector<VarOrRVar> order = {pv[0], pv.back()};
  order.insert(order.end(), pv.begin() + 1, pv.end() - 1);
  runs.compute_at(out, xo)
      .store_in(MemoryType::GPUShared)
      .reorder(order)
      .gpu_threads(pv[0], pv.back());
  order.insert(order.begin(), ki);
  runs.update().reorder(order).gpu_threads(pv[0], pv.back());
}

/// GEMM: a block is one warp computing a tile of kWarp x kGemmLaneCols
/// features by kGemmRows rows (batch dims a third block dim); each lane's
/// kGemmLaneCols x kGemmRows partial sums stay in its registers over the
/// whole reduction. The reduction walks k-tiles of kGemmKTile: for each,
/// the lanes first copy the tile's inputs (kGemmKTile x kGemmRows) and
/// weights (the features x kGemmKTile) into shared memory together, each
/// copy reading consecutive addresses across the lanes, then each lane folds
/// the tile into its sums (the weights it reads are consecutive across the
/// lanes, the inputs the same for all: no bank conflicts). A decode's GEMVs
/// (few rows) take a thread per output feature instead (a row tile would be
/// padding), as do GEMMs narrower than a warp.
void scheduleGemm(Func out, const std::vector<Var> &v, int64_t features,
                  GemmStage &g, bool fewRows, const Warp &warp) {
  // An epilogue that folds several GEMM features into one output (a gated
  // unit's glu: 2, adjacent) gets a tile that many times narrower, so the
  // GEMM's tile keeps kGemmLaneCols features per lane; a lane keeps the
  // features its outputs read (a stride of `fold` across the lanes).
  int64_t fold = g.outFeatures > features && g.outFeatures % features == 0
                     ? g.outFeatures / features
                     : 1;
  int tileX = powerOfTwoUpTo(
      features, std::max<int>(1, kWarp * kGemmLaneCols / int(fold)));
  Func gemm = g.func;
  Var xo("xo"), xi("xi");
  if (fewRows && v.size() >= 2 && fold == 1 && features >= kWarp &&
      !g.groupSums.defined() && !g.bf16Pairs &&
      g.inFeatures % kGemvSplits == 0 &&
      g.inFeatures / kGemvSplits >= kGemvMinRun) {
    scheduleSplitGemv(out, v, g);
    return;
  }
  // Tiles narrower than a warp (small test models) take the GEMV's
  // schedule too: a lane's part of a tile must start a multiple of the warp
  // apart from the next one's for Halide to keep it in registers.
  if (v.size() < 2 || fewRows || tileX < kWarp) {
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
  // back over computed outputs), so a lane's part is a constant-size
  // register block; rows past the last are computed from the clamped last
  // row (lowerings/Linear.cpp) and never stored.
  Var xj("xj"), xl("xl"), yo("yo"), yi("yi");
  out.split(v[0], xo, xi, tileX, TailStrategy::ShiftInwards)
      .split(v[1], yo, yi, kGemmRows, TailStrategy::GuardWithIf)
      .split(xi, xj, xl, kWarp)
      .reorder(xj, yi, xl, xo, yo)
      .unroll(xj)
      .unroll(yi);
  if (v.size() > 2)
    out.gpu_blocks(xo, yo, fuseOuter(out, v, 2));
  else
    out.gpu_blocks(xo, yo);
  warp.lanes(out, xl);
  // The sums of the block, a lane's in its registers (shared memory where
  // lanes are threads): per lane, groups of `fold` adjacent features
  // kWarp * fold apart (kGemmLaneCols features in all) by kGemmRows rows,
  // unrolled so that each sum is a register of its own.
  Var gj("gj"), gi("gi"), gl("gl"), gf("gf");
  auto laneParts = [&](Halide::Stage st) {
    st.split(v[0], gj, gi, kWarp * int(fold)).split(gi, gl, gf, int(fold));
  };
  gemm.compute_at(out, xo)
      .store_in(warp.laneMemory())
      .bound_extent(v[1], kGemmRows);
  laneParts(gemm);
  gemm.reorder(gf, gj, v[1], gl).unroll(gf).unroll(gj).unroll(v[1]);
  warp.lanes(gemm, gl);
  RVar ko("ko"), ki("ki");
  int kTile = powerOfTwoUpTo(g.inFeatures, kGemmKTile);
  laneParts(gemm.update());
  gemm.update()
      .split(g.k.x, ko, ki, kTile, TailStrategy::GuardWithIf)
      .reorder(gf, gj, v[1], ki, gl, ko)
      .unroll(gf)
      .unroll(gj)
      .unroll(v[1]);
  warp.lanes(gemm.update(), gl);
  // Per k-tile: the inputs, a lane per k (rows, batch in the lane)...
  std::vector<Var> iv = g.input.args(); // k, row, batch...
  std::vector<VarOrRVar> inputOrder(iv.begin() + 1, iv.end());
  inputOrder.push_back(iv[0]);
  g.input.compute_at(gemm, ko)
      .store_in(MemoryType::GPUShared)
      .reorder(inputOrder);
  warp.lanes(g.input, iv[0]);
  // ...and the weights, a lane per feature. Halide puts barriers in a block
  // only where it has a loop over threads, and a warp's lanes are not
  // synchronous without them (since Volta): the copy runs in one such loop,
  // of one thread.
  std::vector<Var> wv = g.weight.args(); // n, k
  Var wo("wo"), wl("wl"), wt("wt"), wk("wk");
  g.weight.compute_at(gemm, ko)
      .store_in(MemoryType::GPUShared)
      .split(wv[0], wo, wl, kWarp)
      .split(wv[1], wt, wk, kTile)
      .reorder(wo, wk, wl, wt)
      .unroll(wo)
      .gpu_threads(wt);
  warp.lanes(g.weight, wl);
}

/// A norm (or softmax) per row: a block (one warp) per row, its lanes over
/// the features. Each row statistic is a warp reduction: every lane folds a
/// strided part of the row (rfactor), then the parts are folded. The last
/// statistic, which only the output reads, is folded by every lane where it
/// writes its outputs, from the lanes' parts (warp shuffles on CUDA); an
/// earlier one, which later statistics' parts read too, once per row in
/// shared memory.
void scheduleNorm(Func out, const std::vector<Var> &v, NormStage &n,
                  const Warp &warp) {
  if (v.size() < 2) {
    gpuRoot(out);
    for (Func stat : n.rowStats)
      gpuRoot(stat);
    return;
  }
  Var row = fuseOuter(out, v, 1), fo("fo"), fi("fi");
  int lanes = powerOfTwoUpTo(n.features, kWarp);
  out.split(v[0], fo, fi, lanes, TailStrategy::GuardWithIf)
      .reorder(fo, fi, row)
      .gpu_blocks(row);
  warp.lanes(out, fi);
  // One row of each (all dims but a partial's lanes): the bounds of the
  // fused row's dims are not constant.
  auto oneRow = [](Func f, const std::string &lanes = "") {
    for (const Var &arg : f.args())
      if (arg.name() != lanes)
        f.bound_extent(arg, 1);
  };
  for (size_t i = 0; i < n.rowStats.size(); ++i) {
    Func stat = n.rowStats[i];
    bool last = i + 1 == n.rowStats.size();
    stat.compute_at(out, last ? fi : row);
    oneRow(stat);
    if (lanes == 1)
      continue;
    RVar ko("ko"), ki("ki");
    Var u("u");
    Func partial = stat.update().split(n.k.x, ko, ki, lanes).rfactor(ki, u);
    // Unrolled, each part is a shuffle from a lane known at compile time;
    // a fold in shared memory stays a loop (outside the lanes, Halide would
    // put a barrier between unrolled steps).
    if (last)
      stat.update().unroll(ki);
    partial.compute_at(out, row).store_in(last ? warp.laneMemory()
                                               : MemoryType::GPUShared);
    oneRow(partial, u.name());
    warp.lanes(partial, u);
    partial.update().reorder(ko, u);
    warp.lanes(partial.update(), u);
  }
}

/// What is computed of one key tile for one query row, each a fixed size
/// in `memory` (a thread's own, or its block's shared): scores and
/// probabilities (`keyTile` floats), the tile's max and sum (one each) and
/// its weighted values (headDim). Bounds inference alone sizes them from the
/// causal tile range and the key lengths, loosely enough that they went to a
/// global buffer per block: past 2^31 elements for a prefill at S = 4096, and
/// written out of bounds by a decode at head dim 32 or more. Halide checks a
/// bound it cannot prove at run time, but not inside a GPU kernel (attnc drops
/// that warning): the decode's key-tile extent it cannot prove is
/// max(select(seen, min(tile, last), tile), min(tile, last)) - tile + 1,
/// which is 1 up to the cache's last tile and 0 or 1 past it (the loop
/// Halide splits off there), so one tile always holds.
void boundTileTemps(AttentionStage &a, MemoryType memory) {
  auto bound = [&](Func g, size_t wide, int extent) {
    std::vector<Var> gv = g.args();
    for (size_t d = 0; d < gv.size(); ++d)
      g.bound_storage(gv[d], d == wide ? extent : 1);
    g.store_in(memory);
  };
  bound(a.dot, 1, a.keyTile);     // ii, jj, kt, it, h, batch...
  bound(a.probs, 1, a.keyTile);   // ii, jj, kt, ...
  bound(a.tileMax, 0, 1);         // ii, kt, it, h, ...
  bound(a.tileSum, 0, 1);         // ii, kt, it, h, ...
  bound(a.tileOut, 0, a.headDim); // c, ii, kt, ...
}

/// A row's loops over the key tile and over the head dims unrolled, so that
/// its queries and probabilities are registers, not a thread's local memory
/// that every score and weighted value read again (ptxas promotes an array
/// only where every index is a constant). Left to ptxas, the weighted
/// values' loop stayed a loop once the values' reads lost their clamp to
/// the last key (485bb10: the pointer is then 64-bit): 1.26-1.37x the
/// attention's time on an H200. Unrolled, the attention takes 0.26-0.46 of
/// its time before that (docs/gpu.md, session 39).
void unrollTileLoops(AttentionStage &a) {
  a.queries.unroll(a.queries.args()[1]); // ii, e, ...
  a.dot.update().unroll(a.headDims.x);   // jj, e
  // Not the probabilities' update of the tiles a sequence's length reaches
  // (padding masks): unrolled too, e2e.masks.opencl's padded outputs were
  // wrong on PoCL, for a reason not found.
  a.probs.unroll(a.probs.args()[1]); // ii, jj, ...
  a.tileSum.update().unroll(a.keys.x);
  a.tileOut.update().unroll(a.keys.x); // c, key
}

/// Flash attention over a prefill: one block per (query tile, head,
/// batch), one thread per query row keeping its row's state (running max,
/// sum and headDim outputs). The block walks the key tiles its rows may see
/// in order (the algorithm skips the others): its threads first copy the
/// tile's keys and values into shared memory together, then each folds the
/// tile into its row's state, so a key is read from global memory once per
/// block instead of once per row. Where a tile's keys, values and the
/// states do not fit kGpuSharedBytes, each thread reads them itself.
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
  if (attentionSharedBytes(a.queryTile, a.keyTile, a.keyHeadDim, a.headDim) >
      kGpuSharedBytes) {
    a.queries.compute_at(out, ii);
    a.state.compute_at(out, ii);
    // The key tiles outside the head dims, so each tile is visited once.
    a.state.update().reorder(a.state.args()[0], a.tile);
    for (Func g : {a.dot, a.tileMax, a.probs, a.tileSum, a.tileOut})
      g.compute_at(a.state, a.tile);
    unrollTileLoops(a);
    boundTileTemps(a, MemoryType::Stack);
    return;
  }
  // The states of the block's rows in shared memory, a thread per row,
  // stored rows innermost: the threads' accesses to one feature are
  // consecutive words, not a row (3 x headDim words) apart in one bank.
  std::vector<Var> sv = a.state.args(); // c, ii, it, h, ...
  a.state.compute_at(out, it)
      .reorder_storage(rowsInnermost(sv))
      .gpu_threads(sv[1]);
  a.state.update().reorder(sv[0], sv[1], a.tile).gpu_threads(sv[1]);
  // Per key tile, before the rows fold it: its keys and values, copied by
  // every thread of the block, a thread per feature (of every key), so a
  // warp reads a key's consecutive features at once.
  Func keys = a.keySource.in(a.dot), values = a.valueSource.in(a.tileOut);
  for (Func f : {keys, values}) {
    std::vector<Var> fv = f.args(); // c, j, batch...
    Var o("o"), t("t");
    f.compute_at(a.state, a.tile)
        .store_in(MemoryType::GPUShared)
        .split(fv[0], o, t, a.queryTile, TailStrategy::GuardWithIf)
        .reorder(t, o, fv[1])
        .gpu_threads(t);
  }
  // A row's part of the tile in the thread folding it.
  for (Func g : {a.queries, a.dot, a.tileMax, a.probs, a.tileSum, a.tileOut})
    g.compute_at(a.state, sv[1]);
  unrollTileLoops(a);
  boundTileTemps(a, MemoryType::Stack);
}

/// Flash decoding: the runs of key tiles of each (head, query row) in
/// blocks of their own, a thread per head dim, each run's state written to
/// global memory; then one block per (head, query row) merges the runs and
/// writes the outputs, a thread per head dim. Within a run's block, per key
/// tile: a thread per key takes its score (over the head dims) and its
/// probability, one thread the tile's max and sum, a thread per head dim
/// the tile's weighted values (reading each value row's features across the
/// threads) and the fold; the tile's temporaries in shared memory. One
/// block per (head, row) with a thread per run had 12 blocks for GPT-2 at
/// B = 1: 73% of a decode step at context 1000 on an H200, 15 GB/s.
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
  Var mc = a.merged.args()[0];
  a.merged.compute_at(out, h).gpu_threads(mc);
  a.merged.update().gpu_threads(mc);

  // state(c, ii, it, h, chunk, batch...): blocks over (head, run, the
  // query row's dims fused), threads over c.
  std::vector<Var> sv = a.state.args();
  Var sh = sv[3], chunk = sv[4];
  std::vector<Var> rowDims = {sv[1], sv[2]};
  rowDims.insert(rowDims.end(), sv.begin() + 5, sv.end());
  auto blocks = [&](Halide::Stage st, std::vector<VarOrRVar> inner) {
    std::vector<VarOrRVar> order = inner;
    order.push_back(sh);
    order.push_back(chunk);
    order.insert(order.end(), rowDims.begin(), rowDims.end());
    st.reorder(order);
    Var row = fuseOuter(st, rowDims, 0);
    st.gpu_blocks(sh, chunk, row).gpu_threads(sv[0]);
  };
  a.state.compute_root();
  blocks(a.state, {sv[0]});
  blocks(a.state.update(), {sv[0], a.tile});

  // Per key tile, in shared memory: a thread per key for the scores and
  // probabilities, one for the tile's max and sum, a thread per head dim
  // for the weighted values.
  Var e = a.queries.args()[1];
  a.queries.compute_at(a.state, sh).store_in(MemoryType::GPUShared);
  a.queries.gpu_threads(e);
  for (Func g : {a.dot, a.tileMax, a.probs, a.tileSum, a.tileOut})
    g.compute_at(a.state, a.tile);
  boundTileTemps(a, MemoryType::GPUShared);
  Var key = a.dot.args()[1], feature = a.tileOut.args()[0];
  a.dot.gpu_threads(key);
  a.dot.update().gpu_threads(key);
  a.probs.gpu_threads(key);
  if (a.probs.has_update_definition())
    a.probs.update().gpu_single_thread();
  a.tileOut.gpu_threads(feature);
  a.tileOut.update().gpu_threads(feature);
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

void scheduleGpu(KernelStages &s, const TargetDesc &target) {
  Warp warp(target);
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
                                  g, s.fewRows, warp);
                   },
                   [&](NormStage &n) { scheduleNorm(out, vars, n, warp); },
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
                   [](QuantDotStage &) {
                     // usesInt8Dot: never on a GPU (attnc refuses
                     // --precision=int8 there).
                     throw std::logic_error("int8 dot products on a GPU");
                   },
                   [](QuantGemmStage &) {
                     // i8 quads: packed for --precision=int8 only.
                     throw std::logic_error("an int8 GEMM on a GPU");
                   },
               },
               stage);
  }
  if (s.stages.empty())
    gpuThreadPerPoint(s.final, s.final.args());
}

int64_t attentionSharedBytes(int queryTile, int keyTile, int keyHeadDim,
                             int headDim) {
  return int64_t(sizeof(float)) * (int64_t(keyTile) * (keyHeadDim + headDim) +
                                   int64_t(queryTile) * 3 * headDim);
}

void scheduleGpuLayout(KernelStages &s) {
  gpuThreadPerPoint(s.final, s.final.args());
}

} // namespace attnc::schedules
