//===- compiler/codegen/lowerings/Int8Gemm.h - int8 GEMM --------*- C++ -*-===//
//
// attn.linear at --precision=int8 over an i8 matrix packed into quads of
// inputs (rank-4 i8 panels, attn-pack-weights' int8-panel-width): int8
// activations times the weights in i32 per block, lanes over the outputs
// (Int8Gemm.cpp). Linear.cpp dispatches here by the weight's layout.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_LOWERINGS_INT8GEMM_H
#define ATTNC_COMPILER_CODEGEN_LOWERINGS_INT8GEMM_H

#include "compiler/codegen/Lowering.h"

namespace attnc::codegen {

/// Lowers `op`, whose weight is i8 quads `[out / P, in / 4, P, 4]`, and
/// records its QuantGemmStage.
mlir::LogicalResult lowerInt8Gemm(mlir::attn::LinearOp op, KernelBuilder &b);

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_LOWERINGS_INT8GEMM_H
