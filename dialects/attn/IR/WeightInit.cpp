//===- dialects/attn/IR/WeightInit.cpp - how ops draw their weights -------===//
//
// WeightInitOpInterface of each op that reads weights, and the transpose's
// WeightExprOpInterface::getOperandWeightInit: what `attnc --init-weights`
// asks to draw a model's random weights.
//
//===----------------------------------------------------------------------===//
#include "dialects/attn/IR/AttnOps.h"

using namespace mlir;
using namespace mlir::attn;

/// A projection matrix read `[out, in]` (fan-in dim 1), or its bias.
static WeightInit projectionInit(OpOperand &operand) {
  auto type = cast<RankedTensorType>(operand.get().getType());
  return type.getRank() == 2 ? WeightInit::fanIn(1) : WeightInit::nearZero();
}

WeightInit TransposeOp::getOperandWeightInit(OpOperand &, WeightInit init) {
  if (init.kind != WeightInit::Kind::FanIn)
    return init;
  if (init.fanInDim == getDim0())
    init.fanInDim = getDim1();
  else if (init.fanInDim == getDim1())
    init.fanInDim = getDim0();
  return init;
}

std::optional<WeightInit> LinearOp::getWeightInit(OpOperand &operand) {
  if (&operand == &getWeightMutable())
    return WeightInit::fanIn(getLayout() == WeightLayout::out_in ? 1 : 0);
  auto [biasAt, biasCount] = getODSOperandIndexAndLength(2);
  if (biasCount && operand.getOperandNumber() == biasAt)
    return WeightInit::nearZero();
  return std::nullopt;
}

std::optional<WeightInit> LayerNormOp::getWeightInit(OpOperand &operand) {
  if (&operand == &getGammaMutable())
    return WeightInit::nearOne();
  if (&operand == &getBetaMutable())
    return WeightInit::nearZero();
  return std::nullopt;
}

/// With `offset = 1` (Gemma) the scale is `1 + gamma`: gamma near zero.
std::optional<WeightInit> RmsNormOp::getWeightInit(OpOperand &operand) {
  if (&operand != &getGammaMutable())
    return std::nullopt;
  return getOffset().isZero() ? WeightInit::nearOne() : WeightInit::nearZero();
}

/// A row per id: the table's fan-in is its features.
std::optional<WeightInit> EmbeddingOp::getWeightInit(OpOperand &operand) {
  if (&operand == &getTableMutable())
    return WeightInit::fanIn(1);
  return std::nullopt;
}

/// A bias per bucket and head, of a projection's scale.
std::optional<WeightInit> RelativeBiasOp::getWeightInit(OpOperand &operand) {
  if (&operand == &getTableMutable())
    return WeightInit::fanIn(1);
  return std::nullopt;
}

/// The projections' matrices are `[out, in]`, their biases vectors.
std::optional<WeightInit> SelfAttentionOp::getWeightInit(OpOperand &operand) {
  unsigned first = getODSOperandIndexAndLength(1).first; // q_weight
  unsigned end = getODSOperandIndexAndLength(11).first;  // key_lengths
  unsigned index = operand.getOperandNumber();
  if (index < first || index >= end)
    return std::nullopt;
  return projectionInit(operand);
}

/// The additive score's vector `[1, A]`, read as a projection to one score.
std::optional<WeightInit> SdpaOp::getWeightInit(OpOperand &operand) {
  auto [start, length] = getODSOperandIndexAndLength(5); // score
  if (length && operand.getOperandNumber() == start)
    return projectionInit(operand);
  return std::nullopt;
}
