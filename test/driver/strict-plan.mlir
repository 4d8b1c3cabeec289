// The plan.c attnc writes (its tables, the glue of compiler/driver/glue/
// and the descriptor) compiles with warnings as errors, on the host with
// copy kernels and embedded constants, and for both GPU APIs: the C compiler
// that links these libraries is cc -Wall -Wextra -Werror. The build compiles
// the glue alone the same way (glue/plan_check.c).
// Not under ASan (docs/robustness.md): what it checks is the C compiler's
// warnings, and gpu-run.mlir emits the CUDA and OpenCL plans under ASan.
// UNSUPPORTED: asan
// RUN: rm -rf %t && mkdir %t
// RUN: attnc %s --init-weights=%t/w.safetensors
// RUN: env ATTNC_CC=%S/Inputs/strict-cc.sh attnc %s --weights %t/w.safetensors -o %t/copies.so
// RUN: attn-run %t/copies.so --info | FileCheck %s
// RUN: env ATTNC_CC=%S/Inputs/strict-cc.sh attnc %S/Inputs/block.mlir -o %t/host.so
// RUN: env ATTNC_CC=%S/Inputs/strict-cc.sh attnc %S/Inputs/block.mlir --target=host-cuda-cuda_capability_80 -o %t/cuda.so
// RUN: env ATTNC_CC=%S/Inputs/strict-cc.sh attnc %S/Inputs/block.mlir --target=host-opencl -o %t/opencl.so

// CHECK: outputs:
// CHECK-NEXT:   same: F32 [S <= 64, 8]
// CHECK-NEXT:   relu: F32 [S <= 64, 8]
// CHECK-NEXT:   bias: F32 [8]
func.func @model(%x: tensor<?x8xf32> {attn.dim_symbols = ["S"], attn.name = "x"})
    -> (tensor<?x8xf32> {attn.name = "same"}, tensor<?x8xf32> {attn.name = "relu"},
        tensor<8xf32> {attn.name = "bias"})
    attributes {attn.symbols = [["S", 64]], attn.model_name = "strict"} {
  %r = attn.relu %x : tensor<?x8xf32>
  %b = attn.weight "b" : tensor<8xf32>
  return %x, %r, %b : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>
}
