//===- dialects/attn/IR/AttnInterfaces.h - attn op interfaces ---*- C++ -*-===//
//
// The C++ side of AttnInterfaces.td: the types its methods take, and the
// default dim rule.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DIALECTS_ATTN_IR_ATTNINTERFACES_H
#define ATTNC_DIALECTS_ATTN_IR_ATTNINTERFACES_H

#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <vector>

namespace mlir::attn {

/// One dim of an operand or result of an op.
struct DimRef {
  Value value;
  int64_t dim;
};

/// Dims that must have one extent (and so one symbol when dynamic).
using DimGroup = SmallVector<DimRef, 4>;

/// An op's part in a fused kernel (FusionOpInterface).
enum class FusionRole {
  /// Starts a kernel: a GEMM, a norm, an attention.
  Anchor,
  /// Elementwise: joins its producer's kernel.
  Epilogue,
  /// A view its consuming anchor reads in place (an activation slice).
  Prologue,
};

/// How random weights draw a weight (WeightInitOpInterface).
struct WeightInit {
  enum class Kind {
    /// Uniform in +-1/sqrt(extent of dim `fanInDim`): a projection, a table.
    FanIn,
    /// Uniform in 1 +- 0.1: a norm's scale.
    NearOne,
    /// Uniform in +-0.02: a bias, a norm's shift, a scale added to one.
    NearZero,
  };
  Kind kind = Kind::NearZero;
  unsigned fanInDim = 0;

  static WeightInit fanIn(unsigned dim) { return {Kind::FanIn, dim}; }
  static WeightInit nearOne() { return {Kind::NearOne, 0}; }
  static WeightInit nearZero() { return {Kind::NearZero, 0}; }
};

/// How the weight `value` (an attn.weight, or a weight expression of one) is
/// drawn, asked of its users: the first op with WeightInitOpInterface that
/// answers, through weight expressions; nothing when no user says.
std::optional<WeightInit> getWeightInit(Value value);

/// The default dim rule (numpy broadcasting by rank): for each dim of each
/// result, that dim and the dims of the ranked operands aligned with it from
/// the last dim backwards.
void getBroadcastDimGroups(Operation *op, SmallVectorImpl<DimGroup> &groups);

} // namespace mlir::attn

#include "dialects/attn/IR/AttnInterfaces.h.inc"

#endif // ATTNC_DIALECTS_ATTN_IR_ATTNINTERFACES_H
