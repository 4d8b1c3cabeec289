/*===- test/unit/runtime/fake_model.c - A hand-written model library ------===*
 *
 * Implements the model ABI the way attnc output does (one "run" entry,
 * embedded constants), with plain C kernels:
 *   y = x * mask[..., None] + bias     (kernel scale_bias, y a TEMP buffer,
 *                                       bias a CONSTANT)
 *   z = relu(y)                        (kernel relu)
 *   count[b] = #{z[b, ...] > 0}        (kernel count_positive, an I32 output)
 * with x: [B, S, 4], mask: [B, S], B <= 8, S <= 16. Each kernel checks the
 * views it is given, so a runtime that passes wrong views fails the tests.
 *
 * Build variants: FAKE_VARIANT=2 (another name and bias), FAKE_DEVICE_FIELD
 * (a value in the device field), FAKE_PRECISION_FIELD (in the precision
 * field), FAKE_ABI_VERSION,
 * FAKE_MAGIC, FAKE_BAD_CONSTANT_OFFSET (a constant outside the block), and
 * corrupt tables: FAKE_NO_RUN_ENTRY, FAKE_WRITES_CONSTANT (a "run" step
 * writes a constant), FAKE_UNBOUND_SYMBOL (a temp dim no input binds).
 *
 *===----------------------------------------------------------------------===*/
#include "fake_abi.h"

#include <math.h>
#include <stdio.h>

#ifndef FAKE_ABI_VERSION
#define FAKE_ABI_VERSION ATTN_MODEL_ABI_VERSION
#endif
#ifndef FAKE_MAGIC
#define FAKE_MAGIC ATTN_MODEL_MAGIC
#endif
#ifndef FAKE_BAD_CONSTANT_OFFSET
#define FAKE_CONSTANT_OFFSET 0
#else
#define FAKE_CONSTANT_OFFSET 64
#endif
#ifdef FAKE_NO_RUN_ENTRY
#define FAKE_ENTRY_NAME "main"
#else
#define FAKE_ENTRY_NAME "run"
#endif

#if FAKE_VARIANT == 2
#define FAKE_NAME "fake2"
#define FAKE_BIAS 10.0f, 20.0f, 30.0f, 40.0f
#else
#define FAKE_NAME "fake"
#define FAKE_BIAS 0.5f, -1.0f, 2.0f, 0.0f
#endif

static int num_threads;

static const float constants[16] __attribute__((aligned(64))) = {FAKE_BIAS};

enum { SYM_B, SYM_S, SYM_T };
static const attn_model_symbol symbols[] = {{"B", 8}, {"S", 16}, {"T", 0}};

static const attn_model_dim dims_bsc[] = {SYM(SYM_B), SYM(SYM_S), CONST(4)};
static const attn_model_dim dims_bs[] = {SYM(SYM_B), SYM(SYM_S)};
static const attn_model_dim dims_c[] = {CONST(4)};
static const attn_model_dim dims_b[] = {SYM(SYM_B)};
#ifdef FAKE_UNBOUND_SYMBOL
static const attn_model_dim dims_temp[] = {SYM(SYM_B), SYM(SYM_T), CONST(4)};
#else
#define dims_temp dims_bsc
#endif

enum { BUF_X, BUF_MASK, BUF_BIAS, BUF_Y, BUF_Z, BUF_COUNT };
static const attn_model_buffer buffers[] = {
    {ATTN_MODEL_BUFFER_INPUT, 0, ATTN_MODEL_F32, 3, dims_bsc, 0},
    {ATTN_MODEL_BUFFER_INPUT, 1, ATTN_MODEL_F32, 2, dims_bs, 0},
    {ATTN_MODEL_BUFFER_CONSTANT, -1, ATTN_MODEL_F32, 1, dims_c,
     FAKE_CONSTANT_OFFSET},
    {ATTN_MODEL_BUFFER_TEMP, -1, ATTN_MODEL_F32, 3, dims_temp, 0},
    {ATTN_MODEL_BUFFER_OUTPUT, 0, ATTN_MODEL_F32, 3, dims_bsc, 0},
    {ATTN_MODEL_BUFFER_OUTPUT, 1, ATTN_MODEL_I32, 1, dims_b, 0},
};

static const attn_model_tensor inputs[] = {{"x", BUF_X}, {"mask", BUF_MASK}};
static const attn_model_tensor outputs[] = {{"z", BUF_Z}, {"count", BUF_COUNT}};

enum { K_SCALE_BIAS, K_RELU, K_COUNT };
/* scale_bias: a multiply and an add per element, 8 per [.., 4] row. */
static const attn_model_flop_term scale_bias_flops[] = {
    {8.0, 2, {SYM_B, SYM_S}}};
static const attn_model_kernel kernels[] = {
    {"scale_bias", 3, 1, 1, scale_bias_flops},
    {"relu", 1, 1, 0, 0},
    {"count_positive", 1, 1, 0, 0}};

static const int32_t args_scale_bias[] = {BUF_X, BUF_MASK, BUF_BIAS, BUF_Y};
#ifdef FAKE_WRITES_CONSTANT
static const int32_t args_relu[] = {BUF_Y, BUF_BIAS};
#else
static const int32_t args_relu[] = {BUF_Y, BUF_Z};
#endif
static const int32_t args_count[] = {BUF_Z, BUF_COUNT};
static const attn_model_step steps[] = {{K_SCALE_BIAS, 4, args_scale_bias},
                                        {K_RELU, 2, args_relu},
                                        {K_COUNT, 2, args_count}};

static const attn_model_entry entries[] = {
    {FAKE_ENTRY_NAME, 2, inputs, 2, outputs, 6, buffers, 3, steps}};

static int32_t scale_bias(const attn_model_view *a) {
  const attn_model_view *x = &a[0], *mask = &a[1], *bias = &a[2], *y = &a[3];
  if (x->rank != 3 || mask->rank != 2 || bias->rank != 1 || y->rank != 3 ||
      x->dims[2] != 4 || bias->dims[0] != 4 || x->dims[0] != mask->dims[0] ||
      x->dims[1] != mask->dims[1] || elements(x) != elements(y))
    return fail("scale_bias: views of the wrong shape");
  int64_t rows = elements(mask);
  const float *xp = x->data, *mp = mask->data, *bp = bias->data;
  float *yp = y->data;
  for (int64_t r = 0; r < rows; ++r) {
    if (isnan(mp[r]))
      return fail("scale_bias: mask contains NaN");
    for (int c = 0; c < 4; ++c)
      yp[r * 4 + c] = xp[r * 4 + c] * mp[r] + bp[c];
  }
  return 0;
}

static int32_t relu(const attn_model_view *a) {
  if (elements(&a[0]) != elements(&a[1]))
    return fail("relu: views of different sizes");
  const float *y = a[0].data;
  float *z = a[1].data;
  for (int64_t i = 0, n = elements(&a[0]); i < n; ++i)
    z[i] = y[i] > 0.0f ? y[i] : 0.0f;
  return 0;
}

static int32_t count_positive(const attn_model_view *a) {
  const attn_model_view *z = &a[0], *count = &a[1];
  if (z->rank != 3 || count->rank != 1 || count->dtype != ATTN_MODEL_I32 ||
      count->dims[0] != z->dims[0])
    return fail("count_positive: views of the wrong shape");
  int64_t per = z->dims[1] * z->dims[2];
  const float *zp = z->data;
  int32_t *cp = count->data;
  for (int64_t b = 0; b < z->dims[0]; ++b) {
    cp[b] = 0;
    for (int64_t i = 0; i < per; ++i)
      cp[b] += zp[b * per + i] > 0.0f;
  }
  return 0;
}

static int32_t run_kernel(attn_model_context *ctx, int32_t kernel,
                          int32_t num_args, const attn_model_view *args) {
  context = ctx;
  if (!ctx || !ctx->error || ctx->error_size == 0)
    return -1;
  if (kernel < 0 || kernel > K_COUNT ||
      num_args != kernels[kernel].num_inputs + kernels[kernel].num_outputs)
    return fail("run_kernel: unknown kernel or wrong argument count");
  for (int32_t i = 0; i < num_args; ++i) {
    if (args[i].dtype !=
        (kernel == K_COUNT && i == 1 ? ATTN_MODEL_I32 : ATTN_MODEL_F32))
      return fail("run_kernel: view of the wrong dtype");
    if (args[i].device != ATTN_MODEL_DEVICE_HOST || args[i].device_handle)
      return fail("run_kernel: a view not on the host");
  }
  switch (kernel) {
  case K_SCALE_BIAS:
    return scale_bias(args);
  case K_RELU:
    return relu(args);
  default:
    return count_positive(args);
  }
}

static void set_num_threads(int32_t threads) { num_threads = threads; }

static const attn_model_desc descriptor = {
    .magic = FAKE_MAGIC,
    .abi_version = FAKE_ABI_VERSION,
    .compiler_version = "fake-compiler 1.0",
    .model_name = FAKE_NAME,
    .target = "host",
    .num_symbols = 3,
    .symbols = symbols,
    .constants = (const uint8_t *)constants,
    .constants_size = sizeof constants,
    .num_kernels = 3,
    .kernels = kernels,
    .num_entries = 1,
    .entries = entries,
    .run_kernel = run_kernel,
    .set_num_threads = set_num_threads,
#ifdef FAKE_DEVICE_FIELD
    .device = FAKE_DEVICE_FIELD,
#endif
#ifdef FAKE_PRECISION_FIELD
    .precision = FAKE_PRECISION_FIELD,
#endif
};

__attribute__((visibility("default"))) const attn_model_desc *
attn_model_descriptor(void) {
  return &descriptor;
}
