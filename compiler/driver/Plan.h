//===- compiler/driver/Plan.h - execution plan of a model -------*- C++ -*-===//
//
// The plan is what the model library's descriptor tables (model_abi.h) say:
// the symbolic dims, the inputs and outputs, one buffer per tensor the
// kernels touch, and the kernel calls in order. It is built from the model
// function after the attn pipeline and the weights section.
//
// The model function may carry, as the frontend sets them:
//   - `attn.symbols` on the function: [["B", 0], ["S", 1024]], each symbolic
//     dim with its inclusive upper bound (0: unbounded), in declaration order;
//     without it the symbols are those of `attn.dim_symbols`, unbounded;
//   - `attn.name` (string) on each argument and result: the input and output
//     names; without it, `input<i>` and `output<i>`;
//   - `attn.model_name` (string) on the function: the model's name.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_PLAN_H
#define ATTNC_COMPILER_DRIVER_PLAN_H

#include "attn/model_abi.h"
#include "compiler/driver/WeightFolder.h"
#include "dialects/attn/IR/AttnOps.h"

#include <string>
#include <vector>

namespace attnc::driver {

constexpr llvm::StringLiteral kNameAttr = "attn.name";
constexpr llvm::StringLiteral kModelNameAttr = "attn.model_name";

struct PlanDim {
  int32_t symbol = -1; ///< index into Plan::symbols, or -1 for a constant
  int64_t extent = 0;  ///< the constant extent when symbol == -1
};

struct PlanBuffer {
  attn_model_buffer_kind kind;
  int32_t index = -1; ///< which input or output; -1 for weights and temps
  attn_model_dtype dtype = ATTN_MODEL_F32;
  std::vector<PlanDim> dims; ///< outermost first
  uint64_t weightOffset = 0;
};

struct PlanKernel {
  /// The attn.kernel it compiles; null for the copy kernel, which the
  /// library implements itself (for an output that is an input, a weight or
  /// another output).
  mlir::attn::KernelOp op;
  std::string name;   ///< as the descriptor lists it: the kernel's symbol
  std::string fnName; ///< the C entry point, unique in the library
  int32_t numArgs = 0;
};

struct PlanStep {
  int32_t kernel;
  std::vector<int32_t> args; ///< buffer indices: inputs, then outputs
};

struct PlanTensor {
  std::string name;
  int32_t buffer;
};

struct Plan {
  std::string modelName;
  std::vector<std::pair<std::string, int64_t>> symbols; ///< name, bound
  std::vector<PlanTensor> inputs;
  std::vector<PlanTensor> outputs;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanKernel> kernels;
  std::vector<PlanStep> steps;
};

/// The copy kernel's entry in Plan::kernels when some step uses it.
constexpr llvm::StringLiteral kCopyKernelName = "attn_copy";

/// Builds the plan of `func` (after the attn pipeline), whose weight
/// expressions are laid out in `weights`. Reports at the offending op or
/// argument; `defaultName` names a model without `attn.model_name`.
mlir::FailureOr<Plan> buildPlan(mlir::func::FuncOp func,
                                const WeightSection &weights,
                                llvm::StringRef defaultName);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_PLAN_H
