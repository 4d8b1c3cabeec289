//===- schedules/cpu/QuantDotSchedule.cpp - int8 dot products -------------===//
//
// A QuantDotStage (lowerings/Int8Linear.cpp): the rows' quantization at
// root (O(in) per row), then per tile of `width` outputs, per row, and per
// output of the tile, each chunk's integer dots of the weight row as one
// vector of lanes (atomic vectorization of the 4-byte reduction: Halide's
// VectorReduce, which x86 lowers to vpdpbusd with AVX512-VNNI or AVX-VNNI,
// to pmaddwd pairs on AVX2), converted and scaled into the row's f32 lane
// sums in a register; then the tile's outputs' lane sums reduced together.
//
//===----------------------------------------------------------------------===//
#include "schedules/cpu/QuantDotSchedule.h"

using namespace Halide;

namespace attnc::schedules {

void scheduleQuantizedRows(const std::vector<Func> &activations) {
  for (Func f : activations) {
    f.compute_root();
    Var rows = f.args().back();
    f.parallel(rows);
    for (int u = 0; u < f.num_update_definitions(); ++u)
      f.update(u).parallel(rows);
  }
}

void scheduleQuantDot(Func out, const std::vector<Var> &vars, QuantDotStage &d,
                      int width) {
  scheduleQuantizedRows(d.activations);
  // Each task owns a tile of outputs and runs every row over it: the
  // tile's weight rows (width x in bytes) stay in L1 while the rows (a
  // prefill's, or a batched decode's sequences) go by.
  Var no("no"), ni("ni");
  std::vector<VarOrRVar> order = {ni};
  order.insert(order.end(), vars.begin() + 1, vars.end());
  order.push_back(no);
  out.split(vars[0], no, ni, width, TailStrategy::ShiftInwards)
      .reorder(order)
      .vectorize(ni)
      .parallel(no);
  // One weight row at a time: a tile's rows lie one after another, so its
  // bytes are read as one stream, which the hardware prefetcher follows.
  // Four rows at once (sharing each chunk's activations) read four short
  // streams (768 bytes each in GPT-2's layers) and waited on memory: GPT-2
  // small int8, decode at context 128, 1 thread, the shared 2-core AMD
  // EPYC (Zen 4): 26 - 28 ms/token against 14 with one row (two: 40).
  // The tile's `width` outputs' lane vectors (width x lanes floats in L1)
  // reduced together, one VectorReduce to a vector of outputs: pairwise
  // shuffles and adds (for 16 x 16, 30 vpermt2ps and 15 vaddps), where one
  // horizontal sum per output was a chain of 16 scalar adds (ordered: a
  // float reduction to one lane). One 768 -> 3072 4-bit GEMV at int8, B =
  // S = 1, from L3, the shared 2-core Zen 4, 1 thread: 0.060 -> 0.047 ms.
  Func result = d.result;
  std::vector<Var> rv = result.args(); // n, rows...
  result.compute_at(out, no).vectorize(rv[0], width);
  result.update()
      .reorder(d.lanes.x, rv[0])
      .atomic()
      .vectorize(d.lanes.x)
      .vectorize(rv[0]);
  std::vector<Var> lv = d.laneSums.args(); // lane, n, rows...
  // Per row (a linear's input has rank >= 2): the tile's lane sums.
  d.laneSums.compute_at(result, rv[1]).vectorize(lv[0]);
  d.laneSums.update().reorder(lv[0], d.chunks.x).vectorize(lv[0]);
  std::vector<Var> dv = d.dots.args(); // lane, n, chunk, rows...
  d.dots.compute_at(d.laneSums, d.chunks.x).vectorize(dv[0]);
  for (int u = 0; u < d.dots.num_update_definitions(); ++u)
    d.dots.update(u)
        .reorder(d.quads.x, dv[0])
        .atomic()
        .vectorize(d.quads.x)
        .vectorize(dv[0]);
}

void scheduleQuantDotNaive(QuantDotStage &d) {
  for (Func f : d.activations)
    f.compute_root();
  for (Func f : {d.dots, d.laneSums, d.result})
    f.compute_root();
}

} // namespace attnc::schedules
