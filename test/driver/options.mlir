// RUN: not attnc %S/Inputs/block.mlir --target=foo --emit=mlir 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not attnc %S/Inputs/block.mlir --weights w.safetensors 2>&1 | FileCheck %s --check-prefix=OUTPUT
// RUN: not attnc %t.nonexistent.mlir --emit=mlir 2>&1 | FileCheck %s --check-prefix=INPUT
// RUN: attnc --version | FileCheck %s --check-prefix=VERSION
// RUN: attnc %S/Inputs/block.mlir --emit=kernels | FileCheck %s --check-prefix=OPT

// TARGET: attnc: error: unknown target 'foo': not a Halide target string; use 'host', a Halide target such as x86-64-linux-avx2 or x86-64-linux-avx512, a comma-separated list of them (most capable first), x86-64-multi (AVX-512 and AVX2), host-cuda (with a capability, e.g. host-cuda-cuda_capability_80) or host-opencl
// OUTPUT: attnc: error: no output file: give -o <lib.so>
// INPUT: attnc: error: cannot read '{{.*}}.nonexistent.mlir': {{.*}}
// VERSION: attnc {{[0-9]+\.[0-9]+\.[0-9]+}}
// OPT: attn.kernel @k0_linear
// OPT: return %{{[0-9]+}}, %{{[0-9]+}} : tensor<?x?x8xf32>, tensor<?x?x16xf32>
