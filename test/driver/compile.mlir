// RUN: rm -rf %t && mkdir %t
// RUN: attnc %S/Inputs/block.mlir --init-weights=%t/w.safetensors --seed=7
// RUN: attnc %S/Inputs/block.mlir --weights %t/w.safetensors -o %t/block.so
// RUN: llvm-nm -D --defined-only %t/block.so | FileCheck %s --check-prefix=SYMS
// RUN: attn-run %t/block.so --info | FileCheck %s --check-prefix=INFO
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// Only the entry point is exported: the kernels and the Halide runtime stay
// hidden, so two models can share a process.
// SYMS-NOT: {{ [TDBR] }}
// SYMS: T attn_model_descriptor{{$}}
// SYMS-NOT: {{ [TDBR] }}

// Names, symbols and bounds come from attn.name, attn.symbols and
// attn.model_name.
// INFO: model block (built by attnc {{[0-9.]+}} for x86-64-linux{{.*}}, precision f32)
// INFO-NEXT: inputs:
// INFO-NEXT:   x: F32 [B, S <= 128, 8]
// INFO-NEXT: outputs:
// INFO-NEXT:   h: F32 [B, S <= 128, 8]
// INFO-NEXT:   y: F32 [B, S <= 128, 16]

// No temporary files are left beside the library.
// FILES: block.so
// FILES-NEXT: w.safetensors
// FILES-NOT: {{.}}
