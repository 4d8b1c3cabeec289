//===- compiler/passes/Passes.h - attn passes -------------------*- C++ -*-===//
#ifndef ATTNC_COMPILER_PASSES_PASSES_H
#define ATTNC_COMPILER_PASSES_PASSES_H

#include "dialects/attn/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::attn {

#define GEN_PASS_DECL
#include "compiler/passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/passes/Passes.h.inc"

/// What the pipeline needs to know about the target's kernels.
struct AttnPipelineOptions {
  /// Output features per GEMM weight panel (0: weights stay [in, out]).
  int64_t panelWidth = 0;
  /// Group the ops into attn.kernel regions at the end (attnc --emit=mlir-opt
  /// stops before).
  bool formKernels = true;
  /// --precision=bf16: f32 and bf16 panels become bf16 pairs of inputs, read
  /// by bf16 dot products (attn-pack-weights' bf16-pairs).
  bool bf16Pairs = false;
  /// --precision=int8: i8 and 4-bit weights stay [out, in], read by int8 dot
  /// products (attn-pack-weights' quantized-out-in).
  bool quantizedOutIn = false;
  /// --precision=int8 on a target with int8 dot products: i8 weights packed
  /// into quads of inputs in panels of this many outputs (attn-pack-weights'
  /// int8-panel-width; 0 keeps them [out, in]).
  int64_t int8PanelWidth = 0;
};

/// The compiler's pipeline from frontend IR to attn.kernel groups.
void buildAttnPipeline(OpPassManager &pm,
                       const AttnPipelineOptions &options = {});

/// Registers buildAttnPipeline as `attn-pipeline` for attn-opt.
void registerAttnPipeline();

} // namespace mlir::attn

#endif // ATTNC_COMPILER_PASSES_PASSES_H
