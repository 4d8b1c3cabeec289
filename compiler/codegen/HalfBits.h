//===- compiler/codegen/HalfBits.h - bf16 and f16 as bits -------*- C++ -*-===//
//
// On a target that has no half-precision type (OpenCL without cl_khr_fp16,
// e.g. PoCL and NVIDIA's OpenCL), bf16 and f16 tensors are read and written
// as their bits, uint16, and widened to or narrowed from f32 with integer
// operations. Both are exact: every bf16 and f16 value is an f32 value, and
// attnc only narrows values that came from the same type (weights laid out
// at load).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_HALFBITS_H
#define ATTNC_COMPILER_CODEGEN_HALFBITS_H

#include "Halide.h"

namespace attnc::codegen {

/// The f32 value of the bf16 (`bfloat`) or f16 bits `bits` (uint16).
Halide::Expr widenHalfBits(Halide::Expr bits, bool bfloat);

/// The bf16 (`bfloat`) or f16 bits (uint16) of `value`, an f32 that the
/// type represents exactly.
Halide::Expr narrowToHalfBits(Halide::Expr value, bool bfloat);

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_HALFBITS_H
