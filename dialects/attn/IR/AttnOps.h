//===- dialects/attn/IR/AttnOps.h - attn operations -------------*- C++ -*-===//
#ifndef ATTNC_DIALECTS_ATTN_IR_ATTNOPS_H
#define ATTNC_DIALECTS_ATTN_IR_ATTNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/attn/IR/AttnDialect.h"
#include "dialects/attn/IR/AttnEnums.h.inc"
#include "dialects/attn/IR/AttnInterfaces.h"
#include "dialects/attn/IR/Rope.h"

#define GET_ATTRDEF_CLASSES
#include "dialects/attn/IR/AttnAttrs.h.inc"

namespace mlir::attn {
/// The custom form and the broadcasting check of the binary ops (add, sub,
/// mul; Attn_BinaryOp in AttnOps.td).
ParseResult parseBinaryOp(OpAsmParser &parser, OperationState &result);
void printBinaryOp(OpAsmPrinter &printer, Operation *op);
LogicalResult verifyBinaryOp(Operation *op);
} // namespace mlir::attn

#define GET_OP_CLASSES
#include "dialects/attn/IR/AttnOps.h.inc"

namespace mlir::attn {
/// True for attn.weight and the ops that can compute on weights alone
/// (WeightExprOpInterface): the driver computes them in "init" kernels. Some
/// (slice, scale) also apply to activations; check their operands too.
bool isWeightExpressionOp(Operation *op);

/// The base of rotary embeddings' frequencies when a model gives none
/// (Llama's, GPT-NeoX's and GPT-J's `rope_theta`).
inline constexpr float kDefaultRopeTheta = 10000.0f;
} // namespace mlir::attn

#endif // ATTNC_DIALECTS_ATTN_IR_ATTNOPS_H
