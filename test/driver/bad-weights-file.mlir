// RUN: attnc %S/Inputs/block.mlir --init-weights=%t.safetensors
// RUN: head -c 100 %t.safetensors > %t.truncated
// RUN: not attnc %S/Inputs/block.mlir --weights %t.truncated -o %t.so 2>&1 | FileCheck %s --check-prefix=TRUNC
// RUN: not attnc %S/Inputs/block.mlir --weights %t.missing -o %t.so 2>&1 | FileCheck %s --check-prefix=MISSING

// TRUNC: attnc: error: cannot read weights: safetensors file '{{.*}}.truncated': {{.*}}truncated
// MISSING: attnc: error: cannot read weights: safetensors file '{{.*}}.missing': cannot open it
