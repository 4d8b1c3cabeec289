//===- compiler/driver/WeightInit.h - weights read at load ------*- C++ -*-===//
//
// For a library that reads its weights at load (attnc without --weights):
// the weights table, every tensor the model reads from the file, and the
// "init" entry, whose kernels compute each weight expression a kernel reads
// (transposed, sliced, joined, scaled, packed into panels) into the
// constants block once, at load, so none of it costs anything per run. A
// kernel that reads a weight as it is reads the file's tensor directly.
//
// The init kernels are attn.kernel ops of a private function @attn_init that
// this adds to the module, so codegen compiles them like any other kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_WEIGHTINIT_H
#define ATTNC_COMPILER_DRIVER_WEIGHTINIT_H

#include "compiler/driver/Plan.h"

namespace attnc::driver {

/// One init kernel: reads the weights `weights` (indices into the table, in
/// the kernel's input order) and writes the constant at `offset`.
struct InitStep {
  mlir::attn::KernelOp kernel;
  std::vector<int32_t> weights;
  uint64_t offset;
};

/// The init entry outlineWeightInit builds (not mlir::attn::WeightInit, which
/// says how a random weight is drawn).
struct OutlinedInit {
  /// How the "run" entry reads each weight expression (buildPlan's input).
  ConstantMap constants;
  std::vector<PlanWeight> weights;
  uint64_t constantsSize = 0;
  std::vector<InitStep> steps;
};

/// Outlines the weight expressions that the kernels of `funcs` (the model's
/// entries) read into init kernels: one constant per distinct expression,
/// whichever entry reads it. Reports a weight declared with two shapes at its
/// second declaration.
mlir::FailureOr<OutlinedInit>
outlineWeightInit(llvm::ArrayRef<mlir::func::FuncOp> funcs);

/// Sets the plan's weights table and constants size and adds its "init"
/// entry.
void addInitEntry(Plan &plan, const OutlinedInit &init);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_WEIGHTINIT_H
