//===- compiler/driver/Quantize.h - attnc quantize --------------*- C++ -*-===//
//
// `attnc quantize IN -o OUT`: a checkpoint with its linear matrices as
// symmetric per-output-channel int8, which `.attn` declares `i8[out, in]`
// with scales `f32[out]` beside it, or (`--bits 4`) as 4-bit values with one
// scale per group of inputs, two values per byte, declared `i4[out, in]`
// with scales `f32[out, in / G]` (docs/language.md, "Quantized weights").
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_QUANTIZE_H
#define ATTNC_COMPILER_DRIVER_QUANTIZE_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::driver {

struct QuantizeOptions {
  /// Quantize the tensors whose names this regex matches (anywhere in the
  /// name; every one must be a 2-D F32, BF16 or F16 tensor); empty: every
  /// 2-D F32, BF16 and F16 tensor.
  std::string only;
  /// The quantized tensors whose names this regex matches are stored
  /// `[in, out]` (GPT-2's Conv1D, `layout(in, out)`): their scales are per
  /// column. Others are `[out, in]`, scaled per row.
  std::string inOut;
  /// 8: int8 per output channel; 4: 4-bit per group of `group` inputs.
  int bits = 8;
  int64_t group = 32;
};

/// What was done, for a summary line.
struct QuantizeReport {
  std::vector<std::string> quantized;
  int64_t bytesBefore = 0, bytesAfter = 0;
};

/// The int8 value of `w` at scale `scale`: round half to even, clamped to
/// [-127, 127] (the range is symmetric, so -128 is never written).
int8_t quantizeValue(double w, float scale);

/// The scale of an output channel whose largest magnitude is `maxAbs`:
/// maxAbs / 127 in f32, or 1 for a channel of zeros (every value then
/// quantizes to 0, and dequantizes exactly).
float channelScale(double maxAbs);

/// The 4-bit code of `w` at scale `scale`: round half to even, clamped to
/// [-7, 7], plus 8, so 1..15 (0, which would be -8, is never written).
uint8_t quantizeNibble(double w, float scale);

/// The scale of a group of 4-bit values whose largest magnitude is
/// `maxAbs`: maxAbs / 7 in f32, or 1 for a group of zeros.
float groupScale(double maxAbs);

/// Reads the safetensors file or sharded index `in`; writes every tensor to
/// `out` (one file, atomically: nothing is written on an error), the ones
/// chosen as I8 of the same shape plus `NAME_scale` F32 `[out]` (8 bits),
/// or as U8 bytes of two 4-bit codes of consecutive inputs (the even one in
/// the low nibble), `[out, in / 2]` or `[in / 2, out]`, plus `NAME_scale`
/// F32 `[out, in / G]` or `[in / G, out]` (4 bits), the others unchanged.
/// Errors name the tensor: NaN or Inf in a chosen one (with its index), a
/// tensor --only chooses that is not a 2-D float matrix, inputs that the
/// group does not divide, a scale name the file already holds, a regex that
/// does not parse.
llvm::Expected<QuantizeReport> quantizeCheckpoint(const std::string &in,
                                                  const std::string &out,
                                                  const QuantizeOptions &opts);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_QUANTIZE_H
