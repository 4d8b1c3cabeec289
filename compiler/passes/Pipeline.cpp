//===- compiler/passes/Pipeline.cpp - the attnc pass pipeline -------------===//
#include "compiler/passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void attn::buildAttnPipeline(OpPassManager &pm,
                             const AttnPipelineOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createAttnCheckShapesPass());
  fn.addPass(createAttnDecomposeAttentionPass());
  // Scale before fusion: after it the query weights are part of a concat.
  fn.addPass(createAttnFoldScalePass());
  fn.addPass(createAttnFuseQKVPass());
  fn.addPass(createAttnFuseGatedLinearsPass());
  fn.addPass(createAttnPackWeightsPass({options.panelWidth, options.bf16Pairs,
                                        options.quantizedOutIn,
                                        options.int8PanelWidth}));
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  // After dead code is gone: a decode's dead encoder leaves its inputs unread.
  fn.addPass(createAttnPruneEntryInputsPass());
  if (options.formKernels)
    fn.addPass(createAttnFormKernelsPass());
}

void attn::registerAttnPipeline() {
  PassPipelineRegistration<>("attn-pipeline",
                             "the attnc pipeline from frontend IR to kernels",
                             [](OpPassManager &pm) { buildAttnPipeline(pm); });
}
