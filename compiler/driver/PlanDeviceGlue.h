//===- compiler/driver/PlanDeviceGlue.h - plan.c's GPU part -----*- C++ -*-===//
//
// The part of a model library's plan.c that depends on its kernels' device
// (attn_model_device): the Halide device interface, and for a GPU the
// device memory functions of model ABI 4 (attn_model_device_api).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_COMPILER_DRIVER_PLANDEVICEGLUE_H
#define ATTNC_COMPILER_DRIVER_PLANDEVICEGLUE_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace attnc::driver {

/// The API's runtime header and `device_interface()`: its Halide device
/// interface, NULL on the host. Before the generic glue, which uses it.
void emitDeviceInterface(int32_t device, llvm::raw_ostream &os);

/// After the generic glue: `install_device_hooks()`, which the descriptor's
/// entry calls once, and on a GPU the wrap, unwrap, native and
/// native_context functions and the `device_api` table.
void emitDeviceApi(int32_t device, llvm::raw_ostream &os);

} // namespace attnc::driver

#endif // ATTNC_COMPILER_DRIVER_PLANDEVICEGLUE_H
