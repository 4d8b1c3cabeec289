//===- dialects/attn/IR/Rope.h - rotary frequencies -------------*- C++ -*-===//
//
// Part of attnc. The frequencies of rotary embeddings as Hugging Face
// computes them (modeling_rope_utils.py, transformers 5.23.0), shared by the
// verifiers of attn.self_attention and attn.rope, the frontend's checks and
// the Halide lowering, so that each rule lives once.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DIALECTS_ATTN_IR_ROPE_H
#define ATTNC_DIALECTS_ATTN_IR_ROPE_H

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::attn {

/// AttnEnums.h.inc (through AttnOps.h) defines its enumerators.
enum class RopeScaling : uint32_t;

/// `rope_type` and its parameters: none (the default frequencies), linear
/// (`factor`) or llama3 (all four).
struct RopeScalingParams {
  std::optional<RopeScaling> kind;
  std::optional<float> factor, lowFreqFactor, highFreqFactor;
  std::optional<int64_t> originalMax;
};

/// What is wrong with rotary embeddings of `rotaryDims` features of heads of
/// `headDim` at base `theta` scaled by `scaling`, or "" when nothing is: the
/// rotated features are even and at most the head's, a linear scaling has a
/// factor and llama3 all of its parameters (factor and low_freq_factor >= 1
/// ... as Hugging Face's validation), and no parameter without its type.
std::string checkRope(int64_t headDim, int64_t rotaryDims, float theta,
                      const RopeScalingParams &scaling);

/// The `rotaryDims / 2` inverse frequencies, in f32 as transformers'
/// `_compute_default_rope_parameters`,
/// `_compute_linear_scaling_rope_parameters` and `_compute_llama3_parameters`
/// compute them: `1 / theta^(2i / dims)` (the power computed in double and
/// rounded once: torch's f32 pow may differ by an ulp), then the scaling's f32
/// arithmetic step by step.
llvm::SmallVector<float> computeRopeInvFreq(float theta, int64_t rotaryDims,
                                            const RopeScalingParams &scaling);

} // namespace mlir::attn

#endif // ATTNC_DIALECTS_ATTN_IR_ROPE_H
