//===- schedules/cpu/QuantGemmSchedule.cpp - int8 GEMM over quads ---------===//
//
// A QuantGemmStage (lowerings/Int8Gemm.cpp): the rows' quantization at root
// (O(in) per row), then register tiles of TargetDesc::int8GemmVectors
// vectors of outputs by int8GemmRowTile rows. Per block of 32 inputs a
// tile's i32 sums start at their rows' corrections and take 8 steps, each
// one vector of weight quads (64 bytes: 4 inputs of 16 outputs) per output
// vector and one broadcast quad of activations per row, multiplied into
// every (vector, row) sum by one int8 dot product (the 4-byte reduction
// vectorized atomically under the outputs: Halide's VectorReduce, vpdpbusd
// with AVX512-VNNI); then each sum is converted and added, times its row's
// block factor, to the tile's f32 totals. Sums and totals stay in registers
// (3 x 4 x 2 = 24 zmm on AVX-512) and every weight vector serves the
// tile's rows. Fewer rows than a tile (a decode of few sequences, a short
// prefill) run row by row over int8GemvVectors vectors of outputs.
//
//===----------------------------------------------------------------------===//
#include "schedules/cpu/QuantGemmSchedule.h"

#include "schedules/cpu/QuantDotSchedule.h"

using namespace Halide;

namespace attnc::schedules {

/// The widest multiple of `width`, at most `vectors` of them, that `features`
/// hold (tiles are shifted inwards, never past the last output).
static int outputTile(int64_t features, int width, int vectors) {
  while (vectors > 1 && vectors * width > features)
    --vectors;
  return vectors * width;
}

void scheduleQuantGemm(Func out, const std::vector<Var> &v, QuantGemmStage &d,
                       const TargetDesc &target, int64_t features, int width,
                       bool fewRows) {
  scheduleQuantizedRows(d.activations);
  Func total = d.result;
  Var n = v[0], no("no"), ni("ni");
  std::vector<Var> tv = total.args();
  // The row dim tiled, as an index of `v` (0: none): a decode's sequences
  // ([B, S, N]: S is usually 1), otherwise the positions.
  size_t td = v.size() < 2 ? 0 : fewRows && v.size() == 3 ? 2 : 1;
  // A row-by-row task's int8GemvVectors panels are read at once (as many
  // streams and sums), or, where the target reads them in turn, one after
  // the other, each a tile of its own (the panel loop `np` in the task
  // loop `nt`).
  bool inTurn = target.int8GemvPanelsInTurn();
  Var np("np"), nt("nt");
  auto splitGemvOutputs = [&] {
    const int panels = target.int8GemvVectors();
    if (inTurn)
      out.split(n, no, ni, width, TailStrategy::ShiftInwards)
          .split(no, nt, np, panels, TailStrategy::GuardWithIf);
    else
      out.split(n, no, ni, outputTile(features, width, panels),
                TailStrategy::ShiftInwards);
  };
  if (td == 0) {
    splitGemvOutputs();
    out.vectorize(ni, width);
    total.compute_at(out, inTurn ? np : no);
  } else {
    int rowTile = target.int8GemmRowTile();
    Var to(v[td].name() + "_tile"), ti(v[td].name() + "_in");
    std::vector<VarOrRVar> order = {ni, ti};
    for (size_t i = 1; i < v.size(); ++i)
      if (i != td)
        order.push_back(v[i]);
    order.push_back(to);
    order.push_back(no);
    // Register tiles of rows where there are enough rows for one; row by
    // row otherwise. Both name their loops alike, so the totals are
    // computed at the same loop in either.
    Expr many = d.rowExtents[td - 1] >= rowTile;
    int gemm = outputTile(features, width, target.int8GemmVectors());
    out.specialize(many)
        .split(n, no, ni, gemm, TailStrategy::ShiftInwards)
        .split(v[td], to, ti, rowTile, TailStrategy::ShiftInwards)
        .reorder(order)
        .vectorize(ni, width)
        .parallel(no);
    std::vector<VarOrRVar> gemvOrder = order;
    if (inTurn) {
      gemvOrder.back() = np;
      gemvOrder.push_back(nt);
    }
    splitGemvOutputs();
    out.split(v[td], to, ti, 1)
        .reorder(gemvOrder)
        .vectorize(ni, width)
        .parallel(inTurn ? nt : no);
    // At the loop just outside the tile's rows (gemvOrder's too).
    total.compute_at(out, order[2].var);
  }
  // Per tile: the blocks outermost, the tile's outputs and rows unrolled
  // inside; each block's sums computed at its loop.
  std::vector<VarOrRVar> loops = {tv[0]};
  std::vector<Var> dv = d.dots.args(); // n, block, rows...
  std::vector<VarOrRVar> steps = {d.quads.x, dv[0]};
  if (td != 0) {
    loops.push_back(tv[td]);
    steps.push_back(dv[td + 1]);
  }
  loops.push_back(d.blocks.x);
  steps.push_back(d.quads.y);
  total.vectorize(tv[0], width);
  Halide::Stage blocks = total.update();
  blocks.reorder(loops).vectorize(tv[0], width).unroll(tv[0]);
  d.dots.compute_at(total, d.blocks.x).vectorize(dv[0], width).unroll(dv[0]);
  if (td != 0) {
    blocks.unroll(tv[td]);
    d.dots.unroll(dv[td + 1]);
  }
  // One product of quads (i8), or two (a 4-bit matrix's low and high
  // nibbles).
  for (int u = 0; u < d.dots.num_update_definitions(); ++u) {
    Halide::Stage quads = d.dots.update(u);
    quads.reorder(steps)
        .atomic()
        .vectorize(d.quads.x)
        .vectorize(dv[0], width)
        .unroll(dv[0]);
    if (td != 0)
      quads.unroll(dv[td + 1]);
  }
}

void scheduleQuantGemmNaive(QuantGemmStage &d) {
  for (Func f : d.activations)
    f.compute_root();
  for (Func f : {d.dots, d.result})
    f.compute_root();
}

} // namespace attnc::schedules
