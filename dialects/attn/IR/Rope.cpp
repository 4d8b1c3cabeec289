//===- dialects/attn/IR/Rope.cpp - rotary frequencies ---------------------===//
//
// Part of attnc. Rope.h: the checks and the frequencies of rotary
// embeddings, partial and scaled, as transformers 5.23.0 computes them.
//
//===----------------------------------------------------------------------===//

#include "dialects/attn/IR/AttnOps.h"

#include <cmath>

using namespace mlir::attn;

std::string mlir::attn::checkRope(int64_t headDim, int64_t rotaryDims,
                                  float theta,
                                  const RopeScalingParams &scaling) {
  if (rotaryDims % 2 != 0 || rotaryDims <= 0 || rotaryDims > headDim)
    return "rotary embeddings rotate pairs of the " + std::to_string(headDim) +
           " features of a head, so the rotated features must be even and at "
           "most " +
           std::to_string(headDim) + ", got " + std::to_string(rotaryDims);
  if (!(theta > 0.0f) || !std::isfinite(theta))
    return "theta must be > 0 and finite";
  bool linear = scaling.kind == RopeScaling::linear;
  bool llama3 = scaling.kind == RopeScaling::llama3;
  if (!scaling.kind) {
    if (scaling.factor || scaling.lowFreqFactor || scaling.highFreqFactor ||
        scaling.originalMax)
      return "rope scaling parameters need a scaling type (linear or llama3)";
    return "";
  }
  if (!scaling.factor)
    return "rope scaling needs its factor";
  if (!(*scaling.factor > 0.0f) || !std::isfinite(*scaling.factor))
    return "the rope scaling factor must be positive and finite";
  if (linear &&
      (scaling.lowFreqFactor || scaling.highFreqFactor || scaling.originalMax))
    return "linear rope scaling takes a factor only (low_freq_factor, "
           "high_freq_factor and original_max belong to llama3)";
  if (llama3) {
    if (!scaling.lowFreqFactor || !scaling.highFreqFactor ||
        !scaling.originalMax)
      return "llama3 rope scaling needs factor, low_freq_factor, "
             "high_freq_factor and original_max";
    if (!(*scaling.lowFreqFactor > 0.0f) ||
        !(*scaling.highFreqFactor > *scaling.lowFreqFactor) ||
        !std::isfinite(*scaling.highFreqFactor))
      return "llama3 rope scaling needs 0 < low_freq_factor < "
             "high_freq_factor (it interpolates between the two)";
  }
  return "";
}

llvm::SmallVector<float>
mlir::attn::computeRopeInvFreq(float theta, int64_t rotaryDims,
                               const RopeScalingParams &scaling) {
  llvm::SmallVector<float> invFreq;
  for (int64_t i = 0; i < rotaryDims / 2; ++i) {
    float exponent = float(2 * i) / float(rotaryDims);
    invFreq.push_back(1.0f / float(std::pow(double(theta), double(exponent))));
  }
  if (scaling.kind == RopeScaling::linear) {
    // inv_freq /= factor
    for (float &f : invFreq)
      f = f / *scaling.factor;
  } else if (scaling.kind == RopeScaling::llama3) {
    // Python scalars meet f32 tensors: torch rounds each to f32 first;
    // low_freq_wavelen and high_freq_wavelen are double quotients.
    float factor = *scaling.factor, low = *scaling.lowFreqFactor,
          high = *scaling.highFreqFactor;
    double oldContext = double(*scaling.originalMax);
    float lowWavelen = float(oldContext / double(low));
    float highWavelen = float(oldContext / double(high));
    float span = float(double(high) - double(low));
    float twoPi = float(2 * M_PI);
    for (float &f : invFreq) {
      float wavelen = twoPi / f;
      float llama = wavelen > lowWavelen ? f / factor : f;
      float smooth = (float(oldContext) / wavelen - low) / span;
      float smoothed = (1.0f - smooth) * llama / factor + smooth * llama;
      bool medium = !(wavelen < highWavelen) && !(wavelen > lowWavelen);
      f = medium ? smoothed : llama;
    }
  }
  return invFreq;
}
