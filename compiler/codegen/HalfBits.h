//===- compiler/codegen/HalfBits.h - bf16 and f16 as bits -------*- C++ -*-===//
//
// On a target that has no half-precision type (OpenCL without cl_khr_fp16,
// e.g. PoCL and NVIDIA's OpenCL), bf16 and f16 tensors are read and written
// as their bits, uint16, and widened to or narrowed from f32 with integer
// operations. Widening is exact (every bf16 and f16 value is an f32 value);
// narrowing rounds to nearest even as IEEE and PyTorch's `.to()` do, so it
// is exact for weights laid out at load (values of the same type) and
// rounds the rows written into an f16 or bf16 KV cache.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_HALFBITS_H
#define ATTNC_COMPILER_CODEGEN_HALFBITS_H

#include "Halide.h"

namespace attnc::codegen {

/// The f32 value of the bf16 (`bfloat`) or f16 bits `bits` (uint16).
Halide::Expr widenHalfBits(Halide::Expr bits, bool bfloat);

/// The bf16 (`bfloat`) or f16 bits (uint16) of `value`, an f32, rounded to
/// nearest even: NaN stays NaN, a value past the largest finite one becomes
/// infinity.
Halide::Expr narrowToHalfBits(Halide::Expr value, bool bfloat);

/// `value`, an f32, rounded to nearest even into `stored`: BFloat(16) or
/// Float(16), or the bits (UInt(16)) of bf16 (`bfloat`) or f16. Halide's
/// own cast serves f16; bf16 goes through narrowToHalfBits, since Halide's
/// cast carries NaNs of small payloads to infinity (or to -0).
Halide::Expr narrowToHalf(Halide::Expr value, Halide::Type stored, bool bfloat);

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_HALFBITS_H
