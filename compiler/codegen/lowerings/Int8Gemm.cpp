//===- compiler/codegen/lowerings/Int8Gemm.cpp - int8 GEMM over quads -----===//
//
// attn.linear at --precision=int8 with an i8 matrix packed into quads of
// inputs (attn-pack-weights' int8-panel-width: [out / P, in / 4, P, 4], P
// outputs per panel, 4 consecutive inputs of one output per 32-bit lane).
// Each input row is quantized as Int8Linear.cpp's header documents (blocks
// of kActivationBlock inputs, scale absmax / 127, nearest even; a block with
// a NaN or an infinite input gets a NaN factor, so its row's outputs are
// NaN). Per output n, row and block, the block's integer products are
// summed in i32: dots(n, block, rows) over the block's quads of inputs, each
// step 4 inputs of P outputs (what vpdpbusd adds into a vector of i32 lanes
// once a schedule vectorizes the quad under the outputs), starting at the
// block's correction; then the f32 total adds each block's sum times the
// row's block scale, and the output is the total times the matrix's
// per-output scale, plus the bias.
//
// The products are u8 x s8 (vpdpbusd's operands): the weights offset by 128
// (w ^ 0x80 read as u8), the activations s8, so each block's sum starts at
// -128 times the sum of the row's integers in the block (exact in i32).
//
// A 4-bit (ui8) matrix is packed the same way from its bytes, each two
// inputs (2i in the low nibble, 2i + 1 in the high one), so a lane's 4 bytes
// are 8 inputs. Each step takes two products: the low nibbles times 16 by
// the row's even inputs, the high nibbles times 16 by its odd ones
// (Int8Linear.cpp's reading: 16 q for q in 0..15 meaning q - 8, so the same
// -128 correction), and each block's factor is the row's block scale times
// the output's group scale / 16 (groups of whole blocks; the scales packed
// into panels as the bytes are, PackWeights.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/lowerings/Int8Gemm.h"

#include "compiler/codegen/lowerings/Int8Linear.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

LogicalResult lowerInt8Gemm(LinearOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  Func w = b.get(op.getWeight()).func; // w(t, j, quad, panel)
  Func s = b.get(op.getScales()).func;
  size_t rank = in.extents.size();
  std::vector<Var> v = b.vars(rank); // v[0]: an index; v[1..]: the row
  int64_t k = op.getInFeatures(), n = op.getOutFeatures();
  auto wtype = op.getWeight().getType();
  bool int4 = wtype.getElementType().isUnsignedInteger(8);
  int p = int(wtype.getDimSize(2)), panels = int(wtype.getDimSize(0));
  int64_t padded = int64_t(panels) * p;
  if (k % kActivationBlock != 0)
    return op.emitOpError("i8 quads of ")
           << k << " inputs are not whole blocks of " << kActivationBlock
           << " (the activations' quantization)";
  Int8Rows rows = quantizeRows(in, v, b);

  // Per block of a row: its correction and its factor, NaN for a block
  // with a non-finite input (integer select and bitcast: the float code
  // may assume finite values).
  RDom j(0, kActivationBlock, b.name("j"));
  Func corr(b.name("block_corr")), factor(b.name("block_factor"));
  corr(v) = 0;
  corr(v) -= 128 * Halide::cast<int32_t>(
                       rows.q(b.args(rank, 0, v[0] * kActivationBlock + j.x)));
  factor(v) = reinterpret<float>(select(
      rows.finite(v) == 1, reinterpret<int32_t>(rows.scale(v)), 0x7fc00000));
  std::vector<Func> activations = rows.funcs;
  activations.push_back(corr);
  activations.push_back(factor);

  auto at = [&](Expr index) { return b.args(rank, 0, std::move(index)); };
  auto withRow = [&](std::vector<Expr> head) {
    head.insert(head.end(), v.begin() + 1, v.end());
    return head;
  };

  // dots(n, block, rows...): the block's quads `r.y`, 4 bytes `r.x` each.
  // Past the last panel (tiles of whole panels over padded ones) the last
  // panel is read again; those outputs are never stored. A panel's quads
  // are 4P consecutive bytes; indexed as such, a vector of outputs' quads
  // is one dense ramp.
  Var blk(b.name("block"));
  std::vector<Var> dv = {v[0], blk};
  dv.insert(dv.end(), v.begin() + 1, v.end());
  const int bytesPerBlock = int4 ? kActivationBlock / 2 : kActivationBlock;
  const int quads = bytesPerBlock / 4;
  RDom r(0, 4, 0, quads, b.name("quad"));
  Expr panel = padded == n ? v[0] / p : min(v[0] / p, panels - 1);
  Expr flat = (4 * v[0] + r.x) % (4 * p);
  Expr weight = w(flat % 4, flat / 4, blk * quads + r.y, panel);
  Expr byte = blk * bytesPerBlock + 4 * r.y + r.x;
  Func dots(b.name("int8_dots"));
  dots(dv) = corr(at(blk));
  addByteProducts(dots, dv, weight, byte, int4, rows, rank, b, activations);

  // The f32 total over the blocks (a 4-bit block's factor times its group's
  // scale of the output, packed as the bytes, [panels, in / G, P]:
  // s(n % P, group, panel), over 16).
  RDom blocks(0, int(k / kActivationBlock), b.name("b"));
  Expr blockFactor = factor(at(blocks.x));
  if (int4) {
    auto stype = cast<RankedTensorType>(op.getScales().getType());
    int64_t group = k / stype.getDimSize(1);
    blockFactor *=
        s(v[0] % p, blocks.x * kActivationBlock / int(group), panel) *
        (1.0f / 16);
  }
  Func total(b.name("int8_gemm"));
  total(v) = 0.0f;
  total(v) +=
      Halide::cast<float>(dots(withRow({v[0], blocks.x}))) * blockFactor;
  b.stages.stages.push_back(schedules::QuantGemmStage{
      total, dots, activations, blocks, r, k, n, padded,
      std::vector<Expr>(in.extents.begin() + 1, in.extents.end())});

  Expr bias = op.getBias() ? b.get(op.getBias()).func(v[0]) : Expr(0.0f);
  Func out(b.name("int8_out"));
  out(v) = (int4 ? total(v) : total(v) * s(v[0])) + bias;
  std::vector<Expr> extents = in.extents;
  extents[0] = int(n);
  b.define(op.getResult(), {out, extents});
  return success();
}

} // namespace attnc::codegen
