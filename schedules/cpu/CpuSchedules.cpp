//===- schedules/cpu/CpuSchedules.cpp - schedules for SIMD CPUs -----------===//
//
// Measured on the 2-core Sapphire Rapids CI machine (AVX-512), 1 thread,
// `attn-run --bench`: a 768 -> 3072 GEMM of 1024 rows runs at ~140 GFLOP/s
// (~70% of the 196 GFLOP/s sustained FMA peak); the GPT-2 block at 1x128
// went from 62 ms (previous 32 x 8 tiles over strided [in, out] weights) to
// ~19 ms; flash attention with per-head key/value copies takes GPT-2's
// attention at 1x4096 from 523 ms (strided keys) to 392 ms. bench/ has the
// full comparison with PyTorch, ONNX Runtime and OpenVINO
// (docs/performance.md).
//
//===----------------------------------------------------------------------===//
#include "schedules/cpu/CpuSchedules.h"
#include "schedules/cpu/QuantDotSchedule.h"
#include "schedules/cpu/QuantGemmSchedule.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

using namespace Halide;

namespace attnc::schedules {
namespace {

/// Static extent of the output features (var 0) of a stage's result.
int64_t stageFeatures(const Stage &stage) {
  return std::visit(
      Overloaded{
          [](const GemmStage &g) { return g.outFeatures; },
          [](const NormStage &n) { return n.features; },
          [](const AttentionStage &a) { return a.heads * a.headDim; },
          [](const AttentionWeightsStage &a) { return a.heads * a.headDim; },
          [](const CacheWriteStage &c) { return c.features; },
          [](const QuantDotStage &d) { return d.outFeatures; },
          [](const QuantGemmStage &d) { return d.outFeatures; },
      },
      stage);
}

/// The widest power-of-two vector, at most the target's natural width, that
/// fits in `extent` (so static feature dims never need a remainder loop).
int vectorWidth(int64_t extent, const Target &target) {
  int width = target.natural_vector_size<float>();
  while (width > 1 && width > extent)
    width /= 2;
  return width;
}

/// The largest power of two <= `limit` that divides `extent` (at least 1):
/// a vector width or unroll factor that needs no remainder loop.
int dividingFactor(int64_t extent, int limit) {
  int f = 1;
  while (2 * f <= limit && extent % (2 * f) == 0)
    f *= 2;
  return f;
}

/// The loop parallelOver makes of `rows` fused with the outer dim `outer`.
Var fusedLoop(const Var &outer, const Var &rows) {
  return Var(outer.name() + "_" + rows.name());
}

/// scheduleGemm's parallel tasks, before parallelOver fuses them with a
/// rank-3 output's batch into fusedLoop(v[2], kGemmTasks): a decode's
/// specialization that loops under that name computes the GEMM's producers
/// where the tasks of its other specialization do.
const Var kGemmTasks("task");

/// Fuses `rows` with the outer dims vars[2..] into one loop (fusedLoop's
/// names). Returns the fused var.
Var fuseOuter(Func f, Var rows, const std::vector<Var> &vars) {
  for (size_t d = 2; d < vars.size(); ++d) {
    Var fused = fusedLoop(vars[d], rows);
    f.fuse(rows, vars[d], fused);
    rows = fused;
  }
  return rows;
}

/// Fuses `rows` with the outer dims vars[2..] into one parallel loop, so
/// batch 1 still spreads over cores. Returns the fused var.
Var parallelOver(Func f, Var rows, const std::vector<Var> &vars) {
  rows = fuseOuter(f, rows, vars);
  f.parallel(rows);
  return rows;
}

/// An output computed row by row: vectorised over features, parallel rows.
/// A 1-D output (e.g. position ids) is one short row, left serial.
Var scheduleRows(Func f, const std::vector<Var> &vars, int width) {
  if (vars.size() < 2)
    return vars[0];
  Var rows = parallelOver(f, vars[1], vars);
  if (width > 1)
    f.vectorize(vars[0], width, TailStrategy::ShiftInwards);
  return rows;
}

/// Output features per GEMM tile: one packed weight panel
/// (TargetDesc::gemmPanelWidth), narrower for fewer features or for an
/// epilogue that folds several GEMM features into one output.
int panelTile(int64_t features, const GemmStage &g, const TargetDesc &target,
              int width) {
  // Features narrower than a panel get fewer vectors; their weights are
  // packed only as bf16 pairs (one padded panel).
  int nTile = target.gemmPanelWidth();
  while (nTile > width && nTile > features)
    nTile /= 2;
  // An epilogue that folds several GEMM features into one output (a gated
  // unit's glu: 2) gets output tiles that many times narrower, so the GEMM
  // tile it computes is still one panel and its partial sums fit in
  // registers. TinyLlama's MLP (D 2048, I 5632, B=1, 1 thread, the shared
  // 2-core AMD EPYC Zen 1 AVX2 machine): S=128 382 to 392 ms against 393 to
  // 395 ms for separate gate and up GEMMs (~22.5 GFLOP/s: the GEMMs bound
  // it; the gate's [S, I] is no longer stored: workspace 6.5 -> 3.8 MiB).
  if (g.outFeatures > features && g.outFeatures % features == 0)
    nTile = std::max<int64_t>(width, nTile / (g.outFeatures / features));
  return nTile;
}

/// Weights in panels whose last one is padded: every tile computes whole
/// panels (its loads stay aligned to the panels; past the last panel the
/// algorithm reads the last one again) and stores the outputs it has. A
/// tile shifted inwards would straddle two panels: gathers. GPT-2's tied
/// head (50257 outputs, read as [in, out] rows 201 KB apart before) went
/// from ~11 to ~14 GB/s at decode (B=1, 1 thread, AMD EPYC Zen 1).
bool paddedPanels(int64_t features, const GemmStage &g) {
  return g.paddedFeatures != g.outFeatures && features == g.outFeatures;
}

/// Output features per GEMV tile (one row at a time): 4 panels where they
/// fit, for 4x the independent partial sums per weight stream (8 AVX2
/// registers instead of 2, whose FMA latency bounded the loop). GPT-2
/// small's decode at 128 keys (B=1, 1 thread, Zen 1): 43.4 -> 36.2 ms.
int gemvTile(int64_t features, const GemmStage &g, const TargetDesc &target,
             int width) {
  int nTile = panelTile(features, g, target, width);
  if (features == g.outFeatures &&
      (paddedPanels(features, g) || features % (4 * nTile) == 0) &&
      features >= 4 * nTile)
    nTile *= 4;
  return nTile;
}

/// Reduction steps per chunk: a chunk's kChunk x panel weights (64 KiB of
/// f32 on AVX-512) stay in L1 while a task's row tiles run over it.
const int kChunk = 256;

/// The reduction steps a GEMM's chunks cut: its inputs, or with bf16 pairs
/// (GemmStage::bf16Pairs) the pairs, `k.y`, whose chunk of kChunk / 2 pairs
/// spans as many inputs; a chunk that divides them, so no dot product needs
/// a guard.
RVar stepsOf(const GemmStage &g) { return g.bf16Pairs ? g.k.y : g.k.x; }
int chunkOf(const GemmStage &g) {
  return g.bf16Pairs ? dividingFactor(g.inFeatures / 2, kChunk / 2) : kChunk;
}

/// Orders the loops of `update`, a GEMM's update, as `order` (innermost
/// first). With bf16 pairs the pair's input, `k.x`, goes innermost and is
/// vectorized (atomic: a sum) under the vector of outputs: each vector of
/// outputs takes one bf16 dot product (vdpbf16ps, 2 products per output)
/// per pair; where that is slower than two FMAs (TargetDesc::fastBf16Dot)
/// the pair is unrolled instead, each member widened to f32 (exact) and
/// multiplied in by an FMA.
void orderSteps(Halide::Stage update, const GemmStage &g,
                const std::vector<VarOrRVar> &order, const TargetDesc &target) {
  if (!g.bf16Pairs) {
    update.reorder(order);
    return;
  }
  std::vector<VarOrRVar> paired = {g.k.x};
  paired.insert(paired.end(), order.begin(), order.end());
  update.reorder(paired);
  if (target.fastBf16Dot())
    update.atomic().vectorize(g.k.x);
  else
    update.unroll(g.k.x);
}

/// The bf16 input of a GEMM of bf16 pairs, rounded once for all the
/// panels that read it, row by row in parallel.
void scheduleBf16Input(const GemmStage &g, int width) {
  if (!g.bf16Pairs)
    return;
  Func in = g.input;
  in.compute_root();
  scheduleRows(in, in.args(), std::min<int>(width, g.inFeatures));
}

/// 4-bit weights summed a group at a time (GemmStage::groupSums): per group
/// (the GEMM's loop `k`), the tile's sums of the group, its register block
/// (features by rows, unrolled), over the group's bytes; the GEMM then adds
/// each times its scale. GPT-2 small with 4-bit attention and MLP matrices
/// (groups of 32), context 128, 1 thread, the shared 2-core AMD EPYC (Zen 4,
/// AVX-512) under a load of ~6.5, the two libraries alternating: every
/// weight scaled as it loads (the GemmStage without groupSums) decode
/// 26.5 - 30.1 ms/token, prefill of 128 837 - 922 ms; by group 24.0 - 25.2
/// and 697 - 712 ms.
void scheduleGroupSums(Func gemm, RVar k, GemmStage &g, int width) {
  if (!g.groupSums.defined())
    return;
  Func sums = g.groupSums;
  std::vector<Var> pv = sums.args(); // feature, group, rows...
  sums.compute_at(gemm, k).vectorize(pv[0], width).unroll(pv[0]);
  std::vector<VarOrRVar> order = {pv[0]};
  for (size_t d = 2; d < pv.size(); ++d) {
    sums.unroll(pv[d]);
    order.push_back(pv[d]);
  }
  order.push_back(g.groupK.x);
  order.push_back(pv[1]);
  Halide::Stage update = sums.update();
  update.reorder(order).vectorize(pv[0], width).unroll(pv[0]);
  for (size_t d = 2; d < pv.size(); ++d)
    update.unroll(pv[d]);
}

/// The name Halide lowers the loop over `var` of `f`'s definition `stage`
/// (0 the pure one, then the updates) to: the Func, the stage and the var
/// qualified by the vars it was split from ("out.s0.x1.ro.rt").
std::string loopName(Func f, int stage, const std::string &var) {
  const Internal::Definition &def =
      stage == 0 ? f.function().definition() : f.function().update(stage - 1);
  for (const Internal::Dim &d : def.schedule().dims())
    if (d.var == var || Internal::ends_with(d.var, "." + var))
      return f.name() + ".s" + std::to_string(stage) + "." + d.var;
  throw std::logic_error("loopName: " + f.name() + " has no loop over " + var);
}

/// Whether a prefill's GEMM tile sums its whole reduction at once
/// (scheduleGemm): when its panel of weights, K x nTile, fits in three
/// quarters of L2 (TargetDesc::l2CacheBytes), where it stays while the
/// task's row tiles run over it and the inputs stream past. Counted at
/// f32's 4 bytes (2 for bf16 pairs): narrower weights are then over-counted,
/// never under. BERT's and GPT-2's GEMMs (K 768 and 3072) fit on every x86
/// target; a Llama's K of 5632 or 11008 does not on AVX-512 CPUs with 1 MiB.
bool sumsWhole(const GemmStage &g, int nTile, const TargetDesc &target) {
  int64_t bytes = g.inFeatures * nTile * (g.bf16Pairs ? 2 : 4);
  return bytes <= target.l2CacheBytes() * 3 / 4;
}

/// The parallel tasks of a GEMM whose tiles sum whole (sumsWhole), one per
/// (panel `no`, block of rows `rb`, outer dims v[2..]), panel-major: a
/// thread's tasks in a row mostly share their panel, which then comes from
/// memory once and from L2 after, where tasks of one block and every panel
/// read each panel from memory for every block and batch. `inner` are the
/// loops inside a task. BERT's layer at 1x512 and 8x128 (1 thread, Sapphire
/// Rapids, weights cold as in a block): 0.92 and 0.93 of the time of
/// block-major tasks.
Var panelMajorTasks(Func f, const std::vector<Var> &v, Var no,
                    const std::vector<Var> &inner, Var rb) {
  std::vector<VarOrRVar> order(inner.begin(), inner.end());
  order.push_back(rb);
  order.insert(order.end(), v.begin() + 2, v.end());
  order.push_back(no);
  f.reorder(order);
  Var blocks = fuseOuter(f, rb, v);
  Var tasks = fusedLoop(no, blocks);
  f.fuse(blocks, no, tasks).parallel(tasks);
  return tasks;
}

/// GEMM register blocks: each task owns one panel of features (nTile =
/// TargetDesc::gemmPanelWidth, the packed weight panel) and a block of
/// rows, and runs its register tiles (TargetDesc::gemmRowTile rows), whose
/// partial sums stay in registers (AVX-512: 4 x 6 = 24 of 32 zmm; AVX2: 2 x
/// 6 = 12 of 16 ymm). Where the panel fits in L2 (sumsWhole) each tile sums
/// all of K at once from the panel in L2, and the tasks run panel-major.
/// Otherwise GotoBLAS-style: the reduction is cut into chunks of kChunk; for
/// each chunk the task runs every tile of its block over the chunk, so the
/// chunk's weights stay in L1 and the block's rows of the chunk in L2, the
/// block's partial sums in a buffer of the task between chunks; the weights
/// then stream once per block, the inputs once per panel. Tiles span whole
/// row tiles past the last row (the algorithm clamps the input row), so
/// they need no guard. Returns the prefetch of the next panel that whole-sum
/// tiles of packed f32, half or i8 weights take (PanelPrefetch.h), for the
/// kernel's pipeline to add.
std::optional<PanelPrefetch> scheduleGemm(Func f, const std::vector<Var> &v,
                                          int64_t features, GemmStage &g,
                                          const TargetDesc &target, int width,
                                          int rowTile) {
  // Rows per block: the block's rows of one chunk fill about 256 KiB of L2
  // (whole sums keep the blocks: tasks for every thread at batch 1).
  const int64_t kBlockBytes = 256 * 1024;
  int nTile = rowTile == 1 ? gemvTile(features, g, target, width)
                           : panelTile(features, g, target, width);
  bool padded = paddedPanels(features, g);
  int64_t blockTiles =
      std::max<int64_t>(1, kBlockBytes / (4 * kChunk) / rowTile);
  Var no("no"), ni("ni"), ro("ro"), ri("ri"), rb("rb"), rt("rt"),
      task = kGemmTasks;
  f.split(v[0], no, ni, nTile,
          padded ? TailStrategy::GuardWithIf : TailStrategy::ShiftInwards)
      .split(v[1], ro, ri, rowTile, TailStrategy::GuardWithIf)
      .split(ro, rb, rt, int(blockTiles), TailStrategy::GuardWithIf);
  bool whole =
      rowTile > 1 && !g.amxGemm.defined() && sumsWhole(g, nTile, target);
  Var tasks;
  if (whole) {
    f.vectorize(ni, width);
    tasks = panelMajorTasks(f, v, no, {ni, ri, rt}, rb);
  } else {
    f.reorder(ni, ri, rt, no, rb).fuse(no, rb, task).vectorize(ni, width);
    tasks = parallelOver(f, task, v);
  }
  if (g.amxGemm.defined() && !g.amxWhen.defined()) {
    // The AMX micro-kernel sums the task's block (its rows of one panel),
    // the bias and epilogue added as the task stores it.
    g.amxGemm.compute_at(f, tasks);
    scheduleBf16Input(g, width);
    return std::nullopt;
  }
  // Whole sums: the GEMM per register tile, over all of K, then stored
  // through its epilogue while it is hot: no chunks whose partial sums go
  // out to the task's buffer and back, and no second pass copying that
  // buffer to the output. A linear alone (768 -> 3072 and 3072 -> 768, S
  // 128 and 512, 1 thread, Sapphire Rapids, AVX-512 and AVX2 code) took
  // 0.92-0.95 of the chunked schedule's time (docs/performance.md).
  // Chunks: the GEMM per task, over its block of rows.
  Func gemm = g.func;
  gemm.compute_at(f, whole ? rt : tasks)
      .align_bounds(v[1], rowTile)
      .vectorize(v[0], width);
  if (whole)
    gemm.bound_extent(v[1], rowTile);
  if (padded)
    gemm.align_bounds(v[0], nTile).bound_extent(v[0], nTile);
  Halide::Stage update = gemm.update();
  Var rows = v[1];
  RVar steps = stepsOf(g);
  if (whole) {
    orderSteps(update, g, {v[0], rows, steps}, target);
  } else {
    Var rto("rto");
    RVar ko("ko");
    rows = Var("rti");
    steps = RVar("ki");
    update.split(v[1], rto, rows, rowTile, TailStrategy::RoundUp)
        .split(stepsOf(g), ko, steps, chunkOf(g), TailStrategy::GuardWithIf);
    orderSteps(update, g, {v[0], rows, steps, rto, ko}, target);
  }
  update.vectorize(v[0], width).unroll(v[0]).unroll(rows);
  scheduleGroupSums(gemm, steps, g, width);
  scheduleBf16Input(g, width);
  // A whole-sum task's first tile reads its panel from memory: the tasks
  // before it prefetch it (PanelPrefetch.h).
  if (!whole || g.bf16Pairs || g.groupSums.defined() || g.panelWeights.empty())
    return std::nullopt;
  return PanelPrefetch{loopName(f, 0, rt.name()),
                       loopName(gemm, 1, stepsOf(g).name()), g.panelWeights};
}

/// A decode step's GEMM on AMX (GemmStage::amxGemm), where enough
/// sequences make it pay (GemmStage::amxWhen): each task one GEMV tile of
/// outputs for every sequence, the micro-kernel's tile rows being the
/// sequences, so each weight tile is loaded once per step for all of them.
/// Fewer sequences take the GEMVs (scheduleGemm), which read the weights
/// at the memory's pace: with the micro-kernel at B = 1 too, GPT-2 small's
/// step took 15.8-18.7 against 13.9-14.9 ms (2 threads, Sapphire Rapids).
/// At B = 8 and 32 the AMX steps take 0.47 and 0.40 of the GEMVs' and
/// tiles of sequences' time (docs/performance.md, "bf16 decode on AMX").
void scheduleAmxDecodeGemm(Func f, const std::vector<Var> &v, int64_t features,
                           GemmStage &g, const TargetDesc &target, int width) {
  int nTile = gemvTile(features, g, target, width);
  // The tiles of outputs loop under the name of scheduleGemm's tasks, so
  // each producer has its loop in both specializations (Halide skips the
  // one the select does not read).
  Var no("no"), ni("ni"), tasks = fusedLoop(v[2], kGemmTasks);
  f.specialize(g.amxWhen)
      .split(v[0], no, ni, nTile,
             paddedPanels(features, g) ? TailStrategy::GuardWithIf
                                       : TailStrategy::ShiftInwards)
      .reorder(ni, v[1], v[2], no)
      .rename(no, tasks)
      .vectorize(ni, width)
      .parallel(tasks);
  g.amxGemm.compute_at(f, tasks);
  scheduleGemm(f, v, features, g, target, width, 1);
}

/// B of a decode kernel whose output is [B, S, N]: the sequences its
/// GEMMs may tile. Undefined for other ranks.
Expr decodeBatch(const KernelStages &s) {
  if (s.final.dimensions() != 3)
    return Expr();
  return s.final.output_buffer().dim(2).extent();
}

/// A decode step's GEMM, [B, S, K] x [K, N] for B sequences of S new rows
/// (usually 1): with fewer sequences than a register tile's rows
/// (TargetDesc::gemmRowTile) the GEMVs of scheduleGemm, row by row; with
/// more, a specialization tiles the sequences as a prefill tiles its rows,
/// so each weight vector is loaded (and a bf16 or f16 one widened) once per
/// tile instead of once per row. Each task owns one panel and walks its tiles
/// of sequences, the last one shifted inwards (a few rows computed twice
/// rather than guarded: the tiles stay whole); the first tile reads the
/// panel's weights from memory, the others from L2. `batch` is B, the
/// output's outermost extent. bench/generate.py's small Llama (bf16), decode
/// steps, 2 threads, the shared 2-core AMD EPYC Zen 4 (AVX-512): B = 32 49.3
/// -> 22.5 ms (best of 5; its GEMMs 18-33 -> 58-71 GFLOP/s), B = 8 13.8 ->
/// 8.0 ms, B = 1 unchanged; guarded tiles instead of shifted ones measured
/// the same within the machine's noise.
void scheduleDecodeGemm(Func f, const std::vector<Var> &v, int64_t features,
                        GemmStage &g, const TargetDesc &target, int width,
                        Expr batch) {
  if (g.amxWhen.defined()) {
    scheduleAmxDecodeGemm(f, v, features, g, target, width);
    return;
  }
  int tile = target.gemmRowTile();
  if (batch.defined() && v.size() == 3 && tile > 1) {
    Expr many = batch >= tile;
    int panel = panelTile(features, g, target, width);
    // Over padded panels, scheduleGemm bounds the GEMM to whole GEMV tiles
    // in every specialization: the tiles of sequences span the same
    // features, guarded, and run their panels one after another (a tile's
    // partial sums are then one panel's, as unpadded). A head of 300
    // features at B >= 6 once failed here ("Bounds given for gemm ... do
    // not cover required region").
    bool padded = paddedPanels(features, g);
    int nTile = padded ? gemvTile(features, g, target, width) : panel;
    // The tiles of sequences loop under the name of scheduleGemm's tasks,
    // where the GEMM is computed in either case.
    Var no("no"), ni("ni"), bo = fusedLoop(v[2], kGemmTasks), bi("bi");
    f.specialize(many)
        .split(v[0], no, ni, nTile,
               padded ? TailStrategy::GuardWithIf : TailStrategy::ShiftInwards)
        .split(v[2], bo, bi, tile, TailStrategy::ShiftInwards)
        .reorder(ni, v[1], bi, bo, no)
        .vectorize(ni, width)
        .parallel(no);
    // A tile's rows a constant stride apart (S, between them, is dynamic),
    // so LLVM sees that their partial sums do not alias and keeps them in
    // registers across the reduction.
    g.func.reorder_storage(v[0], v[2], v[1]);
    RVar ko("ko"), ki("ki");
    Var po("po"), pi("pi");
    Halide::Stage update = g.func.update().specialize(many);
    update.split(stepsOf(g), ko, ki, chunkOf(g), TailStrategy::GuardWithIf);
    if (padded) {
      update.split(v[0], po, pi, panel, TailStrategy::GuardWithIf);
      orderSteps(update, g, {pi, v[2], ki, v[1], ko, po}, target);
      update.vectorize(pi, width).unroll(pi);
    } else {
      orderSteps(update, g, {v[0], v[2], ki, v[1], ko}, target);
      update.vectorize(v[0], width).unroll(v[0]);
    }
    update.unroll(v[2]);
  }
  scheduleGemm(f, v, features, g, target, width, 1);
}

/// Row statistics per parallel row; each reduction runs over `lanes` partial
/// results in one vector (rfactor) instead of a serial scalar chain.
void scheduleNorm(Func f, const std::vector<Var> &v, NormStage &n,
                  const Target &target, int width) {
  Var rows = scheduleRows(f, v, width);
  int lanes = dividingFactor(n.features, target.natural_vector_size<float>());
  for (Func sum : n.rowStats) {
    sum.compute_at(f, rows);
    if (lanes == 1)
      continue;
    RVar outer("outer"), lane("lane");
    Var u("u");
    Func partial =
        sum.update().split(n.k.x, outer, lane, lanes).rfactor(lane, u);
    partial.compute_at(f, rows).vectorize(u);
    partial.update().vectorize(u);
  }
}

/// A register block for the reduction `update` of `g`: vectors of `width`
/// along `vec` (unrolled over its whole extent) times `block` unrolled values
/// of `across`, with the reduction `r` inside the block's loop, so the block's
/// partial sums stay in registers while `r` runs.
void registerBlock(Func g, Var vec, int width, Var across, int block, RVar r) {
  Var outer(across.name() + "_o"), inner(across.name() + "_i");
  g.vectorize(vec, width);
  g.update()
      .split(across, outer, inner, block)
      .reorder(vec, inner, r, outer)
      .vectorize(vec, width)
      .unroll(vec)
      .unroll(inner);
}

/// A reduction `g.update()` over `r` of each row of a tile, `rowVectors`
/// vectors of `width` rows (args()[0]): split `r` across independent running
/// values (rfactor), computed at `at`, so the row vectors' chains of adds or
/// maxima hide the latency, then folded. A single running value per row
/// vector, kept in memory, was a chain of store, load and add per key: the
/// tile's max and sum took 9% of a long attention.
void rowReduce(Func g, RVar r, int width, int rowVectors, LoopLevel at) {
  g.vectorize(g.args()[0], width);
  // Enough chains to fill two vector pipes of 4-cycle latency; 4-lane SSE
  // or NEON's 8 row vectors are that many alone.
  const int chains = 8 / rowVectors;
  RVar folded = r;
  if (chains > 1) {
    RVar outer(r.name() + "_o");
    folded = RVar(r.name() + "_i");
    Var u(r.name() + "_u");
    Func partial = g.update().split(r, outer, folded, chains).rfactor(folded, u);
    Var row = partial.args()[0], ro(row.name() + "_o"), ri(row.name() + "_i");
    partial.compute_at(at).vectorize(row, width);
    partial.update()
        .split(row, ro, ri, width)
        .reorder(ri, ro, u, outer)
        .vectorize(ri)
        .unroll(ro)
        .unroll(u);
  }
  g.update().reorder(g.args()[0], folded).vectorize(g.args()[0], width);
}

/// The lanes vectorReduce splits off a reduction over `r`.
RVar laneOf(RVar r) { return RVar(r.name() + "_l"); }

/// vectorReduce's loop over its partial results' `order.front()` = `v`: the
/// outer part of its split where `unroll` > 1, else `v` itself.
Var unrolledLoopOf(Var v, int unroll) {
  return unroll > 1 ? Var(v.name() + "_o") : v;
}

/// A reduction `g.update()` over `r` folded `lanes` at a time into one vector
/// of partial results (rfactor), computed at `at`, then reduced across the
/// vector (atomic vectorize: a horizontal add or max), so the serial chain
/// is `r`'s extent / `lanes` long instead of `r`'s extent. The partial
/// results' loops run in `order` (innermost first) outside `r`, the first
/// unrolled by `unroll` for independent chains. Returns the partial
/// results' Func, undefined for one lane.
Func vectorReduce(Func g, RVar r, int lanes, LoopLevel at,
                  const std::vector<Var> &order, int unroll) {
  if (lanes == 1)
    return Func();
  RVar outer(r.name() + "_o"), lane = laneOf(r);
  Var u(r.name() + "_u");
  Func partial = g.update().split(r, outer, lane, lanes).rfactor(lane, u);
  // rfactor appends u; its vectors are contiguous with u innermost.
  std::vector<Var> storage = {u};
  for (const Var &x : partial.args())
    if (x.name() != u.name())
      storage.push_back(x);
  partial.reorder_storage(storage).compute_at(at).vectorize(u);
  std::vector<VarOrRVar> loops = {u, outer};
  loops.insert(loops.end(), order.begin(), order.end());
  partial.update().reorder(loops).vectorize(u).unroll(outer);
  if (unroll > 1) {
    Var io = unrolledLoopOf(order.front(), unroll),
        ii(order.front().name() + "_i");
    partial.update().split(order.front(), io, ii, unroll).unroll(ii);
  }
  g.update().atomic().vectorize(lane);
  return partial;
}

/// A decode's scores, dot(ii, jj, kt, it, h): per key, per head, the head
/// dims in vectors of partial sums (`lanes` of them, heads unrolled by
/// `headUnroll` for independent chains), each key's row read whole, in
/// order; then `block` keys of one head reduced at once, their block x
/// lanes partial sums (contiguous) to one vector of scores by pairwise
/// shuffles and adds, where one horizontal reduction per key and head was
/// a chain of `lanes` scalar adds. The partial sums of a block (block x
/// lanes x heads floats, 3 KiB for GPT-2) are computed at the block's loop
/// and stay in L1. Returns the loops that read a key's row, outermost
/// first (RowPrefetch::loops); none for one lane.
std::vector<std::string> scheduleDecodeScores(AttentionStage &a, int lanes,
                                              int block, int headUnroll) {
  std::vector<Var> dv = a.dot.args();
  Var jo(dv[1].name() + "_o"), ji(dv[1].name() + "_i");
  Func partial = vectorReduce(a.dot, a.headDims.x, lanes, LoopLevel(a.dot, jo),
                              {dv[4], dv[1]}, headUnroll);
  if (!partial.defined())
    return {};
  a.dot.vectorize(dv[1], block);
  a.dot.update()
      .split(dv[1], jo, ji, block)
      .reorder(laneOf(a.headDims.x), ji, dv[4], jo)
      .vectorize(ji);
  // The partial sums' loop over keys, then over heads.
  return {loopName(partial, 1, dv[1].name()),
          loopName(partial, 1, unrolledLoopOf(dv[4], headUnroll).name())};
}

/// Float lanes of a decode attention's vectors: at most 8 (256 bits), even
/// where AVX-512 has 16. Its loops stream the KV cache from memory, and with
/// 512-bit vectors they read it more slowly: GPT-2 small's 12 decode
/// attentions at context 4096 (B=1, 1 thread, the shared 2-core AMD EPYC
/// Zen 4, CPU time, in turns) took 13.98 against 12.55 ms with an f32
/// cache and 10.05 against 8.04 ms with an f16 one (16 lanes against 8);
/// a loop converting f16 rows alone ran likewise faster as two 256-bit
/// vcvtph2ps than as one 512-bit one. Not measured on Intel's AVX-512.
int decodeAttentionLanes(const Target &target) {
  return std::min(target.natural_vector_size<float>(), 8);
}

/// Attention of a decode step: a few queries over a KV cache, each alone,
/// and its key tiles cut into runs (TargetDesc::attentionKeyChunks), one task
/// each. A run's state covers all heads, and each of its key tiles is
/// visited once for all of them: the tile's rows are read where they lie in
/// the cache, whole rows one after another, so the cache streams through in
/// order. GPT-2 small's 12 attention layers (B=1, 1 thread, AMD EPYC Zen 1,
/// AVX2), ms per 1000 keys: a task per head (256-byte pieces of rows 3 KiB
/// apart) ~12, a task per 6 heads ~10, all heads in one task ~7.3, 8 runs
/// of all heads ~6.2, where reading the caches takes ~5.5 (numpy at 13
/// GB/s). Within a tile, both passes over the cache read its rows whole,
/// key after key: the scores (scheduleDecodeScores) and the values, each
/// key's row into every head's accumulators; the tile's maximum and sum
/// reduce its keys in vectors. The same model at context 4096 on the
/// shared 2-core AMD EPYC Zen 4 (CPU time, in turns): the scores reduced
/// key by key and the values read head by head (256-byte pieces of 64 rows)
/// took 23.0 ms with an f32 cache and 16.8 ms with an f16 one; this
/// schedule 12.7 and 7.9 ms (24 and 19 GB/s of cache; docs/performance.md,
/// "Decode attention at the memory's pace"). Both passes' loops prefetch
/// the cache rows ahead (RowPrefetch.h): the returned prefetches.
std::vector<RowPrefetch> scheduleDecodeAttention(Func f,
                                                 const std::vector<Var> &v,
                                                 AttentionStage &a,
                                                 const Target &target) {
  int natural = decodeAttentionLanes(target);
  int headWidth = dividingFactor(a.headDim, natural);
  Var h("h"), c("c");
  f.split(v[0], h, c, a.headDim).reorder(c, h, v[1]).vectorize(c, headWidth);
  // Per query row, so each computes the states of one row (a loop fused
  // with the batch would leave their extent to run time); the batch's
  // sequences in parallel, each's runs too (nested). GPT-2 small, B = 32 at
  // 64-127 keys each, 2 threads, Zen 4: the 12 attentions of a step 15.5
  // -> 12.0-13.4 ms; B = 1 at 1000 keys unchanged (2.7-3.5 ms both).
  Var rows = v[1];
  if (v.size() > 2)
    f.parallel(v.back());
  if (a.keyLengths.defined())
    a.keyLengths.compute_root();
  a.queries.compute_at(f, rows);

  // merged(c, ii, it, h): the runs folded together, per query row.
  std::vector<Var> mv = a.merged.args();
  a.merged.compute_at(f, rows).vectorize(mv[0], headWidth);
  a.merged.update()
      .reorder(mv[0], mv[1], mv[2], mv[3], a.runs.x)
      .vectorize(mv[0], headWidth);
  // state(c, ii, it, h, chunk): one task per run, all heads inside its
  // loop over tiles (the query row outside it, so the tiles the row sees
  // bound that loop, not the row's loop inside it).
  std::vector<Var> sv = a.state.args();
  RVar tile = a.tile;
  a.state.compute_at(f, rows).vectorize(sv[0], headWidth);
  a.state.update()
      .reorder(sv[0], sv[1], sv[3], tile, sv[2], sv[4])
      .vectorize(sv[0], headWidth)
      .parallel(sv[4]);
  for (Func g : {a.dot, a.tileMax, a.probs, a.tileSum, a.tileOut})
    g.compute_at(a.state, tile);

  int headUnroll = dividingFactor(a.heads, 8);
  std::vector<std::string> keyLoops =
      scheduleDecodeScores(a, dividingFactor(a.keyHeadDim, natural),
                           dividingFactor(a.keyTile, natural), headUnroll);
  // tileMax, tileSum(ii, kt, it, h): over the tile's keys.
  for (Func g : {a.tileMax, a.tileSum})
    vectorReduce(g, a.keys.x, dividingFactor(a.keyTile, natural),
                 LoopLevel(a.state, tile), {g.args()[3]}, headUnroll);
  Var pj = a.probs.args()[1];
  a.probs.vectorize(pj, natural);
  if (a.probs.has_update_definition())
    a.probs.update().vectorize(a.keys.x, natural);
  // tileOut(c, ii, kt, it, h): per key, every head's headDim accumulators
  // (in L1), so the tile's value rows are read whole, in order.
  std::vector<Var> ov = a.tileOut.args();
  a.tileOut.vectorize(ov[0], headWidth);
  a.tileOut.update()
      .reorder(ov[0], ov[4], a.keys.x)
      .vectorize(ov[0], headWidth)
      .unroll(ov[0]);
  std::vector<RowPrefetch> prefetches;
  if (!a.keyBuffer.empty() && !keyLoops.empty())
    prefetches.push_back({keyLoops, a.keyBuffer});
  if (!a.valueBuffer.empty())
    prefetches.push_back({{loopName(a.tileOut, 1, a.keys.x.name()),
                           loopName(a.tileOut, 1, ov[4].name())},
                          a.valueBuffer});
  return prefetches;
}

/// The prefill attention's products in vectors: the task's keys and values
/// copied whole, then per key tile its scores (`dot`) and weighted values
/// (`tileOut`) in register blocks.
void scheduleVectorProducts(Func f, const std::vector<Var> &v, Var tasks,
                            AttentionStage &a, RVar tile,
                            const TargetDesc &desc) {
  const Target &target = desc.halide();
  int natural = target.natural_vector_size<float>();
  int accumulators = desc.vectorRegisters() / 2;
  const int tq = a.queryTile;
  int rowWidth = std::min(natural, tq);
  Func keys = a.keySource.in(a.dot), values = a.valueSource.in(a.tileOut);
  keys.compute_at(f, tasks).vectorize(v[0],
                                      dividingFactor(a.keyHeadDim, natural));
  values.compute_at(f, tasks).vectorize(v[0],
                                        dividingFactor(a.headDim, natural));
  for (Func g : {a.dot, a.tileOut})
    g.compute_at(a.state, tile);
  int keyBlock =
      dividingFactor(a.keyTile, std::max(1, accumulators / (tq / rowWidth)));
  registerBlock(a.dot, a.dot.args()[0], rowWidth, a.dot.args()[1], keyBlock,
                a.headDims.x);
  std::vector<Var> ov = a.tileOut.args(); // c, ii, ...
  a.tileOut.reorder_storage(rowsInnermost(ov));
  int featureBlock =
      dividingFactor(a.headDim, std::max(1, accumulators / (tq / rowWidth)));
  registerBlock(a.tileOut, ov[1], rowWidth, ov[0], featureBlock, a.keys.x);
}

/// The prefill attention's products on AMX tiles (AttentionAmx): the task's
/// keys and transposed values rounded to bf16 once, the query tile's pairs
/// once per query tile, and per key tile (`tile`) the scores and the
/// weighted values. `dot` and `tileOut` stay inlined: they only read the
/// externs' results. The externs' bounds queries are opaque to Halide, so
/// their inputs' tile extents are stated.
void scheduleAmxProducts(Func f, Var tasks, Var it, AttentionStage &a,
                         LoopLevel tile, int natural) {
  AttentionAmx &amx = *a.amx;
  std::vector<Var> k = amx.keyRows.args(); // e, key, ...
  amx.keyRows.compute_at(f, tasks)
      .bound(k[0], 0, a.keyHeadDim)
      .vectorize(k[0], natural);
  std::vector<Var> w = amx.valueCopy.args(); // c, key, ...
  amx.valueCopy.compute_at(f, tasks)
      .bound(w[0], 0, a.headDim)
      .vectorize(w[0], dividingFactor(a.headDim, natural));
  amx.valueRows.compute_at(f, tasks);
  // Pairs (t, ii, half of the head dims, ...).
  std::vector<Var> p = amx.queryPairs.args();
  amx.queryPairs.compute_at(f, it)
      .bound(p[0], 0, 2)
      .bound(p[1], 0, a.queryTile)
      .bound(p[2], 0, a.keyHeadDim / 2)
      .vectorize(p[0])
      .vectorize(p[1], natural);
  std::vector<Var> q = a.probs.args(); // ii, jj, ...
  a.probs.bound(q[0], 0, a.queryTile).bound(q[1], 0, a.keyTile);
  for (Func g : {amx.scores, amx.values})
    g.compute_at(tile).store_in(MemoryType::Stack);
}

/// Flash attention: one task per (head, batch), which first copies its head's
/// keys and values into contiguous S x headDim blocks (in the projection's
/// output they are 256-byte pieces of rows thousands of bytes apart: a TLB
/// miss per key), then walks the query tiles. For each key tile it computes
/// the tile's scores, maxima, exponentials, sums and output in L1-sized
/// buffers and folds them into the query tile's running state (its slots,
/// AttentionStage::stateSlots: vectors over query rows, slots unrolled).
/// The two products: scheduleVectorProducts's register blocks, or
/// scheduleAmxProducts's externs. Returns a decode's prefetches of its cache
/// rows (scheduleDecodeAttention).
std::vector<RowPrefetch> scheduleAttention(Func f, const std::vector<Var> &v,
                                           AttentionStage &a,
                                           const TargetDesc &desc) {
  const Target &target = desc.halide();
  const int tq = a.queryTile;
  if (tq == 1)
    return scheduleDecodeAttention(f, v, a, target);
  int natural = target.natural_vector_size<float>();
  int accumulators = desc.vectorRegisters() / 2;
  int rowWidth = std::min(natural, tq);
  int headWidth = dividingFactor(a.headDim, natural);

  Var h("h"), c("c"), it("it"), ii("ii");
  f.split(v[0], h, c, a.headDim)
      .split(v[1], it, ii, tq, TailStrategy::GuardWithIf)
      .reorder(c, ii, it, h)
      .vectorize(c, headWidth);
  // Parallel over heads (and batch); query tiles run in order inside.
  Var tasks = parallelOver(f, h, v);
  if (a.keyLengths.defined())
    a.keyLengths.compute_root();
  a.queries.compute_at(f, it);
  if (!a.stateSlots)
    throw std::logic_error("a CPU prefill without state slots");
  RVar tile = a.tile, slot = a.tiles.x;
  std::vector<Var> sv = a.state.args(); // slot, ii, it, h, ...
  a.state.compute_at(f, it)
      .reorder_storage(rowsInnermost(sv))
      .vectorize(sv[1], rowWidth);
  a.state.update()
      .reorder(sv[1], slot, tile)
      .vectorize(sv[1], rowWidth)
      .unroll(slot);

  // Everything per key tile is computed at the state's loop over tiles.
  for (Func g : {a.tileMax, a.probs, a.tileSum})
    g.compute_at(a.state, tile);
  a.queries.vectorize(a.queries.args()[0], rowWidth);
  if (a.amx)
    scheduleAmxProducts(f, tasks, it, a, LoopLevel(a.state, tile), natural);
  else
    scheduleVectorProducts(f, v, tasks, a, tile, desc);
  for (Func g : {a.tileMax, a.tileSum})
    rowReduce(g, a.keys.x, rowWidth, tq / rowWidth, LoopLevel(a.state, tile));
  // A constant 8 KiB that Halide put on the heap: a malloc per key tile.
  a.probs.vectorize(a.probs.args()[0], rowWidth).store_in(MemoryType::Stack);
  if (a.probs.has_update_definition())
    a.probs.update().vectorize(a.probs.args()[0], rowWidth);
  // The task copied its keys and values whole: nothing streams.
  return {};
}

/// Attention with its probabilities: the scores, row statistics and
/// probabilities of one (head, batch) at a time, vectorised over keys; then
/// the weighted values row by row. Only models that ask for the weights take
/// this path, so it is kept simple.
void scheduleAttentionWeights(Func f, const std::vector<Var> &v,
                              AttentionWeightsStage &a, const Target &target) {
  int width = target.natural_vector_size<float>();
  if (a.keyLengths.defined())
    a.keyLengths.compute_root();
  const std::vector<Var> &w = a.weights.args();
  Var heads = w[2];
  for (size_t d = 3; d < w.size(); ++d) {
    Var fused(w[d].name() + "_" + heads.name());
    a.weights.fuse(heads, w[d], fused);
    heads = fused;
  }
  a.weights.compute_root().parallel(heads).vectorize(w[0], width,
                                                     TailStrategy::GuardWithIf);
  a.scores.compute_at(a.weights, heads)
      .vectorize(a.scores.args()[0], width, TailStrategy::GuardWithIf);
  a.scores.update().vectorize(a.scores.args()[0], width,
                              TailStrategy::GuardWithIf);
  a.rowMax.compute_at(a.weights, heads);
  a.rowSum.compute_at(a.weights, heads);
  // The weighted values row by row; `f` is whichever output (the attention
  // or the weights) the kernel yields last, so it is only copied.
  int features = vectorWidth(a.heads * a.headDim, target);
  std::vector<Var> r = a.result.args();
  a.result.compute_root().vectorize(r[0], features);
  a.result.update().parallel(r[1]).vectorize(r[0], features);
  parallelOver(f, v[1], v);
  f.vectorize(v[0], width, TailStrategy::GuardWithIf);
}

} // namespace

/// A few new rows of a cache: the checked position once, each row's
/// features in vectors (the rows are too few to spread over threads).
void scheduleCacheWrite(CacheWriteStage &c, int width) {
  c.position.compute_root();
  // An i8 cache's scales: once per group of each new row, not per feature.
  if (c.scales.defined())
    c.scales.compute_root();
  if (width > 1)
    c.result.update().vectorize(c.rows.x, width);
}

void scheduleHand(KernelStages &s, const TargetDesc &desc) {
  const Target &target = desc.halide();
  // Intermediates that other kernels also read are stored whole.
  for (Func f : s.outputs)
    if (f.name() != s.final.name())
      f.compute_root();
  // Rotary cos/sin tables: S x head_dim / 2 pairs once instead of once per
  // element each query head reads (with 4 query heads per key head the
  // keys' rotations were recomputed 4 times). Measured on the shared 2-core
  // AVX-512 machine, 1 thread, B=1 S=1024, 8 heads over 2 of 64: the
  // attention kernel took ~109 ms with the rotations inlined, ~93 ms with
  // the tables, against ~81 ms without rotary embeddings.
  for (Func t : s.tables)
    t.compute_root();
  for (size_t i = 0; i < s.stages.size(); ++i) {
    // The last anchor computes the kernel's output through its inlined
    // epilogues; an earlier one is computed whole first, by the same schedule
    // applied to a wrapper of its result.
    bool last = i + 1 == s.stages.size();
    Func out = last ? s.final : stageResult(s.stages[i]).in();
    int64_t features = last ? s.features : stageFeatures(s.stages[i]);
    if (!last)
      out.compute_root();
    // The output's own dims (the kernel's vars may be more: a rank-4 input).
    std::vector<Var> vars = out.args();
    int width = vectorWidth(features, target);
    std::visit(
        Overloaded{
            [&](GemmStage &g) {
              if (s.fewRows)
                scheduleDecodeGemm(out, vars, features, g, desc, width,
                                   last ? decodeBatch(s) : Expr());
              else if (std::optional<PanelPrefetch> p = scheduleGemm(
                           out, vars, features, g, desc, width,
                           g.amxGemm.defined() ? AmxTile::rows
                                               : desc.gemmRowTile()))
                s.prefetches.push_back(*p);
            },
            [&](NormStage &n) { scheduleNorm(out, vars, n, target, width); },
            [&](AttentionStage &a) {
              for (RowPrefetch &p : scheduleAttention(out, vars, a, desc))
                s.rowPrefetches.push_back(std::move(p));
            },
            [&](AttentionWeightsStage &a) {
              scheduleAttentionWeights(out, vars, a, target);
            },
            [&](CacheWriteStage &c) { scheduleCacheWrite(c, width); },
            [&](QuantDotStage &d) { scheduleQuantDot(out, vars, d, width); },
            [&](QuantGemmStage &d) {
              scheduleQuantGemm(out, vars, d, desc, features, width, s.fewRows);
            },
        },
        s.stages[i]);
  }
  if (s.stages.empty())
    scheduleRows(s.final, s.final.args(), vectorWidth(s.features, target));
}

void scheduleLayout(KernelStages &s, const TargetDesc &target) {
  Func f = s.final;
  std::vector<Var> v = f.args();
  int width = vectorWidth(s.features, target.halide());
  if (v.size() == 2) {
    // 64 x 64 floats: the tile's source lines (64 rows x 4 lines) stay in L1.
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
    f.tile(v[0], v[1], xo, yo, xi, yi, 64, 64, TailStrategy::GuardWithIf)
        .vectorize(xi, width)
        .parallel(yo);
    return;
  }
  if (width > 1)
    f.vectorize(v[0], width, TailStrategy::ShiftInwards);
  if (v.size() > 2)
    f.parallel(v.back());
}

void scheduleNaive(KernelStages &s) {
  for (Func t : s.tables)
    t.compute_root();
  for (Stage &stage : s.stages)
    std::visit(Overloaded{
                   [](GemmStage &g) {
                     g.func.compute_root();
                     if (g.groupSums.defined())
                       g.groupSums.compute_root();
                   },
                   [](NormStage &n) {
                     for (Func stat : n.rowStats)
                       stat.compute_root();
                   },
                   [](AttentionStage &a) {
                     for (Func f : {a.queries, a.dot, a.tileMax, a.probs,
                                    a.tileSum, a.tileOut, a.state})
                       f.compute_root();
                     if (a.merged.defined())
                       a.merged.compute_root();
                     if (a.keyLengths.defined())
                       a.keyLengths.compute_root();
                   },
                   [](AttentionWeightsStage &a) {
                     for (Func f : {a.scores, a.rowMax, a.rowSum, a.weights})
                       f.compute_root();
                     if (a.keyLengths.defined())
                       a.keyLengths.compute_root();
                   },
                   [](CacheWriteStage &c) {
                     c.position.compute_root();
                     if (c.scales.defined())
                       c.scales.compute_root();
                   },
                   [](QuantDotStage &d) { scheduleQuantDotNaive(d); },
                   [](QuantGemmStage &d) { scheduleQuantGemmNaive(d); },
               },
               stage);
}

} // namespace attnc::schedules
