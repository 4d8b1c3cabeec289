//===- schedules/KernelStages.h - what a schedule gets to place -*- C++ -*-===//
//
// The Funcs of one kernel's Halide algorithm, named by role, so schedules can
// place them without knowing how the algorithm was built. Codegen fills this
// in (algorithm only); schedules/ reads it (scheduling only).
//
// Halide dims run innermost first: for a [B, S, D] tensor, var 0 is the
// feature, var 1 the sequence position, var 2 the batch.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SCHEDULES_KERNELSTAGES_H
#define ATTNC_SCHEDULES_KERNELSTAGES_H

#include "Halide.h"

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace attnc::schedules {

/// A projection `out(n, rows...) = bias(n) + sum_k in(k, rows...) * w(n, k)`.
struct GemmStage {
  Halide::Func func;
  Halide::RDom k;
  int64_t inFeatures, outFeatures;
  /// Outputs `func` may be computed for: outFeatures, or that rounded up
  /// to whole weight panels when the last one is padded with zeros (a
  /// schedule then computes whole panels and stores the real outputs).
  int64_t paddedFeatures;
  /// The operands as `func` reads them: input(k, rows...) (rows clamped to
  /// the last) and weight(n, k); inlined unless a schedule places them.
  Halide::Func input, weight;
  /// 4-bit weights reduced a group at a time (TargetDesc::reducesWeightGroups):
  /// groupSums(n, g, rows...) sums input * (q - 8) over the group's inputs,
  /// pairs of them (a byte) per step of `groupK`, and `k` runs over the
  /// groups, `func` adding each group's sum times its scale. Undefined
  /// otherwise; a schedule places it inside `func`'s loop over `k`.
  Halide::Func groupSums;
  Halide::RDom groupK;
  /// bf16 pairs of inputs (attnc --precision=bf16): `input` is bf16,
  /// `weight(n, t, q)` reads input 2q + t of output n, and `k` is 2-D: `k.x`
  /// the pair's input t, `k.y` the pair q. A schedule that vectorizes `k.x`
  /// under a vector of outputs (atomic: a sum) makes each pair's products
  /// one bf16 dot product in f32 (vdpbf16ps).
  bool bf16Pairs = false;
  /// AMX (TargetDesc::usesAmxTiles, bf16 pairs): amxGemm(n, rows...) is an
  /// extern stage, the AMX micro-kernel (compiler/driver/glue/amx.c),
  /// summing from zero `input` times the packed weights, which it reads as
  /// stored. In a prefill `func` adds the bias to it, and `k` and `weight`
  /// are undefined; a schedule computes amxGemm at the region a task of
  /// `func` needs. In a decode step `func` is the GEMV form as without
  /// AMX, and the op's result takes amxGemm (plus the bias) where
  /// `amxWhen` holds (enough sequences), `func` elsewhere: a schedule
  /// specializes on `amxWhen`. Undefined otherwise.
  Halide::Func amxGemm;
  Halide::Expr amxWhen;
  /// The kernel input `weight` reads as packed panels [out / p, in, p]
  /// (Halide's dim 2 the panel), by name: a prefill schedule prefetches
  /// the next panel from it. Empty for other layouts and bf16 pairs.
  std::string panelWeights;
};

/// A projection of int8 activations and i8 or 4-bit weights
/// (Precision::Int8, lowerings/Int8Linear.cpp), the weights [out, in] (a
/// row of bytes per output n), per row of the input:
///   activations         Funcs of the row's quantization (block scales,
///                       int8 values, each lane's scale and correction),
///                       defined over (index, rows...)
///   dots(l, n, c, rows) lane l of chunk c: an i32 sum of 4 bytes' integer
///                       products per update (4 inputs of an i8 row, 8 of a
///                       4-bit one in two updates), over `quads`
///   lanes(l, n, rows)   f32: each chunk's dots times its lane's scale,
///                       summed over `chunks`
///   result(n, rows)     the lanes summed, over `lanes` (before the
///                       epilogue: an i8 matrix's output scale, the bias)
struct QuantDotStage {
  Halide::Func result, laneSums, dots;
  std::vector<Halide::Func> activations;
  Halide::RDom lanes, chunks, quads;
  int64_t inFeatures, outFeatures;
  /// TargetDesc::int8DotLanes, which the algorithm is built with.
  int dotLanes;
};

/// A GEMM of int8 activations and an i8 matrix packed into quads of inputs
/// (Precision::Int8, lowerings/Int8Gemm.cpp), lanes over the outputs n:
///   activations          Funcs of the rows' quantization (block scales and
///                        factors, int8 values, block corrections), over
///                        (index, rows...)
///   dots(n, b, rows)     i32: block b's integer products, over `quads`
///                        (quads.x: the 4 inputs of a quad, summed by one
///                        lane of an int8 dot product; quads.y: the quads)
///   result(n, rows)      f32: each block's dots times its factor, over
///                        `blocks` (before the output scale and the bias)
/// Rows are read as they are (not clamped): a tile of rows must lie within
/// them.
struct QuantGemmStage {
  Halide::Func result, dots;
  std::vector<Halide::Func> activations;
  Halide::RDom blocks, quads;
  int64_t inFeatures, outFeatures;
  /// Outputs the packed panels hold (outFeatures rounded up to whole ones).
  int64_t paddedFeatures;
  /// The extents of the rows' dims (vars 1...), which decide whether a
  /// tile of rows fits.
  std::vector<Halide::Expr> rowExtents;
};

/// An op computed row by row from statistics of each row (a layer norm's
/// sum and centred sum of squares, a softmax's maximum and sum of
/// exponentials), each reduced over `k` (the `features` of a row) in order.
struct NormStage {
  Halide::Func result;
  std::vector<Halide::Func> rowStats;
  Halide::RDom k;
  int64_t features;
};

/// A CPU prefill attention's two products on AMX tiles (--precision=bf16,
/// TargetDesc::hasAmx; lowerings/Attention.cpp): each key tile's scores and
/// weighted values are extern stages of compiler/driver/glue/amx.c, which
/// read bf16 operands laid out for the tiles.
struct AttentionAmx {
  /// Per (head, batch): keyRows(e, key, h, ...) the keys, bf16;
  /// valueCopy(c, key, h, ...) the values, f32, and valueRows(key, c, h,
  /// ...) them transposed and rounded to bf16 (an extern).
  Halide::Func keyRows, valueCopy, valueRows;
  /// Per query tile: queryPairs(t, ii, q, it, h, ...) its scaled queries,
  /// bf16 pairs of head dims 2q + t.
  Halide::Func queryPairs;
  /// Per key tile: scores(ii, jj, kt, it, h, ...); values(ii, c, kt, it, h,
  /// ...) the weighted values, from the probabilities (rounded in the
  /// extern).
  Halide::Func scores, values;
};

/// Flash attention (see lowerings/Attention.cpp), per query tile `it` of
/// `queryTile` rows `ii`, head `h` and key tile `kt` of `keyTile` keys `jj`:
///   keySource, valueSource(c, j, batch...)  K and V, all heads
///                                           (c = h * headDim + e)
///   queries(ii, e, it, h, batch...)      the query tile, rows innermost
///   dot(ii, jj, kt, it, h, batch...)     scores, reduced over `headDims`
///   tileMax, tileSum(ii, kt, it, h, ...) per key tile, reduced over `keys`
///   probs(ii, jj, kt, it, h, ...)        exp(score - tileMax), 0 if masked
///   tileOut(c, ii, kt, it, h, ...)       probs x values, reduced over `keys`
///   state(c, ii, it, h, ...)             Tuple (max, sum, output), updated
///                                        over key tiles `tiles` in order
/// With `stateSlots` (TargetDesc::attentionStateSlots) the state is one
/// Func of slots instead, updated over `tiles` (x the slot, y the key tile):
///   state(s, ii, it, h, ...)             s = 0, 1: the tile's factors for
///                                        the running values and its own;
///                                        2, 3: the running max and sum;
///                                        4 + c: the running output
/// A decode cuts the key tiles into `keyChunks` runs of consecutive tiles:
///   state(c, ii, it, h, chunk, ...)      one state per run, over the run's
///                                        `tiles`
///   merged(c, ii, it, h, ...)            the runs' states folded together,
///                                        over `runs` in order
struct AttentionStage {
  /// The joined heads, [.., S, heads * headDim].
  Halide::Func result;
  Halide::Func keySource, valueSource;
  Halide::Func queries, dot, tileMax, probs, tileSum, tileOut, state;
  /// The runs' states merged; undefined with one run.
  Halide::Func merged;
  /// The key lengths per batch entry, checked; undefined without them.
  Halide::Func keyLengths;
  Halide::RDom tiles;
  /// The loop over key tiles: tiles.x, or tiles.y with `stateSlots`.
  Halide::RVar tile;
  Halide::RDom keys, headDims, runs;
  int64_t heads;
  /// Features per value head (and so per output head).
  int headDim;
  /// Features per key (and query) head: the head dim of the scores.
  int keyHeadDim;
  /// TargetDesc::attentionQueryTile, attentionKeyTile and
  /// attentionKeyChunks of this attention: the algorithm is built with
  /// them, so a schedule reads them here.
  int queryTile, keyTile, keyChunks;
  bool stateSlots;
  /// The products on AMX tiles; nullopt for vectors. `dot` and `tileOut`
  /// then read its externs' results.
  std::optional<AttentionAmx> amx;
  /// The names of the key and value buffers as stored, where they are the
  /// kernel's inputs (a KV cache); empty otherwise.
  std::string keyBuffer, valueBuffer;
};

/// An attention Func's dims (c or slot, ii, ...) in storage order with the
/// query rows innermost, as the CPU prefill's and the GPU's states and the
/// CPU's tile outputs are stored: vectors or threads over rows then touch
/// consecutive words.
inline std::vector<Halide::Var> rowsInnermost(std::vector<Halide::Var> dims) {
  std::swap(dims[0], dims[1]);
  return dims;
}

/// Attention that also returns its probabilities (explicit softmax), per
/// key j, query i, head h:
///   scores(j, i, h, batch...)        reduced over the head dims
///   rowMax, rowSum(i, h, batch...)   reduced over `keys`
///   weights(j, i, h, batch...)       the probabilities (an output)
///   result(c, i, batch...)           weights x values, reduced over `keys`
struct AttentionWeightsStage {
  Halide::Func result, scores, rowMax, rowSum, weights;
  Halide::Func keyLengths;
  Halide::RDom keys;
  int64_t heads;
  int headDim;
};

/// New rows written into a KV cache in place (lowerings/Cache.cpp):
///   position()              the checked row of the first new row (a
///                           reduction over the batch when decoding)
///   result(c, p, batch)     undefined, then updated over `rows` (r.x the
///                           feature, r.y the new row) only
///   scales(g, row, batch)   an i8 cache's scale per group of features of
///                           each new row (undefined for other caches)
struct CacheWriteStage {
  Halide::Func result, position;
  Halide::RDom rows;
  int64_t features;
  Halide::Func scales;
};

/// One anchor of a kernel: what a schedule places as a unit.
using Stage =
    std::variant<GemmStage, NormStage, AttentionStage, AttentionWeightsStage,
                 CacheWriteStage, QuantDotStage, QuantGemmStage>;

/// std::visit over several lambdas, one per kind of stage.
template <typename... Fs> struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <typename... Fs> Overloaded(Fs...) -> Overloaded<Fs...>;

/// The Func a stage produces.
inline Halide::Func stageResult(const Stage &stage) {
  return std::visit(
      [](const auto &s) -> Halide::Func {
        if constexpr (std::is_same_v<std::decay_t<decltype(s)>, GemmStage>)
          return s.func;
        else
          return s.result;
      },
      stage);
}

/// A CPU prefill GEMM's prefetch of its next weight panel
/// (schedules/cpu/PanelPrefetch.h), named by the loops Halide lowers it to.
struct PanelPrefetch {
  /// The loop over a task's register tiles of rows (tile t's index).
  std::string tileLoop;
  /// A tile's loop over the reduction, one panel row a step.
  std::string stepLoop;
  /// GemmStage::panelWeights, as the step loop loads it.
  std::string weights;
};

/// CPU loops whose iterations read rows of `buffer` (dim 1) in order, one
/// after the other, as a decode attention reads its KV cache: the rows some
/// way ahead are prefetched (schedules/cpu/RowPrefetch.h). `loops`, outermost
/// first: the prefetch goes into the outermost of them whose iteration reads
/// a part of a row itself, not in a loop inside it (where the heads' loop is
/// unrolled whole, the keys' loop; otherwise the heads' loop inside it).
struct RowPrefetch {
  std::vector<std::string> loops;
  std::string buffer;
};

struct KernelStages {
  /// The kernel's vars, innermost first, shared by its Funcs; an output of
  /// rank r is defined over the first r.
  std::vector<Halide::Var> vars;
  /// The pipeline's outputs in argument order; `final` is the last one the
  /// group computes, the others are intermediates other kernels also read.
  std::vector<Halide::Func> outputs;
  Halide::Func final;
  /// Static extent of vars[0] (the feature dim) of the final output.
  int64_t features = 0;
  /// The kernel runs on the few rows of a decode step (usually one per
  /// sequence): a row tile would pad them with rows for nothing, so its
  /// GEMMs are GEMVs, or on a CPU tiles of the batch's sequences where B is
  /// large enough.
  bool fewRows = false;

  /// The anchors of the kernel in program order; the last one computes
  /// `final` (through its inlined epilogues), earlier ones feed it.
  std::vector<Stage> stages;

  /// Small lookup tables of the kernel's inputs alone (rotary embeddings'
  /// cosines and sines per frequency and position), which the anchors would
  /// otherwise recompute for every element they read: a schedule computes
  /// each once, whole.
  std::vector<Halide::Func> tables;

  /// Lowering passes' prefetches of the next weight panel, which CPU
  /// schedules ask for (scheduleGemm); the kernel's pipeline adds them.
  std::vector<PanelPrefetch> prefetches;
  /// Lowering passes' prefetches of rows read in order (a decode
  /// attention's KV cache), which CPU schedules ask for.
  std::vector<RowPrefetch> rowPrefetches;

  /// Run-time values checked with `require` (token ids against their
  /// table): CPU schedules leave them inlined into their readers; GPU
  /// schedules compute them on the host first, whose error handler reports
  /// a failed check (code on a GPU cannot).
  std::vector<Halide::Func> checks;
};

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_KERNELSTAGES_H
