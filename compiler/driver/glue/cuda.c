/*===- compiler/driver/glue/cuda.c - plan.c of a CUDA library -----*- C -*-===*
 *
 * After common.c, before device.c, in the plan.c of a library whose kernels
 * run on CUDA: Halide's CUDA interface, the context the kernels run in, and
 * the application's memory (a CUdeviceptr) as Halide's handle, which for
 * CUDA is that pointer itself.
 *
 * Halide would make a context of its own, in which memory of the
 * application's (cudaMalloc, PyTorch's tensors) is not to be read. The
 * kernels run in the device's primary context instead, the one the CUDA
 * runtime API uses: the driver is opened here as Halide's runtime opens it.
 *
 *===----------------------------------------------------------------------===*/
#include "HalideRuntimeCuda.h"

#include <dlfcn.h>
#include <stdbool.h>

static const struct halide_device_interface_t *device_interface(void) {
  return halide_cuda_device_interface();
}

typedef int (*attn_cu_init_fn)(unsigned int flags);
typedef int (*attn_cu_device_get_fn)(int *device, int ordinal);
typedef int (*attn_cu_primary_ctx_retain_fn)(void **context, int device);

static pthread_mutex_t primary_context_lock = PTHREAD_MUTEX_INITIALIZER;
static void *primary_context;

/* The primary context of the device Halide selects (HL_GPU_DEVICE, else
 * device 0), retained once and kept while the process lives. */
static int retain_primary_context(void *user_context) {
  void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!cuda)
    cuda = dlopen("libcuda.so", RTLD_LAZY | RTLD_LOCAL);
  if (!cuda) {
    set_error((attn_model_context *)user_context,
              "cannot open the CUDA driver (libcuda.so.1): %s", dlerror());
    return halide_error_code_gpu_device_error;
  }
  attn_cu_init_fn cu_init = (attn_cu_init_fn)dlsym(cuda, "cuInit");
  attn_cu_device_get_fn cu_device_get =
      (attn_cu_device_get_fn)dlsym(cuda, "cuDeviceGet");
  attn_cu_primary_ctx_retain_fn retain =
      (attn_cu_primary_ctx_retain_fn)dlsym(cuda, "cuDevicePrimaryCtxRetain_v2");
  if (!retain)
    retain =
        (attn_cu_primary_ctx_retain_fn)dlsym(cuda, "cuDevicePrimaryCtxRetain");
  int ordinal = halide_get_gpu_device(user_context);
  int device = 0, status = -1;
  if (cu_init && cu_device_get && retain && (status = cu_init(0)) == 0 &&
      (status = cu_device_get(&device, ordinal < 0 ? 0 : ordinal)) == 0 &&
      (status = retain(&primary_context, device)) == 0 && primary_context)
    return halide_error_code_success;
  primary_context = NULL;
  set_error((attn_model_context *)user_context,
            "cannot retain the primary context of CUDA device %d (CUresult "
            "%d)",
            ordinal < 0 ? 0 : ordinal, status);
  return halide_error_code_gpu_device_error;
}

static int acquire_primary_context(void *user_context, void **context,
                                   bool create) {
  int result = halide_error_code_success;
  pthread_mutex_lock(&primary_context_lock);
  if (!primary_context && create)
    result = retain_primary_context(user_context);
  *context = primary_context;
  pthread_mutex_unlock(&primary_context_lock);
  return result;
}

static void install_device_hooks(void) {
  halide_set_cuda_acquire_context(acquire_primary_context);
}

/* Kernels launch on the default stream (Halide's). */
static int32_t native_context(attn_model_context *context, void **api_context,
                              void **queue) {
  *queue = NULL;
  return acquire_primary_context(context, api_context, true);
}

static int wrap_native(void *user_context, halide_buffer_t *buf,
                       uint64_t native) {
  return halide_cuda_wrap_device_ptr(user_context, buf, native);
}

static int detach_native(void *user_context, halide_buffer_t *buf) {
  return halide_cuda_detach_device_ptr(user_context, buf);
}

static uint64_t native_of(halide_buffer_t *buf) {
  return halide_cuda_get_device_ptr(NULL, buf);
}
