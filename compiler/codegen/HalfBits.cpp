//===- compiler/codegen/HalfBits.cpp - bf16 and f16 as bits ---------------===//
#include "compiler/codegen/HalfBits.h"

using namespace Halide;

namespace attnc::codegen {

Expr widenHalfBits(Expr bits, bool bfloat) {
  Expr wide = cast(UInt(32), bits);
  // bf16 is the top half of an f32.
  if (bfloat)
    return reinterpret(Float(32), wide << 16);
  // f16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
  Expr sign = (wide >> 15) << 31;
  Expr exponent = (wide >> 10) & 0x1f, mantissa = wide & 0x3ff;
  // Normal numbers rebias the exponent; infinities and NaNs keep all ones.
  Expr rebiased = select(exponent == 0x1f, cast(UInt(32), 0xff),
                         exponent + cast(UInt(32), 127 - 15));
  Expr normal =
      reinterpret(Float(32), sign | (rebiased << 23) | (mantissa << 13));
  // Zeros and subnormals: mantissa * 2^-24, exact in f32.
  Expr small = cast(Float(32), mantissa) * (1.0f / 16777216.0f);
  return select(exponent == 0, select(sign != 0, -small, small), normal);
}

Expr narrowToHalfBits(Expr value, bool bfloat) {
  Expr bits = reinterpret(UInt(32), value);
  if (bfloat)
    return cast(UInt(16), bits >> 16);
  Expr sign = (bits >> 31) << 15;
  Expr exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
  Expr normal =
      ((exponent - cast(UInt(32), 127 - 15)) << 10) | (mantissa >> 13);
  Expr special = cast(UInt(32), 0x1f << 10) | (mantissa >> 13);
  // Below f16's smallest normal (2^-14, f32 exponent 113): a subnormal or
  // zero, |value| * 2^24 exactly an integer.
  Expr small = cast(UInt(32), abs(value) * 16777216.0f);
  Expr magnitude =
      select(exponent == 0xff, special, select(exponent < 113, small, normal));
  return cast(UInt(16), sign | magnitude);
}

} // namespace attnc::codegen
