//===- compiler/codegen/lowerings/Int8Linear.cpp - int8 x int8 linears ----===//
//
// attn.linear with i8 or 4-bit weights [out, in] at --precision=int8 (i8
// ones packed into quads, on VNNI targets, are Int8Gemm.cpp's). Each input row
// is quantized per block of kActivationBlock inputs: the block's scale is
// absmax / 127 (f32), each input's integer round(x / scale), nearest even,
// in -127..127; an all-zero block has scale 0 and integers 0. A block with
// a NaN or an infinite input gets a NaN scale, so its row's outputs are NaN
// (the f32 path's outputs would be NaN or infinite).
//
// The weights are read [out, in], a row of bytes per output, in chunks of
// L lanes (TargetDesc::int8DotLanes) of 4 bytes: lane l of chunk c sums the
// products of its 4 bytes (4 inputs of an i8 row; 8 of a 4-bit one, the
// low nibbles then the high ones) in i32 -- one vpdpbusd (AVX512-VNNI,
// AVX-VNNI) or pmaddwd pair (AVX2) per chunk -- and adds it, converted to
// f32 and times its lane's scale, to the lane's f32 sum; a row's output is
// its lanes' sums added at the end. A lane's inputs lie in one activation
// block and one 4-bit group, so its scale is the block's scale (times the
// group's weight scale for 4 bits); an i8 matrix's per-output scale
// multiplies the output once.
//
// The integer products are u8 x s8 (what vpdpbusd multiplies): the i8
// weights are offset by 128 (w ^ 0x80 as u8) and the 4-bit nibbles are
// read as stored times 16 (16 q, q in 0..15 meaning q - 8), so each lane
// starts at its correction, -128 times the sum of its activation integers
// (computed once per row), and a 4-bit lane's scale is divided by 16.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/lowerings/Int8Linear.h"

#include "compiler/codegen/Int4Bits.h"

using namespace mlir;
using namespace mlir::attn;
using namespace Halide;

namespace attnc::codegen {

/// Inputs per lane per chunk: 4 bytes of i8, or of two 4-bit values each.
static int laneInputs(LinearOp op) {
  return op.getWeight().getType().getElementType().isUnsignedInteger(8) ? 8 : 4;
}

bool usesInt8Dot(LinearOp op, const schedules::TargetDesc &target) {
  mlir::Type element = op.getWeight().getType().getElementType();
  bool int4 = element.isUnsignedInteger(8);
  // [out, in] after the pipeline only where attn-pack-weights kept it so
  // (quantized-out-in, --precision=int8): at f32 every matrix is turned
  // [in, out] or into panels.
  if (target.isGpu() || !(int4 || element.isSignlessInteger(8)) ||
      op.getLayout() != WeightLayout::out_in)
    return false;
  int64_t k = op.getInFeatures();
  if (k % kActivationBlock != 0 ||
      k % (int64_t(laneInputs(op)) * target.int8DotLanes()) != 0)
    return false;
  if (!int4)
    return true;
  auto stype = cast<RankedTensorType>(op.getScales().getType());
  int64_t group = k / stype.getDimSize(1);
  return group % laneInputs(op) == 0;
}

void addByteProducts(Func dots, const std::vector<Var> &dv, Expr weight,
                     Expr byte, bool int4, const Int8Rows &rows, size_t rank,
                     KernelBuilder &b, std::vector<Func> &activations) {
  auto row = [&](Expr index) { return b.args(rank, 0, std::move(index)); };
  if (!int4) {
    Expr offset = Halide::cast<uint8_t>(weight) ^ Halide::cast<uint8_t>(128);
    dots(dv) += Halide::cast<int32_t>(offset) *
                Halide::cast<int32_t>(rows.q(row(byte)));
    return;
  }
  std::vector<Var> v = b.vars(rank);
  Func even(b.name("int8_even")), odd(b.name("int8_odd"));
  even(v) = rows.q(row(2 * v[0]));
  odd(v) = rows.q(row(2 * v[0] + 1));
  activations.push_back(even);
  activations.push_back(odd);
  dots(dv) += Halide::cast<int32_t>(lowNibbleTimes16(weight)) *
              Halide::cast<int32_t>(even(row(byte)));
  dots(dv) += Halide::cast<int32_t>(highNibbleTimes16(weight)) *
              Halide::cast<int32_t>(odd(row(byte)));
}

Int8Rows quantizeRows(const Tensor &in, const std::vector<Var> &v,
                      KernelBuilder &b) {
  size_t rank = in.extents.size();
  auto row = [&](Expr index) { return b.args(rank, 0, std::move(index)); };
  Func x(b.name("int8_in"));
  x(v) = in.func(v);

  // The row's blocks: absmax, and whether every input is finite (a NaN is
  // lost in a maximum).
  RDom j(0, kActivationBlock, b.name("j"));
  Expr inBlock = x(row(v[0] * kActivationBlock + j.x));
  Func absMax(b.name("block_absmax")), finite(b.name("block_finite"));
  absMax(v) = 0.0f;
  absMax(v) = max(absMax(v), abs(inBlock));
  finite(v) = 1;
  finite(v) = min(finite(v), select(is_finite(inBlock), 1, 0));
  Func scale(b.name("block_scale"));
  scale(v) = absMax(v) / 127.0f;
  Func q(b.name("int8_act"));
  Expr block = v[0] / kActivationBlock;
  Expr sc = scale(row(block));
  q(v) = Halide::cast<int8_t>(select(finite(row(block)) == 1 && sc > 0.0f,
                                     clamp(round(x(v) / sc), -127.0f, 127.0f),
                                     0.0f));
  return {scale, finite, q, {absMax, finite, scale, q}};
}

LogicalResult lowerInt8Linear(LinearOp op, KernelBuilder &b) {
  const Tensor &in = b.get(op.getInput());
  Func w = b.get(op.getWeight()).func; // [out, in]: w(byte, n)
  Func s = b.get(op.getScales()).func;
  size_t rank = in.extents.size();
  std::vector<Var> v = b.vars(rank); // v[0]: an index; v[1..]: the row
  int64_t k = op.getInFeatures(), n = op.getOutFeatures();
  bool int4 = op.getWeight().getType().getElementType().isUnsignedInteger(8);
  int lanes = b.target.int8DotLanes(), perLane = laneInputs(op);
  auto row = [&](Expr index) { return b.args(rank, 0, std::move(index)); };
  Int8Rows rows = quantizeRows(in, v, b);
  Func finite = rows.finite, scale = rows.scale, q = rows.q;

  // Per lane m (inputs perLane * m ...): its correction and its scale, NaN
  // for a block with a non-finite input (integer select and bitcast: the
  // float code may assume finite values). A 4-bit lane's scale is divided
  // by 16 here, once per row (exactly: a power of two), rather than in
  // every step of every output.
  RDom t(0, perLane, b.name("t"));
  Func corr(b.name("lane_corr")), laneScale(b.name("lane_scale"));
  corr(v) = 0;
  corr(v) -= 128 * Halide::cast<int32_t>(q(row(v[0] * perLane + t.x)));
  Expr laneBlock = v[0] * perLane / kActivationBlock;
  Expr blockScale = scale(row(laneBlock));
  if (int4)
    blockScale *= 1.0f / 16;
  laneScale(v) =
      reinterpret<float>(select(finite(row(laneBlock)) == 1,
                                reinterpret<int32_t>(blockScale), 0x7fc00000));
  std::vector<Func> activations = rows.funcs;
  activations.push_back(corr);
  activations.push_back(laneScale);

  // dots(l, n, c, row...) over the 4 bytes `quad` of lane m = c * L + l.
  Var l(b.name("lane")), c(b.name("chunk"));
  std::vector<Var> dv = {l, v[0], c};
  dv.insert(dv.end(), v.begin() + 1, v.end());
  auto withRow = [&](std::vector<Expr> head) {
    head.insert(head.end(), v.begin() + 1, v.end());
    return head;
  };
  Expr m = c * lanes + l;
  RDom quad(0, 4, b.name("quad"));
  Expr byte = 4 * m + quad.x;
  Func dots(b.name("int8_dots"));
  dots(dv) = corr(row(m));
  // A 4-bit lane's scale takes the nibbles' 16 back.
  addByteProducts(dots, dv, w(byte, v[0]), byte, int4, rows, rank, b,
                  activations);

  // Each lane's f32 sum over the chunks, then the lanes'.
  RDom chunks(0, int(k / (int64_t(lanes) * perLane)), b.name("c"));
  Expr mc = chunks.x * lanes + l;
  Expr laneFactor = laneScale(row(mc));
  if (int4) {
    auto stype = cast<RankedTensorType>(op.getScales().getType());
    int64_t group = k / stype.getDimSize(1);
    laneFactor *= s(mc * perLane / int(group), v[0]);
  }
  Func laneSums(b.name("int8_lane_sums"));
  std::vector<Var> lv = {l, v[0]};
  lv.insert(lv.end(), v.begin() + 1, v.end());
  laneSums(lv) = 0.0f;
  laneSums(lv) +=
      Halide::cast<float>(dots(withRow({l, v[0], chunks.x}))) * laneFactor;
  RDom r(0, lanes, b.name("l"));
  Func result(b.name("int8_gemm"));
  result(v) = 0.0f;
  result(v) += laneSums(withRow({r.x, v[0]}));
  b.stages.stages.push_back(schedules::QuantDotStage{
      result, laneSums, dots, activations, r, chunks, quad, k, n, lanes});

  Expr bias = op.getBias() ? b.get(op.getBias()).func(v[0]) : Expr(0.0f);
  Func out(b.name("int8_out"));
  out(v) = int4 ? result(v) + bias : result(v) * s(v[0]) + bias;
  std::vector<Expr> extents = in.extents;
  extents[0] = int(n);
  b.define(op.getResult(), {out, extents});
  return success();
}

} // namespace attnc::codegen
