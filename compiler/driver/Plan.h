//===- compiler/driver/Plan.h - execution plan of a model -------*- C++ -*-===//
//
// The plan is what the model library's descriptor tables (model_abi.h) say:
// the symbolic dims, the weights read at load, the kernels, and the entry
// points ("run", and "init" when weights are read at load), each with its
// buffers and kernel calls in order. "run" is built from the model function
// after the attn pipeline; "init" from the weight expressions it reads.
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
#include "dialects/attn/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace attnc::driver {

constexpr llvm::StringLiteral kNameAttr = "attn.name";
constexpr llvm::StringLiteral kModelNameAttr = "attn.model_name";

/// Alignment of every constant in the constants block: a cache line, and
/// what the descriptor contract (model_abi.h) promises the runtime.
constexpr uint64_t kConstantAlignment = 64;

/// Where a kernel reads a value computed from weights alone: a constant of
/// the constants block (ATTN_MODEL_BUFFER_CONSTANT at `offset`) or a tensor
/// of the weights file as it is (ATTN_MODEL_BUFFER_WEIGHT, `index` into
/// Plan::weights).
struct ConstantRef {
  attn_model_buffer_kind kind = ATTN_MODEL_BUFFER_CONSTANT;
  int32_t index = -1;
  uint64_t offset = 0;
};
using ConstantMap = llvm::DenseMap<mlir::Value, ConstantRef>;

struct PlanDim {
  int32_t symbol = -1; ///< index into Plan::symbols, or -1 for a constant
  int64_t extent = 0;  ///< the constant extent when symbol == -1
};

struct PlanBuffer {
  attn_model_buffer_kind kind;
  int32_t index = -1; ///< input, output or weight; -1 for constants, temps
  attn_model_dtype dtype = ATTN_MODEL_F32;
  std::vector<PlanDim> dims; ///< outermost first
  uint64_t offset = 0;       ///< constants only
};

/// coeff times the product of the symbols' values (Plan::symbols indices).
struct FlopTerm {
  double coeff;
  std::vector<int32_t> symbols;
};

struct PlanKernel {
  /// The attn.kernel it compiles; null for the copy kernel, which the
  /// library implements itself (for an output that is an input, a weight or
  /// another output).
  mlir::attn::KernelOp op;
  std::string name;   ///< as the descriptor lists it: the kernel's symbol
  std::string fnName; ///< the C entry point, unique in the library
  int32_t numInputs = 0, numOutputs = 0;
  /// Computes a constant at load (the "init" entry): scheduled as a layout
  /// kernel whatever --schedule says, which is for the model's kernels.
  bool forInit = false;
  /// The floating-point operations of a call (FlopCountOpInterface), for
  /// profiles; empty when none of its ops counts them.
  std::vector<FlopTerm> flops;
};

struct PlanStep {
  int32_t kernel;
  std::vector<int32_t> args; ///< buffer indices: inputs, then outputs
};

struct PlanTensor {
  std::string name;
  int32_t buffer;
};

/// An entry point: its buffers are its own.
struct PlanEntry {
  std::string name;
  std::vector<PlanTensor> inputs;
  std::vector<PlanTensor> outputs;
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;
};

/// A buffer the caller owns across runs (a KV cache): row-major, F32 or
/// F16 / BF16 (a cache kept in half the bytes).
struct PlanState {
  std::string name;
  std::vector<PlanDim> dims;
  attn_model_dtype dtype = ATTN_MODEL_F32;
};

/// A tensor of the weights file, as the model declares it (F32, row-major).
struct PlanWeight {
  std::string name;
  std::vector<int64_t> shape;
  /// As declared: F32, or BF16 / F16 kept in that precision.
  attn_model_dtype dtype = ATTN_MODEL_F32;
  /// A quantized matrix's storage order (attn.weight's layout).
  attn_model_weight_layout layout = ATTN_MODEL_WEIGHT_ANY;
};

struct Plan {
  std::string modelName;
  std::vector<std::pair<std::string, int64_t>> symbols; ///< name, bound
  /// The weights file's tensors read at load; empty when embedded.
  std::vector<PlanWeight> weights;
  std::vector<PlanState> states;
  /// Bytes of the constants block (embedded, or filled by "init").
  uint64_t constantsSize = 0;
  std::vector<PlanKernel> kernels;
  std::vector<PlanEntry> entries;

  /// Adds `op` to the kernel table; a kernel identical to an earlier one
  /// (the same layer again) calls the earlier one's code, compiled once.
  int32_t addKernel(mlir::attn::KernelOp op);
  /// The copy kernel's index, added on first use.
  int32_t copyKernel();

private:
  llvm::StringMap<std::string> fnByStructure;
  int32_t copyIndex = -1;
};

/// The copy kernel's entry in Plan::kernels when some step uses it.
constexpr llvm::StringLiteral kCopyKernelName = "attn_copy";

/// Builds the plan of the model's functions (after the attn pipeline), one
/// entry each ("run", or what `attn.entry` says), whose weight expressions
/// are read as `constants` says. Reports at the offending op or argument;
/// `defaultName` names a model without `attn.model_name`.
mlir::FailureOr<Plan> buildPlan(llvm::ArrayRef<mlir::func::FuncOp> funcs,
                                const ConstantMap &constants,
                                llvm::StringRef defaultName);

/// The model ABI's dtype of a tensor of `element` (f32, i32, bf16, f16), or
/// nothing for a type a model library cannot hold.
std::optional<attn_model_dtype> modelDType(mlir::Type element);
/// attn.weight's layout as the weights table records it.
attn_model_weight_layout modelWeightLayout(mlir::attn::WeightOp op);

/// The dims of a buffer of the static `shape` (a weight or a constant).
std::vector<PlanDim> staticDims(llvm::ArrayRef<int64_t> shape);

/// Bytes of one element of `dtype`.
inline uint64_t dtypeSize(attn_model_dtype dtype) {
  return attn_dtype_lookup(dtype)->size;
}

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_PLAN_H
