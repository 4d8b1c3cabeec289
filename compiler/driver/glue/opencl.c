/*===- compiler/driver/glue/opencl.c - plan.c of an OpenCL library -*- C -*-===*
 *
 * After common.c, before device.c, in the plan.c of a library whose kernels
 * run on OpenCL: Halide's OpenCL interface, the context and queue the
 * kernels run in, and the application's memory (a cl_mem) as a handle of
 * Halide's, which wraps it. The library's cl_context, which Halide makes, is
 * the one the application's memory must be made in.
 *
 *===----------------------------------------------------------------------===*/
#include "HalideRuntimeOpenCL.h"

#include <stdbool.h>

/* Halide's OpenCL runtime defines them; its header does not declare them. */
extern int halide_acquire_cl_context(void *user_context, void **context,
                                     void **queue, bool create);
extern int halide_release_cl_context(void *user_context);

static const struct halide_device_interface_t *device_interface(void) {
  return halide_opencl_device_interface();
}

static void install_device_hooks(void) {}

static int32_t native_context(attn_model_context *context, void **api_context,
                              void **queue) {
  int result = halide_acquire_cl_context(context, api_context, queue, true);
  if (result == 0)
    halide_release_cl_context(context);
  return result;
}

static int wrap_native(void *user_context, halide_buffer_t *buf,
                       uint64_t native) {
  return halide_opencl_wrap_cl_mem(user_context, buf, native);
}

static int detach_native(void *user_context, halide_buffer_t *buf) {
  return halide_opencl_detach_cl_mem(user_context, buf);
}

static uint64_t native_of(halide_buffer_t *buf) {
  return halide_opencl_get_cl_mem(NULL, buf);
}
