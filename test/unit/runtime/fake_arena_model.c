/*===- test/unit/runtime/fake_arena_model.c - Temps with known lifetimes --===*
 *
 * A hand-written model library whose "run" entry is a chain of temps, so
 * which of them may share memory is known by hand:
 *   step 0  t0 = x + bias                  t0: [S, 4]   lives in steps 0-1
 *   step 1  t1 = [t0; 2 * t0]              t1: [2*S, 4] lives in steps 1-2
 *   step 2  t2[i, c] = t1[i, c % 4] + t1[S + i, (c + 1) % 4]
 *                                          t2: [S, 6]   lives in steps 2-3
 *   step 3  y[i, c] = t2[i, c] * 0.5 + x[i, c % 4]      y: [S, 6]
 * with x: [S, 4], S <= 64: t0 and t2 may share memory, t1 may share with
 * neither. Every kernel refuses a result that overlaps an argument, and
 * temps that are not 64-byte aligned, so a planner that lets live temps
 * share memory fails its call.
 *
 * For the concurrency tests, every kernel call counts itself in an atomic;
 * fake_arena_max_concurrent_calls() (exported) returns the most calls seen
 * at once. Once a test calls fake_arena_await_overlap(n) (exported), until
 * two calls have overlapped, a call waits up to 200 ms for another to begin
 * (at most n calls wait): a runtime that runs calls concurrently is seen to,
 * however the threads are scheduled, and one that serialises them costs
 * the test at most n * 200 ms.
 *
 * Build variants: FAKE_VARIANT=2 (another name and bias); FAKE_DEVICE, a
 * library whose kernels "run on a device" (device CUDA) that
 * is host memory behind a device_api counting its allocations and copies
 * (fake_device_counts, exported): every view its kernels get must be a
 * device view, so the runtime's device path is tested without a GPU; with
 * FAKE_NO_CROP, its device_api lacks the crop functions.
 *
 *===----------------------------------------------------------------------===*/
#define _POSIX_C_SOURCE 200112L
#include "fake_abi.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#ifdef FAKE_DEVICE
#include <stdlib.h>
#include <string.h>

/* A device buffer is 64-byte aligned host memory; its handle its address,
 * its native memory (what an application holds) the address + 1, so a
 * runtime that mixes the two up hands a kernel a misaligned pointer. */
static atomic_int allocs, frees, to_device, to_host, wraps, unwraps, crops,
    released_crops;

__attribute__((visibility("default"))) void fake_device_counts(int *counts) {
  counts[0] = atomic_load(&allocs);
  counts[1] = atomic_load(&frees);
  counts[2] = atomic_load(&to_device);
  counts[3] = atomic_load(&to_host);
  counts[4] = atomic_load(&wraps);
  counts[5] = atomic_load(&unwraps);
  counts[6] = atomic_load(&crops);
  counts[7] = atomic_load(&released_crops);
}

static int32_t device_alloc(attn_model_context *ctx, uint64_t bytes,
                            uint64_t *handle) {
  (void)ctx;
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
    p = NULL;
  *handle = (uint64_t)(uintptr_t)p;
  atomic_fetch_add(&allocs, p != NULL);
  return p ? 0 : -1;
}

static void device_free(attn_model_context *ctx, uint64_t handle) {
  (void)ctx;
  free((void *)(uintptr_t)handle);
  atomic_fetch_add(&frees, 1);
}

static int32_t copy_to_device(attn_model_context *ctx, uint64_t handle,
                              const void *host, uint64_t bytes) {
  (void)ctx;
  memcpy((void *)(uintptr_t)handle, host, bytes);
  atomic_fetch_add(&to_device, 1);
  return 0;
}

static int32_t copy_to_host(attn_model_context *ctx, void *host,
                            uint64_t handle, uint64_t bytes) {
  (void)ctx;
  memcpy(host, (const void *)(uintptr_t)handle, bytes);
  atomic_fetch_add(&to_host, 1);
  return 0;
}

static int32_t synchronize(attn_model_context *ctx) {
  (void)ctx;
  return 0;
}

static int32_t device_wrap(attn_model_context *ctx, uint64_t native,
                           uint64_t *handle) {
  if (native % 64 != 1) {
    snprintf(ctx->error, ctx->error_size, "%#llx is not device memory",
             (unsigned long long)native);
    return -1;
  }
  *handle = native - 1;
  atomic_fetch_add(&wraps, 1);
  return 0;
}

static void device_unwrap(attn_model_context *ctx, uint64_t handle) {
  (void)ctx;
  (void)handle;
  atomic_fetch_add(&unwraps, 1);
}

static uint64_t device_native(uint64_t handle) { return handle + 1; }

static int32_t native_context(attn_model_context *ctx, void **api_context,
                              void **queue) {
  (void)ctx;
  static int the_context;
  *api_context = &the_context;
  *queue = NULL;
  return 0;
}

/* A crop is the address `offset` bytes in; the runtime must keep it 4096
 * aligned. */
static int32_t device_crop(attn_model_context *ctx, uint64_t handle,
                           uint64_t offset, uint64_t bytes, uint64_t *cropped) {
  (void)bytes;
  if (offset % 4096) {
    snprintf(ctx->error, ctx->error_size, "crop at offset %llu",
             (unsigned long long)offset);
    return -1;
  }
  *cropped = handle + offset;
  atomic_fetch_add(&crops, 1);
  return 0;
}

static void device_release_crop(attn_model_context *ctx, uint64_t cropped) {
  (void)ctx;
  (void)cropped;
  atomic_fetch_add(&released_crops, 1);
}

#ifdef FAKE_NO_CROP
#define FAKE_CROP NULL
#define FAKE_RELEASE_CROP NULL
#else
#define FAKE_CROP device_crop
#define FAKE_RELEASE_CROP device_release_crop
#endif
static const attn_model_device_api device_api = {
    device_alloc,   device_free, copy_to_device,   copy_to_host,
    synchronize,    device_wrap, device_unwrap,    device_native,
    native_context, FAKE_CROP,   FAKE_RELEASE_CROP};
#define DATA(v) ((void *)(uintptr_t)(v)->device_handle)
#define FAKE_NAME "fake_device"
#define FAKE_BIAS 0.5f, -1.0f, 2.0f, 0.0f
#elif FAKE_VARIANT == 2
#define FAKE_NAME "fake_arena2"
#define FAKE_BIAS 10.0f, 20.0f, 30.0f, 40.0f
#else
#define FAKE_NAME "fake_arena"
#define FAKE_BIAS 0.5f, -1.0f, 2.0f, 0.0f
#endif

#ifndef DATA
#define DATA(v) ((v)->data)
#endif

static const float constants[16] __attribute__((aligned(64))) = {FAKE_BIAS};

enum { SYM_S };
static const attn_model_symbol symbols[] = {{"S", 64}};

static const attn_model_dim dims_s4[] = {SYM(SYM_S), CONST(4)};
static const attn_model_dim dims_2s4[] = {{0, 1, {{SYM_S, 2}}}, CONST(4)};
static const attn_model_dim dims_s6[] = {SYM(SYM_S), CONST(6)};
static const attn_model_dim dims_4[] = {CONST(4)};

enum { BUF_X, BUF_BIAS, BUF_T0, BUF_T1, BUF_T2, BUF_Y };
static const attn_model_buffer buffers[] = {
    {ATTN_MODEL_BUFFER_INPUT, 0, ATTN_MODEL_F32, 2, dims_s4, 0},
    {ATTN_MODEL_BUFFER_CONSTANT, -1, ATTN_MODEL_F32, 1, dims_4, 0},
    {ATTN_MODEL_BUFFER_TEMP, -1, ATTN_MODEL_F32, 2, dims_s4, 0},
    {ATTN_MODEL_BUFFER_TEMP, -1, ATTN_MODEL_F32, 2, dims_2s4, 0},
    {ATTN_MODEL_BUFFER_TEMP, -1, ATTN_MODEL_F32, 2, dims_s6, 0},
    {ATTN_MODEL_BUFFER_OUTPUT, 0, ATTN_MODEL_F32, 2, dims_s6, 0},
};
static const attn_model_tensor inputs[] = {{"x", BUF_X}};
static const attn_model_tensor outputs[] = {{"y", BUF_Y}};

enum { K_ADD_BIAS, K_DUP, K_FOLD, K_OUT };
static const attn_model_kernel kernels[] = {
    {"add_bias", 2, 1}, {"dup", 1, 1}, {"fold", 1, 1}, {"out", 2, 1}};

static const int32_t args_add_bias[] = {BUF_X, BUF_BIAS, BUF_T0};
static const int32_t args_dup[] = {BUF_T0, BUF_T1};
static const int32_t args_fold[] = {BUF_T1, BUF_T2};
static const int32_t args_out[] = {BUF_T2, BUF_X, BUF_Y};
static const attn_model_step steps[] = {{K_ADD_BIAS, 3, args_add_bias},
                                        {K_DUP, 2, args_dup},
                                        {K_FOLD, 2, args_fold},
                                        {K_OUT, 3, args_out}};

static const attn_model_entry entries[] = {
    {"run", 1, inputs, 1, outputs, 6, buffers, 4, steps}};

static int64_t bytes(const attn_model_view *v) { return 4 * elements(v); }

/* Whether two views' bytes overlap (a planner sharing live memory). */
static int overlap(const attn_model_view *a, const attn_model_view *b) {
  uintptr_t pa = (uintptr_t)DATA(a), pb = (uintptr_t)DATA(b);
  return pa < pb + (uintptr_t)bytes(b) && pb < pa + (uintptr_t)bytes(a);
}

static int shaped(const attn_model_view *v, int64_t rows, int64_t cols) {
  return v->rank == 2 && v->dims[0] == rows && v->dims[1] == cols;
}

static int32_t add_bias(const attn_model_view *a) {
  int64_t s = a[0].dims[0];
  if (!shaped(&a[0], s, 4) || a[1].rank != 1 || !shaped(&a[2], s, 4))
    return fail("add_bias: views of the wrong shape");
  const float *x = DATA(&a[0]), *bias = DATA(&a[1]);
  float *t0 = DATA(&a[2]);
  for (int64_t i = 0; i < s * 4; ++i)
    t0[i] = x[i] + bias[i % 4];
  return 0;
}

static int32_t dup(const attn_model_view *a) {
  int64_t s = a[0].dims[0];
  if (!shaped(&a[0], s, 4) || !shaped(&a[1], 2 * s, 4))
    return fail("dup: views of the wrong shape");
  const float *t0 = DATA(&a[0]);
  float *t1 = DATA(&a[1]);
  for (int64_t i = 0; i < s * 4; ++i) {
    t1[i] = t0[i];
    t1[s * 4 + i] = 2.0f * t0[i];
  }
  return 0;
}

static int32_t fold(const attn_model_view *a) {
  int64_t s = a[1].dims[0];
  if (!shaped(&a[0], 2 * s, 4) || !shaped(&a[1], s, 6))
    return fail("fold: views of the wrong shape");
  const float *t1 = DATA(&a[0]);
  float *t2 = DATA(&a[1]);
  for (int64_t i = 0; i < s; ++i)
    for (int c = 0; c < 6; ++c)
      t2[i * 6 + c] = t1[i * 4 + c % 4] + t1[(s + i) * 4 + (c + 1) % 4];
  return 0;
}

static int32_t out(const attn_model_view *a) {
  int64_t s = a[0].dims[0];
  if (!shaped(&a[0], s, 6) || !shaped(&a[1], s, 4) || !shaped(&a[2], s, 6))
    return fail("out: views of the wrong shape");
  const float *t2 = DATA(&a[0]), *x = DATA(&a[1]);
  float *y = DATA(&a[2]);
  for (int64_t i = 0; i < s; ++i)
    for (int c = 0; c < 6; ++c)
      y[i * 6 + c] = t2[i * 6 + c] * 0.5f + x[i * 4 + c % 4];
  return 0;
}

static atomic_int active, max_active, waits_left;

/* Counts this call among those running now; until two have overlapped,
 * gives another call up to 200 ms to begin. */
static void enter(void) {
  int now = atomic_fetch_add(&active, 1) + 1;
  int seen = atomic_load(&max_active);
  while (now > seen && !atomic_compare_exchange_weak(&max_active, &seen, now))
    ;
  if (atomic_load(&max_active) >= 2 || atomic_fetch_sub(&waits_left, 1) <= 0)
    return;
  struct timespec tenth = {0, 100000};
  for (int i = 0; i < 2000 && atomic_load(&max_active) < 2; ++i)
    nanosleep(&tenth, NULL);
}

__attribute__((visibility("default"))) void fake_arena_await_overlap(int n) {
  atomic_store(&max_active, 0);
  atomic_store(&waits_left, n);
}

__attribute__((visibility("default"))) int
fake_arena_max_concurrent_calls(void) {
  return atomic_load(&max_active);
}

static int32_t call(int32_t kernel, int32_t num_args,
                    const attn_model_view *args) {
  if (kernel < 0 || kernel > K_OUT ||
      num_args != kernels[kernel].num_inputs + kernels[kernel].num_outputs)
    return fail("run_kernel: unknown kernel or wrong argument count");
  /* Which arguments of each kernel are temps: only those are the runtime's
   * to align (the caller's x and y are not). */
  static const unsigned temps[] = {1u << 2, 3u, 3u, 1u};
  for (int32_t i = 0; i < num_args; ++i) {
    if (args[i].dtype != ATTN_MODEL_F32 || !DATA(&args[i]))
      return fail("run_kernel: view of the wrong dtype or without data");
#ifdef FAKE_DEVICE
    if (args[i].device != ATTN_MODEL_DEVICE_CUDA)
      return fail("run_kernel: a host view reached a kernel on the device");
#endif
    if ((temps[kernel] >> i & 1) && (uintptr_t)DATA(&args[i]) % 64)
      return fail("run_kernel: a temp not 64-byte aligned");
  }
  const attn_model_view *result = &args[num_args - 1];
  for (int32_t i = 0; i < num_args - 1; ++i)
    if (overlap(&args[i], result))
      return fail("run_kernel: an argument overlaps the result");
  switch (kernel) {
  case K_ADD_BIAS:
    return add_bias(args);
  case K_DUP:
    return dup(args);
  case K_FOLD:
    return fold(args);
  default:
    return out(args);
  }
}

static int32_t run_kernel(attn_model_context *ctx, int32_t kernel,
                          int32_t num_args, const attn_model_view *args) {
  context = ctx;
  if (!ctx || !ctx->error || ctx->error_size == 0)
    return -1;
  enter();
  int32_t status = call(kernel, num_args, args);
  atomic_fetch_sub(&active, 1);
  return status;
}

static void set_num_threads(int32_t threads) { (void)threads; }

static const attn_model_desc descriptor = {
    .magic = ATTN_MODEL_MAGIC,
    .abi_version = ATTN_MODEL_ABI_VERSION,
    .compiler_version = "fake-compiler 1.0",
    .model_name = FAKE_NAME,
    .target = "host",
    .num_symbols = 1,
    .symbols = symbols,
    .constants = (const uint8_t *)constants,
    .constants_size = sizeof constants,
    .num_kernels = 4,
    .kernels = kernels,
    .num_entries = 1,
    .entries = entries,
    .run_kernel = run_kernel,
    .set_num_threads = set_num_threads,
#ifdef FAKE_DEVICE
    .device = ATTN_MODEL_DEVICE_CUDA,
    .device_api = &device_api,
#endif
};

__attribute__((visibility("default"))) const attn_model_desc *
attn_model_descriptor(void) {
  return &descriptor;
}
