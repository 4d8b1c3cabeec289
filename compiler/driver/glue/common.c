/*===- compiler/driver/glue/common.c - plan.c's fixed part --------*- C -*-===*
 *
 * Pasted by attnc (PlanEmitter.cpp) into the plan.c of every model library,
 * after the generated tables and before the device's glue (host.c, or cuda.c
 * or opencl.c then device.c) and the generated descriptor: run_kernel turns
 * the runtime's views into halide_buffer_t, calls the kernel's `_argv`
 * entry with the call's context as Halide's user context, and puts errors
 * into that context; the copy kernel; the Halide thread pool's size.
 *
 * What plan.c defines before it:
 *   ATTN_MAX_RANK, ATTN_MAX_ARGS  the most dims of a buffer and arguments of
 *                                 a kernel in the plan
 *   ATTN_HALF_AS_BITS             1 when the kernels take bf16 and f16 as
 *                                 uint16 (codegen/HalfBits.h)
 *   ATTN_DEVICE                   the attn_model_device the kernels run on
 *   ATTN_NUM_KERNELS, kernels[]   the descriptor's kernel table
 *   kernel_fns[]                  each kernel's `_argv` entry, NULL for a
 *                                 copy
 * plan_check.c is such a plan.c, which the build compiles with warnings as
 * errors for every device.
 *
 *===----------------------------------------------------------------------===*/
#include "attn/model_abi.h"

#include "HalideRuntime.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The device's Halide interface, NULL on the host, and what it must set up
 * once before the first kernel: defined by the device's glue. */
static const struct halide_device_interface_t *device_interface(void);
static void install_device_hooks(void);

__attribute__((format(printf, 2, 3))) static void
set_error(attn_model_context *context, const char *format, ...) {
  va_list args;
  if (!context || !context->error || context->error_size == 0)
    return;
  va_start(args, format);
  vsnprintf(context->error, context->error_size, format, args);
  va_end(args);
}

/* Kernels are compiled with Halide's user context: the call's context. */
static void on_halide_error(void *user_context, const char *message) {
  set_error((attn_model_context *)user_context, "%s", message);
}

/* Halide keeps the threads its pool has made: a smaller count set after the
 * first kernel ran (the "init" entry, at load) would not take effect. The
 * pool is shut down first and made again, of the new size, by the next
 * kernel. The runtime calls this only while no kernel of the model runs. */
static void set_num_threads(int32_t threads) {
  halide_shutdown_thread_pool();
  halide_set_num_threads(threads);
}

/* Device memory through Halide's device interface, in 1-D byte buffers
 * whose `device` field is the handle the runtime keeps. */
static void byte_buffer(halide_buffer_t *buf, halide_dimension_t *dim,
                        uint64_t handle, void *host, uint64_t bytes) {
  memset(buf, 0, sizeof *buf);
  memset(dim, 0, sizeof *dim);
  dim->extent = (int32_t)bytes;
  dim->stride = 1;
  buf->type.code = halide_type_uint;
  buf->type.bits = 8;
  buf->type.lanes = 1;
  buf->dimensions = 1;
  buf->dim = dim;
  buf->host = (uint8_t *)host;
  buf->device = handle;
  buf->device_interface = handle ? device_interface() : NULL;
}

static int32_t too_large(attn_model_context *context, uint64_t bytes) {
  if (bytes <= INT32_MAX)
    return 0;
  set_error(context,
            "a device buffer of %llu bytes is over the 2 GiB this "
            "library's buffers may have",
            (unsigned long long)bytes);
  return -1;
}

static int32_t copy_on_device(attn_model_context *context, uint64_t to,
                              uint64_t from, uint64_t bytes) {
  halide_buffer_t src, dst;
  halide_dimension_t src_dim, dst_dim;
  if (too_large(context, bytes))
    return -1;
  byte_buffer(&src, &src_dim, from, NULL, bytes);
  byte_buffer(&dst, &dst_dim, to, NULL, bytes);
  return halide_buffer_copy(context, &src, device_interface(), &dst);
}

/* Dense row-major views become halide_buffer_ts, whose dim 0 is
 * innermost. */
static int32_t to_halide(attn_model_context *context, int32_t kernel,
                         int32_t num_args, const attn_model_view *views,
                         halide_buffer_t *bufs,
                         halide_dimension_t (*dims)[ATTN_MAX_RANK],
                         void **argv) {
  for (int32_t a = 0; a < num_args; ++a) {
    const attn_model_view *v = &views[a];
    const attn_dtype_desc *dtype = attn_dtype_lookup(v->dtype);
    if (v->rank < 0 || v->rank > ATTN_MAX_RANK || !dtype ||
        (v->device != ATTN_MODEL_DEVICE_HOST && v->device != ATTN_DEVICE) ||
        (v->device != ATTN_MODEL_DEVICE_HOST && !v->device_handle)) {
      set_error(context,
                "kernel '%s' argument %d has rank %d, dtype %d or device %d, "
                "which this library does not handle",
                kernels[kernel].name, (int)a, (int)v->rank, (int)v->dtype,
                (int)v->device);
      return -1;
    }
    int64_t stride = 1;
    for (int32_t d = 0; d < v->rank; ++d) {
      int64_t extent = v->dims[v->rank - 1 - d];
      if (extent < 0 || extent > INT32_MAX || stride > INT32_MAX) {
        set_error(context,
                  "kernel '%s' argument %d is too large for Halide's 32-bit "
                  "extents and strides",
                  kernels[kernel].name, (int)a);
        return -1;
      }
      dims[a][d].min = 0;
      dims[a][d].extent = (int32_t)extent;
      dims[a][d].stride = (int32_t)stride;
      dims[a][d].flags = 0;
      stride *= extent;
    }
    memset(&bufs[a], 0, sizeof bufs[a]);
    bufs[a].host = (uint8_t *)v->data;
    if (v->device == ATTN_MODEL_DEVICE_HOST) {
      /* The host holds the data: a GPU kernel copies it to the device (all
       * of it, outputs too: a KV cache is written in place, row by row). */
      bufs[a].flags = halide_buffer_flag_host_dirty;
    } else {
      /* On the device; a host copy, if any, holds the same data. */
      bufs[a].device = v->device_handle;
      bufs[a].device_interface = device_interface();
    }
    bufs[a].type.code = (halide_type_code_t)dtype->halide_code;
    /* Kernels built for a target without half types read bf16 and f16 as
     * their bits. */
    if (ATTN_HALF_AS_BITS && dtype->size == 2)
      bufs[a].type.code = halide_type_uint;
    bufs[a].type.bits = (uint8_t)(dtype->size * 8);
    bufs[a].type.lanes = 1;
    bufs[a].dimensions = v->rank;
    bufs[a].dim = dims[a];
    argv[a] = &bufs[a];
  }
  return 0;
}

/* A GPU kernel leaves its outputs on the device and a device allocation on
 * every host view: those outputs come back to the host, then those
 * allocations are released. Views on the device stay as they are. Nothing
 * to do for CPU kernels. */
static int32_t finish_on_host(attn_model_context *context, int32_t kernel,
                              int32_t num_args, const attn_model_view *views,
                              halide_buffer_t *bufs, int32_t result) {
  for (int32_t a = 0; a < num_args; ++a) {
    if (views[a].device != ATTN_MODEL_DEVICE_HOST || !bufs[a].device)
      continue;
    if (result == 0 && a >= kernels[kernel].num_inputs)
      result = halide_copy_to_host(context, &bufs[a]);
    halide_device_free(context, &bufs[a]);
  }
  return result;
}

static int64_t num_elements(const attn_model_view *v) {
  int64_t n = 1;
  for (int32_t d = 0; d < v->rank; ++d)
    n *= v->dims[d];
  return n;
}

/* Outputs that are not kernel results: args[0] copied to args[1], on the
 * host or on the device. */
static int32_t copy_tensor(attn_model_context *context, int32_t kernel,
                           const attn_model_view *args) {
  int64_t n = num_elements(&args[0]);
  if (args[0].dtype != args[1].dtype || n != num_elements(&args[1]) ||
      args[0].device != args[1].device) {
    set_error(context,
              "kernel '%s' copies between tensors of different size, dtype "
              "or device",
              kernels[kernel].name);
    return -1;
  }
  uint64_t bytes = (uint64_t)n * attn_dtype_lookup(args[0].dtype)->size;
  if (n > 0 && args[0].device != ATTN_MODEL_DEVICE_HOST)
    return copy_on_device(context, args[1].device_handle, args[0].device_handle,
                          bytes);
  if (n > 0)
    memcpy(args[1].data, args[0].data, (size_t)bytes);
  return 0;
}

static int32_t run_kernel(attn_model_context *context, int32_t kernel,
                          int32_t num_args, const attn_model_view *args) {
  halide_buffer_t bufs[ATTN_MAX_ARGS];
  halide_dimension_t dims[ATTN_MAX_ARGS][ATTN_MAX_RANK];
  /* argv[0] points at the user context, then one buffer per argument. */
  void *argv[ATTN_MAX_ARGS + 1];
  void *user_context = context;
  int result;
  if (context && context->error && context->error_size)
    context->error[0] = 0;
  if (kernel < 0 || kernel >= ATTN_NUM_KERNELS ||
      num_args != kernels[kernel].num_inputs + kernels[kernel].num_outputs) {
    set_error(context, "run_kernel: no kernel %d taking %d arguments",
              (int)kernel, (int)num_args);
    return -1;
  }
  if (to_halide(context, kernel, num_args, args, bufs, dims, argv + 1) != 0)
    return -1;
  argv[0] = &user_context;
  if (!kernel_fns[kernel])
    return copy_tensor(context, kernel, args);
  result = kernel_fns[kernel](argv);
  result = finish_on_host(context, kernel, num_args, args, bufs, result);
  if (result != 0 && context && context->error && context->error_size &&
      !context->error[0])
    set_error(context, "kernel '%s' failed with Halide error %d",
              kernels[kernel].name, result);
  return result;
}

static pthread_once_t install_once = PTHREAD_ONCE_INIT;

/* Once per process, before the first kernel: the descriptor's entry. */
static void install_hooks(void) {
  halide_set_error_handler(on_halide_error);
  install_device_hooks();
}
