/*===- compiler/driver/glue/plan_check.c - a plan.c, by hand ------*- C -*-===*
 *
 * A plan.c laid out as PlanEmitter writes one, for a model of one kernel and
 * one copy, with the glue included where attnc pastes it. The build compiles
 * it with warnings as errors for each device (ATTN_CHECK_DEVICE: 0 host,
 * 1 CUDA, 2 OpenCL), so the glue of every model library is C a compiler
 * has seen; test/driver/strict-plan.attn compiles the plans attnc writes.
 *
 *===----------------------------------------------------------------------===*/
#define ATTN_MAX_RANK 2
#define ATTN_MAX_ARGS 2
#define ATTN_HALF_AS_BITS 0
#define ATTN_NUM_KERNELS 2
#if ATTN_CHECK_DEVICE == 1
#define ATTN_DEVICE ATTN_MODEL_DEVICE_CUDA
#elif ATTN_CHECK_DEVICE == 2
#define ATTN_DEVICE ATTN_MODEL_DEVICE_OPENCL
#else
#define ATTN_DEVICE ATTN_MODEL_DEVICE_HOST
#endif

#include "attn/model_abi.h"

extern int k0_relu_argv(void **args);

static const attn_model_symbol symbols[] = {{"S", 16}, {0, 0}};
static const attn_model_kernel kernels[] = {
    {"k0_relu", 1, 1, 0, 0},
    {"copy_y", 1, 1, 0, 0},
};
static int (*const kernel_fns[])(void **) = {k0_relu_argv, 0};

static const attn_model_dim e0_dims[] = {{0, 1, {{0, 1}}}, {4, 0, {{0, 0}}}};
static const attn_model_buffer e0_buffers[] = {
    {ATTN_MODEL_BUFFER_INPUT, 0, ATTN_MODEL_F32, 2, e0_dims, 0u},
    {ATTN_MODEL_BUFFER_TEMP, -1, ATTN_MODEL_F32, 2, e0_dims, 0u},
    {ATTN_MODEL_BUFFER_OUTPUT, 0, ATTN_MODEL_F32, 2, e0_dims, 0u},
};
static const attn_model_tensor e0_inputs[] = {{"x", 0}, {0, 0}};
static const attn_model_tensor e0_outputs[] = {{"y", 2}, {0, 0}};
static const int32_t e0_args0[] = {0, 1};
static const int32_t e0_args1[] = {1, 2};
static const attn_model_step e0_steps[] = {
    {0, 2, e0_args0}, {1, 2, e0_args1}, {0, 0, 0}};
static const attn_model_entry entries[] = {
    {"run", 1, e0_inputs, 1, e0_outputs, 3, e0_buffers, 2, e0_steps},
};

#include "compiler/driver/glue/common.c"
/* In PlanEmitter's order: the API's glue, then device.c, which uses it. */
#if ATTN_CHECK_DEVICE == 1
#include "compiler/driver/glue/cuda.c"

#include "compiler/driver/glue/device.c"
#elif ATTN_CHECK_DEVICE == 2
#include "compiler/driver/glue/opencl.c"

#include "compiler/driver/glue/device.c"
#else
#include "compiler/driver/glue/host.c"
#endif

static const attn_model_desc descriptor = {
    .magic = ATTN_MODEL_MAGIC,
    .abi_version = ATTN_MODEL_ABI_VERSION,
    .compiler_version = "plan_check",
    .model_name = "check",
    .target = "host",
    .num_symbols = 1,
    .symbols = symbols,
    .num_kernels = ATTN_NUM_KERNELS,
    .kernels = kernels,
    .num_entries = 1,
    .entries = entries,
    .run_kernel = run_kernel,
    .set_num_threads = set_num_threads,
    .device = ATTN_DEVICE,
#if ATTN_CHECK_DEVICE
    .device_api = &device_api,
#endif
};

__attribute__((visibility("default"))) const attn_model_desc *
attn_model_descriptor(void) {
  pthread_once(&install_once, install_hooks);
  return &descriptor;
}
