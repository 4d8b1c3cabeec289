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
  Expr sign = bits >> 31, magnitude = bits & 0x7fffffff;
  Expr exponent = magnitude >> 23, mantissa = bits & 0x7fffff;
  Expr nan = exponent == 0xff && mantissa != 0;
  // Round to nearest even: add just under half of the dropped bits' unit,
  // plus one when the kept part is odd; a carry moves into the exponent
  // (and past the largest finite value to infinity).
  auto roundOff = [](Expr b, int dropped) {
    return (b + ((1 << (dropped - 1)) - 1) + ((b >> dropped) & 1)) >> dropped;
  };
  if (bfloat) {
    // NaNs stay NaN (quieted): rounding could carry a NaN to infinity.
    Expr quiet = (bits >> 16) | 0x40;
    return cast(UInt(16), select(nan, quiet, roundOff(bits, 16)));
  }
  // f16: 5 exponent bits (bias 15), 10 mantissa bits.
  Expr rebiased = roundOff(magnitude, 13) - cast(UInt(32), (127 - 15) << 10);
  // Below f16's smallest normal (2^-14, f32 exponent 113): a subnormal or
  // zero, |value| * 2^24 rounded to an integer (exact before the rounding;
  // 1024 is the smallest normal's bits).
  Expr small = cast(UInt(32), round(abs(value) * 16777216.0f));
  Expr infinity = cast(UInt(32), 0x7c00);
  Expr result = select(nan, infinity | 0x200 | (mantissa >> 13),
                       exponent == 0xff, infinity, exponent < 113, small,
                       rebiased >= infinity, infinity, rebiased);
  return cast(UInt(16), (sign << 15) | result);
}

Expr narrowToHalf(Expr value, Halide::Type stored, bool bfloat) {
  if (stored == UInt(16))
    return narrowToHalfBits(value, bfloat);
  if (bfloat)
    return reinterpret(BFloat(16), narrowToHalfBits(value, true));
  return cast(Float(16), value);
}

} // namespace attnc::codegen
