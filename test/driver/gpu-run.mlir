// Libraries built for GPU targets, run where this suite runs (no GPU):
// the test decoder (test/models) built for OpenCL generates on PoCL the
// tokens the CPU build generates, its KV caches in device memory, each
// checked against one run over the whole sequence; built for CUDA, on a
// machine without the CUDA driver, it is refused at load with
// ATTN_ERROR_NO_DEVICE, before any kernel runs.
// RUN: rm -rf %t && mkdir %t
// RUN: attnc %S/../models/decoder.attn --init-weights=%t/w.safetensors --seed=3
// RUN: attnc %S/../models/decoder.attn -o %t/cpu.so
// RUN: attn-run %t/cpu.so --weights %t/w.safetensors --generate 6 --prompt 1,2,3 --check > %t/out.txt
// RUN: %if opencl %{ attnc %S/../models/decoder.attn --target=host-opencl -o %t/cl.so %}
// RUN: %if opencl %{ attn-run %t/cl.so --weights %t/w.safetensors --generate 6 --prompt 1,2,3 --check >> %t/out.txt %}
// RUN: %if opencl %{ FileCheck %s --check-prefix=OPENCL < %t/out.txt %}
// A ragged batch on the device: the prompts prefilled one by one on the
// host, then the caches moved to the device; the sequence that ends at its
// --eos leaves the batch (the caches copied out, compacted and back). The
// tokens of the CPU build, each sequence checked against its run alone.
// RUN: attn-run %t/cpu.so --weights %t/w.safetensors --generate 6 --prompt 4 | grep '^tokens:' | cut -d' ' -f2 > %t/eos.txt
// RUN: sh -c 'attn-run %t/cpu.so --weights %t/w.safetensors --generate 6 --prompt 1,2,3 --prompt 4 --prompt 5,6 --eos $(cat %t/eos.txt) --check' > %t/cpu-batch.txt
// RUN: grep '^tokens:' %t/cpu-batch.txt > %t/cpu-tokens.txt
// RUN: %if opencl %{ sh -c 'attn-run %t/cl.so --weights %t/w.safetensors --generate 6 --prompt 1,2,3 --prompt 4 --prompt 5,6 --eos $(cat %t/eos.txt) --check' > %t/cl-batch.txt %}
// RUN: %if opencl %{ FileCheck %s --check-prefix=BATCH < %t/cl-batch.txt %}
// RUN: %if opencl %{ grep '^tokens:' %t/cl-batch.txt | diff %t/cpu-tokens.txt - %}
// Inputs and outputs in device memory give the outputs of host memory, bit
// for bit: the kernels see the same buffers, only who copies differs.
// RUN: %if opencl %{ attn-run %t/cl.so --weights %t/w.safetensors --random B=2,S=5 --outputs %t/host.safetensors %}
// RUN: %if opencl %{ attn-run %t/cl.so --weights %t/w.safetensors --random B=2,S=5 --device-memory --outputs %t/device.safetensors | FileCheck %s --check-prefix=DEVICE-MEMORY %}
// RUN: %if opencl %{ cmp %t/host.safetensors %t/device.safetensors %}
// RUN: %if opencl %{ not attn-run %t/cl.so --weights %t/w.safetensors --random B=1,S=2 --device 7 2>&1 | FileCheck %s --check-prefix=ORDINAL %}
// RUN: not attn-run %t/cpu.so --weights %t/w.safetensors --random B=1,S=2 --device-memory 2>&1 | FileCheck %s --check-prefix=HOST-ONLY
// RUN: attnc %S/../models/decoder.attn --target=host-cuda-cuda_capability_80 -o %t/cuda.so
// RUN: %if !cuda-driver %{ not attn-run %t/cuda.so --weights %t/w.safetensors --random B=1,S=4 2>&1 | FileCheck %s --check-prefix=NO-CUDA %}
// RUN: attn-run %t/cuda.so --info | FileCheck %s --check-prefix=DESCRIBE

// OPENCL: tokens: [[TOKENS:[0-9 ]+]]
// OPENCL: check: {{.*}}: ok
// OPENCL: states: 2 KV caches in OpenCL device memory
// OPENCL: tokens: [[TOKENS]]{{$}}
// OPENCL: check: {{.*}}: ok

// BATCH: states: 2 KV caches in OpenCL device memory
// BATCH-NEXT: tokens:
// BATCH-NEXT: tokens: {{[0-9]+$}}
// BATCH-NEXT: tokens:
// BATCH: check: sequence 0: {{.*}}: ok
// BATCH-NEXT: check: sequence 1: prefill + 0 decode steps {{.*}}: ok
// BATCH-NEXT: check: sequence 2: {{.*}}: ok

// DEVICE-MEMORY: device memory: inputs and outputs stay on the OpenCL device

// ORDINAL: attn-run: error: '{{.*}}cl.so' runs on OpenCL device 7 (HL_GPU_DEVICE, attn-run --device), but the driver reports {{[0-9]+}} device{{s?}}: choose one of 0 to

// HOST-ONLY: attn-run: error: --device-memory needs a model that runs on a GPU, but '{{.*}}cpu.so' was built for {{.*}}, which runs on the host: rebuild it with attnc --target=host-cuda or --target=host-opencl

// NO-CUDA: attn-run: error: '{{.*}}cuda.so' was built for CUDA ({{.*}}-cuda-cuda_capability_80{{.*}}), but no CUDA driver (libcuda.so.1) on this machine: run it on a machine with a CUDA device and its driver, or rebuild it with attnc --target=host

// Describing the library needs no device.
// DESCRIBE: inputs:
