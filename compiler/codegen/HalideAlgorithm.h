//===- compiler/codegen/HalideAlgorithm.h - kernel -> Halide ----*- C++ -*-===//
//
// The algorithm half of codegen: one Halide Func per op of an attn.kernel,
// with no scheduling at all (that is schedules/' job).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_CODEGEN_HALIDEALGORITHM_H
#define ATTNC_COMPILER_CODEGEN_HALIDEALGORITHM_H

#include "dialects/attn/IR/AttnOps.h"
#include "schedules/KernelStages.h"
#include "schedules/TargetDesc.h"

namespace attnc::codegen {

/// Defines the Funcs computing `kernel`. `params` gets one ImageParam per
/// kernel input, in order; `stages` names the Funcs for the schedule.
/// Reports unsupported ops at their location.
mlir::LogicalResult buildAlgorithm(mlir::attn::KernelOp kernel,
                                   const schedules::TargetDesc &target,
                                   schedules::Precision precision,
                                   std::vector<Halide::ImageParam> &params,
                                   schedules::KernelStages &stages);

} // namespace attnc::codegen

#endif // ATTNC_COMPILER_CODEGEN_HALIDEALGORITHM_H
