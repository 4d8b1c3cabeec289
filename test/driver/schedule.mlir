// RUN: rm -rf %t && mkdir %t
// RUN: not attnc %S/Inputs/block.mlir --schedule=bogus -o %t/bogus.so 2>&1 | FileCheck %s --check-prefix=BOGUS
// RUN: not attnc %S/Inputs/block.mlir --emit=bogus 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: attnc --help | FileCheck %s --check-prefix=HELP
// RUN: attnc %S/Inputs/block.mlir --init-weights=%t/w.safetensors --seed=3
// RUN: env ATTNC_AUTOSCHEDULER_PLUGIN=%t/missing.so not attnc %S/Inputs/block.mlir --schedule=auto --weights %t/w.safetensors -o %t/missing.so 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: env ATTNC_AUTOSCHEDULER_PLUGIN=%t/w.safetensors not attnc %S/Inputs/block.mlir --schedule=auto --weights %t/w.safetensors -o %t/bad.so 2>&1 | FileCheck %s --check-prefix=NOTSO
// RUN: ls %t | FileCheck %s --check-prefix=FILES

// An unknown schedule is refused before anything is compiled, and the
// message lists the schedules there are.
// BOGUS: attnc: for the --schedule option: unknown value 'bogus': use hand, auto or naive
// BOGUS-NOT: {{.}}
// EMIT: attnc: for the --emit option: unknown value 'bogus': use attn, ast, mlir, mlir-opt, kernels, halide-stmt, device-code or lib

// The three schedules, and which autoscheduler `auto` runs.
// HELP: --schedule=<value>
// HELP-NEXT: =hand
// HELP-NEXT: =auto {{.*}}Halide's {{[A-Za-z0-9]+}} autoscheduler
// HELP-NEXT: =naive

// A missing or broken autoscheduler plugin is an error that names the file
// and the fixes, never a crash, and leaves no library behind.
// MISSING: attnc: error: --schedule=auto: the {{[A-Za-z0-9]+}} autoscheduler plugin '{{.*}}missing.so' (from ATTNC_AUTOSCHEDULER_PLUGIN) does not exist; set ATTNC_AUTOSCHEDULER_PLUGIN to the path of libautoschedule_{{[a-z0-9]+}}.so (in the halide wheel's lib64), or reconfigure attnc with -DHALIDE_ROOT={{.*}} and rebuild, or use --schedule=hand
// MISSING-NOT: {{.}}
// NOTSO: attnc: error: --schedule=auto: cannot load the autoscheduler plugin '{{.*}}w.safetensors' (from ATTNC_AUTOSCHEDULER_PLUGIN): {{.*}}; set ATTNC_AUTOSCHEDULER_PLUGIN
// FILES: w.safetensors
// FILES-NOT: {{.}}
