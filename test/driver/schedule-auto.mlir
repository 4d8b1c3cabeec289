// REQUIRES: autoscheduler
// RUN: rm -rf %t && mkdir %t
// RUN: attnc %S/Inputs/block.mlir --init-weights=%t/w.safetensors --seed=3
// RUN: attnc %S/Inputs/block.mlir --schedule=auto --weights %t/w.safetensors -o %t/auto.so
// RUN: attn-run %t/auto.so --info | FileCheck %s

// --schedule=auto (Halide's autoscheduler) builds a complete library; the
// e2e tests (`ctest -R '\.auto$'`) check its numbers.
// CHECK: model block (built by attnc
// CHECK-NEXT: inputs:
// CHECK-NEXT:   x: F32 [B, S <= 128, 8]
// CHECK-NEXT: outputs:
// CHECK-NEXT:   h: F32 [B, S <= 128, 8]
// CHECK-NEXT:   y: F32 [B, S <= 128, 16]
