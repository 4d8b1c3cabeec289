//===- schedules/cpu/AmxGemmSchedule.cpp - GEMMs in AMX tiles -------------===//
//
// Halide 21 turns a Func stored in MemoryType::AMXTile into AMX instructions
// (its ExtractTileOperations pass) only in one shape, that of its
// test/correctness/tiled_matmul.cpp: the Func is computed at a tile of its
// own wrapper, which stores it to memory with rows a constant stride apart;
// its pure definition is a zero tile; its update is one vectorized, atomic
// reduction of AmxTile::depth inputs by the tile's columns by its rows, of
// bf16 loads whose rows are a constant stride apart. So each operand is
// read from a buffer of its own: the bf16 input (computed at root, rows K
// apart) and the task's weight panel, copied with each pair innermost
// (the packed weights' panel index is one more term of their addresses,
// which the pass does not accept). The panel's copy and the sums' buffer
// are a constant `panel` of outputs wide, so their rows are a constant
// stride apart. The pass takes one accumulator per loop (it refuses an
// unrolled K loop and two tiles' loops fused), so each tile's multiplies
// are one dependent chain: docs/performance.md, "AMX tiles on Sapphire
// Rapids", has what that costs.
//
//===----------------------------------------------------------------------===//
#include "schedules/cpu/AmxGemmSchedule.h"

#include "schedules/TargetDesc.h"

using namespace Halide;

namespace attnc::schedules {

void scheduleAmxTiles(Func out, Var task, Var rowLoop, GemmStage &g,
                      int panel) {
  const int rows = AmxTile::rows, cols = AmxTile::cols;
  Func tiles = g.amxTiles;
  std::vector<Var> v = tiles.args();
  // The task's sums, tile by tile: the row tiles outside, so a tile of
  // input rows stays in L1 while the panel's column tiles read it.
  Func sums = tiles.in();
  Var no("amx_no"), ni("amx_ni"), ro("amx_ro"), ri("amx_ri");
  // Inputs in chunks (GemmStage::amxChunks): the rows' f32 totals at the
  // row loop, each chunk's tiles added in turn.
  LoopLevel tilesAt(out, rowLoop);
  if (g.amxChunks.defined()) {
    Func total = g.amxChunks;
    std::vector<Var> tv = total.args();
    total.compute_at(out, rowLoop).vectorize(tv[0], cols);
    std::vector<VarOrRVar> order(tv.begin(), tv.end());
    order.push_back(g.chunks.x);
    total.update().reorder(order).vectorize(tv[0], cols);
    tilesAt = LoopLevel(total, g.chunks.x);
  }
  sums.compute_at(tilesAt)
      .align_bounds(v[0], cols)
      .bound_storage(v[0], panel)
      .align_bounds(v[1], rows)
      .split(v[0], no, ni, cols)
      .split(v[1], ro, ri, rows)
      .reorder(ni, ri, no, ro)
      .vectorize(ni)
      .vectorize(ri);
  Var xo("amx_xo"), xi("amx_xi"), yo("amx_yo"), yi("amx_yi");
  tiles.compute_at(sums, no)
      .store_in(MemoryType::AMXTile)
      .tile(v[0], v[1], xo, yo, xi, yi, cols, rows)
      .vectorize(xi)
      .vectorize(yi);
  RVar ko("amx_ko"), ki("amx_ki");
  tiles.update()
      .tile(v[0], v[1], xo, yo, xi, yi, cols, rows, TailStrategy::GuardWithIf)
      .split(g.k.x, ko, ki, AmxTile::depth)
      .reorder({ki, xi, yi, ko, xo, yo})
      .atomic()
      .vectorize(ki)
      .vectorize(xi)
      .vectorize(yi);
  // The task's panel of weights, pair members innermost: 64-byte rows of
  // a tile's columns, one per pair of inputs.
  Func pairs = g.weight;
  std::vector<Var> pv = pairs.args(); // t, n, q
  pairs.compute_at(out, task)
      .align_bounds(pv[1], panel)
      .bound_storage(pv[1], panel)
      .vectorize(pv[1], cols)
      .unroll(pv[0]);
}

} // namespace attnc::schedules
