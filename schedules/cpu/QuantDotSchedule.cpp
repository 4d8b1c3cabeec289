//===- schedules/cpu/QuantDotSchedule.cpp - int8 dot products -------------===//
//
// A QuantDotStage (lowerings/Int8Linear.cpp): the rows' quantization at
// root (O(in) per row), then per tile of `width` outputs, per row, and per
// 4 outputs of the tile (unrolled), each chunk's integer dots of the 4
// weight rows as one vector of lanes each (atomic vectorization of the
// 4-byte reduction: Halide's VectorReduce, which x86 lowers to vpdpbusd
// with AVX512-VNNI or AVX-VNNI, to pmaddwd pairs on AVX2), converted and
// scaled into the 4 rows' f32 lane sums in registers; the lanes summed
// horizontally at the end.
//
//===----------------------------------------------------------------------===//
#include "schedules/cpu/QuantDotSchedule.h"

#include <algorithm>

using namespace Halide;

namespace attnc::schedules {

void scheduleQuantDot(Func out, const std::vector<Var> &vars, QuantDotStage &d,
                      int width) {
  for (Func f : d.activations) {
    f.compute_root();
    Var rows = f.args().back();
    f.parallel(rows);
    for (int u = 0; u < f.num_update_definitions(); ++u)
      f.update(u).parallel(rows);
  }
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
  // Rows unrolled per chunk: 4 weight rows' dots share the chunk's
  // activation vector and lane scales.
  int unroll = std::min(width, 4);
  Func result = d.result;
  Var v = result.args()[0], nb("nb"), nu("nu");
  result.compute_at(out, no).vectorize(v, width);
  result.update()
      .split(v, nb, nu, unroll)
      .reorder(d.lanes.x, nu, nb)
      .atomic()
      .vectorize(d.lanes.x)
      .unroll(nu);
  std::vector<Var> lv = d.laneSums.args(); // lane, n, rows...
  d.laneSums.compute_at(result, nb).vectorize(lv[0]).unroll(lv[1]);
  d.laneSums.update()
      .reorder(lv[0], lv[1], d.chunks.x)
      .vectorize(lv[0])
      .unroll(lv[1]);
  std::vector<Var> dv = d.dots.args(); // lane, n, chunk, rows...
  d.dots.compute_at(d.laneSums, d.chunks.x).vectorize(dv[0]).unroll(dv[1]);
  for (int u = 0; u < d.dots.num_update_definitions(); ++u)
    d.dots.update(u)
        .reorder(d.quads.x, dv[0], dv[1])
        .atomic()
        .vectorize(d.quads.x)
        .vectorize(dv[0])
        .unroll(dv[1]);
}

void scheduleQuantDotNaive(QuantDotStage &d) {
  for (Func f : d.activations)
    f.compute_root();
  for (Func f : {d.dots, d.laneSums, d.result})
    f.compute_root();
}

} // namespace attnc::schedules
