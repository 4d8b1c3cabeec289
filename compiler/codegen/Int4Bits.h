//===- compiler/codegen/Int4Bits.h - 4-bit weights as bytes -----*- C++ -*-===//
//
// How `i4` weights and tables are stored (docs/language.md): two values per
// byte along the dimension they are grouped on, the even one in the low
// nibble, each nibble q meaning q - 8. Every lowering that reads them
// decodes them here.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_INT4BITS_H
#define ATTNC_COMPILER_CODEGEN_INT4BITS_H

#include "Halide.h"

namespace attnc::codegen {

/// q - 8 of a nibble (a uint8 in 0..15) as f32: the subtraction in int8,
/// before the widening.
inline Halide::Expr centredNibble(Halide::Expr nibble) {
  using namespace Halide;
  return cast(Float(32), cast(Int(8), nibble) - cast(Int(8), 8));
}

/// The value of a byte's even element (its low nibble).
inline Halide::Expr lowInt4(Halide::Expr byte) {
  return centredNibble(byte & Halide::cast(Halide::UInt(8), 15));
}

/// The value of a byte's odd element (its high nibble).
inline Halide::Expr highInt4(Halide::Expr byte) {
  return centredNibble(byte >> Halide::cast(Halide::UInt(8), 4));
}

/// The value of element `i`, held by `byte` (the bytes' element i / 2).
inline Halide::Expr int4At(Halide::Expr byte, Halide::Expr i) {
  using namespace Halide;
  return centredNibble((byte >> cast(UInt(8), (i % 2) * 4)) &
                       cast(UInt(8), 15));
}

/// 16 times a byte's even element's stored nibble q (0..240 as a uint8, q
/// not yet less 8): its low nibble shifted up. With highNibbleTimes16, what
/// an integer dot product multiplies, since a uint8 of 0..15 would be
/// narrowed to an int8 x int8 product, which x86 has no dot product for.
inline Halide::Expr lowNibbleTimes16(Halide::Expr byte) {
  return byte << Halide::cast(Halide::UInt(8), 4);
}

/// 16 times a byte's odd element's stored nibble: its high nibble, masked.
inline Halide::Expr highNibbleTimes16(Halide::Expr byte) {
  return byte & Halide::cast(Halide::UInt(8), 0xf0);
}

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_INT4BITS_H
