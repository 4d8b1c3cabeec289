// RUN: rm -rf %t && mkdir %t
// RUN: attnc %S/Inputs/block.mlir --init-weights=%t/w.safetensors

// A link that fails halfway leaves nothing at -o and no temporary beside it,
// and its error carries the compiler's output.
// RUN: not env ATTNC_CC=%S/Inputs/failing-cc.sh attnc %S/Inputs/block.mlir --weights %t/w.safetensors -o %t/m.so 2>&1 | FileCheck %s --check-prefix=LINK
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// LINK: attnc: error: linking the model library with '{{.*}}failing-cc.sh' failed (exit code 1):
// LINK-NEXT: failing-cc: out of disk space

// A failed compile also removes an older library, so that no build system
// takes it for the result.
// RUN: echo stale > %t/m.so
// RUN: not attnc %S/missing-weight.mlir --weights %t/w.safetensors -o %t/m.so 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// MISSING: error: weight 'fc.wieght' is not in

// FILES: w.safetensors
// FILES-NOT: {{.}}

// An output directory that does not exist is an error before any work.
// RUN: not attnc %S/Inputs/block.mlir --weights %t/w.safetensors -o %t/no/m.so 2>&1 | FileCheck %s --check-prefix=DIR
// DIR: attnc: error: cannot write '{{.*}}/no/m.so': directory '{{.*}}/no' does not exist: create it first
