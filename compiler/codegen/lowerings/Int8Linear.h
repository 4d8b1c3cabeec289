//===- compiler/codegen/lowerings/Int8Linear.h - int8 x int8 ----*- C++ -*-===//
//
// attn.linear at --precision=int8 (schedules::Precision::Int8): a linear
// with i8 or 4-bit weights quantizes its input rows as it runs and sums
// integer products (Int8Linear.cpp). Linear.cpp asks here first.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_LOWERINGS_INT8LINEAR_H
#define ATTNC_COMPILER_CODEGEN_LOWERINGS_INT8LINEAR_H

#include "compiler/codegen/Lowering.h"

namespace attnc::codegen {

/// Inputs per activation block: each block of a row has one scale.
constexpr int kActivationBlock = 32;

/// The int8 quantization of an input's rows (Int8Linear.cpp's header),
/// over (index, rows...) of `in` as `v`: scale(block, rows) (absmax / 127),
/// finite(block, rows) (1 where the block's inputs are all finite) and the
/// integers q(input, rows) (i8; 0 in a zero or non-finite block). `funcs`
/// are every Func of it, which a schedule computes (root, row by row).
struct Int8Rows {
  Halide::Func scale, finite, q;
  std::vector<Halide::Func> funcs;
};
Int8Rows quantizeRows(const Tensor &in, const std::vector<Halide::Var> &v,
                      KernelBuilder &b);

/// Adds to `dots(dv)` the integer products of weight byte `weight` with the
/// row's activation integers at byte `byte` of a weight row, the u8 x s8
/// products vpdpbusd sums: an i8 byte offset by 128 (w ^ 0x80) times the
/// input's integer; a 4-bit byte's nibbles, each times 16 (Int4Bits.h),
/// times the even and the odd inputs (two updates: byte i holds inputs 2i
/// and 2i + 1), whose Funcs join `activations`. The rows have `rank` dims.
void addByteProducts(Halide::Func dots, const std::vector<Halide::Var> &dv,
                     Halide::Expr weight, Halide::Expr byte, bool int4,
                     const Int8Rows &rows, size_t rank, KernelBuilder &b,
                     std::vector<Halide::Func> &activations);

/// Whether `op` is lowered by lowerInt8Linear on `target`: a CPU, i8 or
/// 4-bit weights read [out, in] (which attn-pack-weights leaves only at
/// --precision=int8, its quantized-out-in), and input features whole
/// dot-product chunks (TargetDesc::int8DotLanes lanes of 4 bytes) and whole
/// 4-bit groups per lane. Other linears take the f32 path.
bool usesInt8Dot(mlir::attn::LinearOp op, const schedules::TargetDesc &target);

/// Lowers `op` (usesInt8Dot) and records its QuantDotStage.
mlir::LogicalResult lowerInt8Linear(mlir::attn::LinearOp op, KernelBuilder &b);

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_LOWERINGS_INT8LINEAR_H
