/*===- test/unit/runtime/fake_weights_model.c - Weights read at load ------===*
 *
 * A hand-written model library that reads its weights at load, the way attnc
 * builds one without --weights: a weights table ("bias" F32 [4], "scale" F32
 * [4]), an "init" entry that computes the constants block from them, and a
 * "run" entry that reads a constant and a weight directly:
 *   init:  c = 2 * bias, s = scale     (kernel prepare, c and s CONSTANTs)
 *   run:   t = x * scale + c + u       (kernel affine, t a TEMP [2*S, 2])
 *          y = t, p = [c; t]           (kernel pad, y: [S, 4], p: [S + 1, 4])
 * with x: [S, 4], u: [2*S, 2] (an input dim the runtime computes and
 * checks), S <= 16. prepare refuses a NaN in bias, so a weights file
 * holding one fails the load. Every kernel checks its views (dims, host
 * device, alignment), so a runtime that passes wrong views fails the tests.
 *
 * Build variants: FAKE_INIT_ONLY ("run" reads the copy s instead of the
 * weight, so the runtime may unmap the file after init), FAKE_WITH_STATE (a
 * state table, which no entry uses), FAKE_WITH_DECODE (the state and a
 * "decode" entry with inputs of its own, x and position, and no steps: the
 * entry-input queries and checks), FAKE_BAD_LAYOUT (bias, an F32 vector,
 * says it is a quantized matrix stored [in, out]).
 *
 *===----------------------------------------------------------------------===*/
#include "fake_abi.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { SYM_S };
static const attn_model_symbol symbols[] = {{"S", 16}};

static const int64_t weight_dims[] = {4};
enum { W_BIAS, W_SCALE };
#ifdef FAKE_BAD_LAYOUT
#define FAKE_BIAS_LAYOUT ATTN_MODEL_WEIGHT_IN_OUT
#else
#define FAKE_BIAS_LAYOUT ATTN_MODEL_WEIGHT_ANY
#endif
static const attn_model_weight weights[] = {
    {"bias", ATTN_MODEL_F32, 1, weight_dims, FAKE_BIAS_LAYOUT},
    {"scale", ATTN_MODEL_F32, 1, weight_dims, ATTN_MODEL_WEIGHT_ANY}};

static const attn_model_dim dims_4[] = {CONST(4)};
static const attn_model_dim dims_s4[] = {SYM(SYM_S), CONST(4)};
static const attn_model_dim dims_2s2[] = {{0, 1, {{SYM_S, 2}}}, CONST(2)};
static const attn_model_dim dims_s1_4[] = {{1, 1, {{SYM_S, 1}}}, CONST(4)};

enum { K_PREPARE, K_AFFINE, K_PAD };
static const attn_model_kernel kernels[] = {
    {"prepare", 2, 2}, {"affine", 4, 1}, {"pad", 2, 2}};

/* init: weights bias and scale in, constants c (offset 0), s (offset 64). */
enum { I_BIAS, I_SCALE, I_C, I_S };
static const attn_model_buffer init_buffers[] = {
    {ATTN_MODEL_BUFFER_WEIGHT, W_BIAS, ATTN_MODEL_F32, 1, dims_4, 0},
    {ATTN_MODEL_BUFFER_WEIGHT, W_SCALE, ATTN_MODEL_F32, 1, dims_4, 0},
    {ATTN_MODEL_BUFFER_CONSTANT, -1, ATTN_MODEL_F32, 1, dims_4, 0},
    {ATTN_MODEL_BUFFER_CONSTANT, -1, ATTN_MODEL_F32, 1, dims_4, 64},
};
static const int32_t init_args[] = {I_BIAS, I_SCALE, I_C, I_S};
static const attn_model_step init_steps[] = {{K_PREPARE, 4, init_args}};

enum { R_X, R_U, R_SCALE, R_C, R_T, R_Y, R_P };
static const attn_model_buffer run_buffers[] = {
    {ATTN_MODEL_BUFFER_INPUT, 0, ATTN_MODEL_F32, 2, dims_s4, 0},
    {ATTN_MODEL_BUFFER_INPUT, 1, ATTN_MODEL_F32, 2, dims_2s2, 0},
#ifdef FAKE_INIT_ONLY
    {ATTN_MODEL_BUFFER_CONSTANT, -1, ATTN_MODEL_F32, 1, dims_4, 64},
#else
    {ATTN_MODEL_BUFFER_WEIGHT, W_SCALE, ATTN_MODEL_F32, 1, dims_4, 0},
#endif
    {ATTN_MODEL_BUFFER_CONSTANT, -1, ATTN_MODEL_F32, 1, dims_4, 0},
    {ATTN_MODEL_BUFFER_TEMP, -1, ATTN_MODEL_F32, 2, dims_2s2, 0},
    {ATTN_MODEL_BUFFER_OUTPUT, 0, ATTN_MODEL_F32, 2, dims_s4, 0},
    {ATTN_MODEL_BUFFER_OUTPUT, 1, ATTN_MODEL_F32, 2, dims_s1_4, 0},
};
static const attn_model_tensor run_inputs[] = {{"x", R_X}, {"u", R_U}};
static const attn_model_tensor run_outputs[] = {{"y", R_Y}, {"p", R_P}};
static const int32_t affine_args[] = {R_X, R_U, R_SCALE, R_C, R_T};
static const int32_t pad_args[] = {R_T, R_C, R_Y, R_P};
static const attn_model_step run_steps[] = {{K_AFFINE, 5, affine_args},
                                            {K_PAD, 4, pad_args}};

#ifdef FAKE_WITH_DECODE
#define FAKE_WITH_STATE
/* decode: x [S, 4] and position [4] in, y [S, 4] out; the state binds S. */
enum { D_X, D_POSITION, D_Y, D_STATE };
static const attn_model_buffer decode_buffers[] = {
    {ATTN_MODEL_BUFFER_INPUT, 0, ATTN_MODEL_F32, 2, dims_s4, 0},
    {ATTN_MODEL_BUFFER_INPUT, 1, ATTN_MODEL_I32, 1, dims_4, 0},
    {ATTN_MODEL_BUFFER_OUTPUT, 0, ATTN_MODEL_F32, 2, dims_s4, 0},
    {ATTN_MODEL_BUFFER_STATE, 0, ATTN_MODEL_F32, 2, dims_s4, 0},
};
static const attn_model_tensor decode_inputs[] = {{"x", D_X},
                                                  {"position", D_POSITION}};
static const attn_model_tensor decode_outputs[] = {{"y", D_Y}};
#define FAKE_NUM_ENTRIES 3
#else
#define FAKE_NUM_ENTRIES 2
#endif

static const attn_model_entry entries[] = {
    {"init", 0, NULL, 0, NULL, 4, init_buffers, 1, init_steps},
    {"run", 2, run_inputs, 2, run_outputs, 7, run_buffers, 2, run_steps},
#ifdef FAKE_WITH_DECODE
    {"decode", 2, decode_inputs, 1, decode_outputs, 4, decode_buffers, 0, NULL},
#endif
};

#ifdef FAKE_WITH_STATE
static const attn_model_state states[] = {
    {"cache", ATTN_MODEL_F32, 2, dims_s4}};
#define FAKE_NUM_STATES 1
#else
static const attn_model_state *const states = NULL;
#define FAKE_NUM_STATES 0
#endif

static int is_vec4(const attn_model_view *v) {
  return v->rank == 1 && v->dims[0] == 4;
}

static int32_t prepare(const attn_model_view *a) {
  const attn_model_view *bias = &a[0], *scale = &a[1], *c = &a[2], *s = &a[3];
  if (!is_vec4(bias) || !is_vec4(scale) || !is_vec4(c) || !is_vec4(s))
    return fail("prepare: views of the wrong shape");
  if ((uintptr_t)c->data % 64 || (uintptr_t)s->data % 64)
    return fail("prepare: constants not 64-byte aligned");
  const float *bp = bias->data;
  float *cp = c->data;
  for (int i = 0; i < 4; ++i) {
    if (isnan(bp[i]))
      return fail("prepare: bias contains NaN");
    cp[i] = 2.0f * bp[i];
  }
  memcpy(s->data, scale->data, 4 * sizeof(float));
  return 0;
}

static int32_t affine(const attn_model_view *a) {
  const attn_model_view *x = &a[0], *u = &a[1], *scale = &a[2], *c = &a[3],
                        *t = &a[4];
  if (x->rank != 2 || x->dims[1] != 4 || !is_vec4(scale) || !is_vec4(c) ||
      t->rank != 2 || t->dims[0] != 2 * x->dims[0] || t->dims[1] != 2 ||
      u->rank != 2 || u->dims[0] != t->dims[0] || u->dims[1] != 2)
    return fail("affine: views of the wrong shape");
  const float *xp = x->data, *up = u->data, *sp = scale->data, *cp = c->data;
  float *tp = t->data;
  for (int64_t i = 0; i < x->dims[0] * 4; ++i)
    tp[i] = xp[i] * sp[i % 4] + cp[i % 4] + up[i];
  return 0;
}

static int32_t pad(const attn_model_view *a) {
  const attn_model_view *t = &a[0], *c = &a[1], *y = &a[2], *p = &a[3];
  if (t->rank != 2 || !is_vec4(c) || y->rank != 2 || p->rank != 2 ||
      y->dims[0] * 2 != t->dims[0] || p->dims[0] != y->dims[0] + 1 ||
      y->dims[1] != 4 || p->dims[1] != 4)
    return fail("pad: views of the wrong shape");
  int64_t n = y->dims[0] * 4;
  memcpy(y->data, t->data, (size_t)n * sizeof(float));
  memcpy(p->data, c->data, 4 * sizeof(float));
  memcpy((float *)p->data + 4, t->data, (size_t)n * sizeof(float));
  return 0;
}

static int32_t run_kernel(attn_model_context *ctx, int32_t kernel,
                          int32_t num_args, const attn_model_view *args) {
  context = ctx;
  if (!ctx || !ctx->error || ctx->error_size == 0)
    return -1;
  if (kernel < 0 || kernel > K_PAD ||
      num_args != kernels[kernel].num_inputs + kernels[kernel].num_outputs)
    return fail("run_kernel: unknown kernel or wrong argument count");
  for (int32_t i = 0; i < num_args; ++i) {
    if (args[i].dtype != ATTN_MODEL_F32)
      return fail("run_kernel: view of the wrong dtype");
    if (args[i].device != ATTN_MODEL_DEVICE_HOST || args[i].device_handle)
      return fail("run_kernel: a view not on the host");
    if ((uintptr_t)args[i].data % sizeof(float))
      return fail("run_kernel: a view misaligned for its dtype");
  }
  switch (kernel) {
  case K_PREPARE:
    return prepare(args);
  case K_AFFINE:
    return affine(args);
  default:
    return pad(args);
  }
}

static void set_num_threads(int32_t threads) { (void)threads; }

static const attn_model_desc descriptor = {
    .magic = ATTN_MODEL_MAGIC,
    .abi_version = ATTN_MODEL_ABI_VERSION,
    .compiler_version = "fake-compiler 1.0",
    .model_name = "fake_weights",
    .target = "host",
    .num_symbols = 1,
    .symbols = symbols,
    .num_weights = 2,
    .weights = weights,
    .num_states = FAKE_NUM_STATES,
    .states = states,
    .constants = NULL,
    .constants_size = 128,
    .num_kernels = 3,
    .kernels = kernels,
    .num_entries = FAKE_NUM_ENTRIES,
    .entries = entries,
    .run_kernel = run_kernel,
    .set_num_threads = set_num_threads,
};

__attribute__((visibility("default"))) const attn_model_desc *
attn_model_descriptor(void) {
  return &descriptor;
}
