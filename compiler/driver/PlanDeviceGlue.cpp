//===- compiler/driver/PlanDeviceGlue.cpp - plan.c's GPU part -------------===//
#include "compiler/driver/PlanDeviceGlue.h"

#include "attn/model_abi.h"

#include "llvm/ADT/StringRef.h"

namespace attnc::driver {
namespace {

/// CUDA: Halide would make a context of its own, in which memory of the
/// application's (cudaMalloc, PyTorch's tensors) is not to be read. The
/// kernels run in the device's primary context instead, the one the CUDA
/// runtime API uses: the driver is opened here as Halide's runtime opens it.
constexpr llvm::StringLiteral kCudaGlue = R"c(
#include <dlfcn.h>
#include <stdbool.h>

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
    retain = (attn_cu_primary_ctx_retain_fn)dlsym(cuda,
                                                  "cuDevicePrimaryCtxRetain");
  int ordinal = halide_get_gpu_device(user_context);
  int device = 0, status = -1;
  if (cu_init && cu_device_get && retain && (status = cu_init(0)) == 0 &&
      (status = cu_device_get(&device, ordinal < 0 ? 0 : ordinal)) == 0 &&
      (status = retain(&primary_context, device)) == 0 && primary_context)
    return halide_error_code_success;
  primary_context = NULL;
  set_error((attn_model_context *)user_context,
            "cannot retain the primary context of CUDA device %d (CUresult "
            "%d)", ordinal < 0 ? 0 : ordinal, status);
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
)c";

/// OpenCL: the library's cl_context, which Halide makes, is the one
/// the application's memory must be made in.
constexpr llvm::StringLiteral kOpenClGlue = R"c(
#include <stdbool.h>

/* Halide's OpenCL runtime defines them; its header does not declare them. */
extern int halide_acquire_cl_context(void *user_context, void **context,
                                     void **queue, bool create);
extern int halide_release_cl_context(void *user_context);

static void install_device_hooks(void) {}

static int32_t native_context(attn_model_context *context, void **api_context,
                              void **queue) {
  int result = halide_acquire_cl_context(context, api_context, queue, true);
  if (result == 0)
    halide_release_cl_context(context);
  return result;
}
)c";

/// Either API: the application's memory as a handle and back, through the
/// API's functions that emitDeviceInterface names (a CUdeviceptr is Halide's
/// CUDA handle itself; its OpenCL handle wraps a cl_mem).
constexpr llvm::StringLiteral kNativeGlue = R"c(
static int32_t device_wrap(attn_model_context *context, uint64_t native,
                           uint64_t *handle) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, 0, NULL, 0);
  int result = ATTN_WRAP_NATIVE(context, &buf, native);
  *handle = buf.device;
  return result;
}

static void device_unwrap(attn_model_context *context, uint64_t handle) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, handle, NULL, 0);
  ATTN_DETACH_NATIVE(context, &buf);
}

static uint64_t device_native(uint64_t handle) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, handle, NULL, 0);
  return ATTN_NATIVE_OF(NULL, &buf);
}
)c";

/// What differs between the APIs in Halide's runtime: its header, its
/// functions' prefix, and how it takes and gives native memory.
struct ApiGlue {
  const char *header, *name, *wrap, *detach, *native;
};

const ApiGlue *apiGlue(int32_t device) {
  static const ApiGlue cuda{"Cuda", "cuda", "halide_cuda_wrap_device_ptr",
                            "halide_cuda_detach_device_ptr",
                            "halide_cuda_get_device_ptr"};
  static const ApiGlue opencl{"OpenCL", "opencl", "halide_opencl_wrap_cl_mem",
                              "halide_opencl_detach_cl_mem",
                              "halide_opencl_get_cl_mem"};
  return device == ATTN_MODEL_DEVICE_CUDA     ? &cuda
         : device == ATTN_MODEL_DEVICE_OPENCL ? &opencl
                                              : nullptr;
}

} // namespace

void emitDeviceInterface(int32_t device, llvm::raw_ostream &os) {
  const ApiGlue *api = apiGlue(device);
  if (!api) {
    os << "static const struct halide_device_interface_t "
          "*device_interface(void) {\n  return NULL;\n}\n\n";
    return;
  }
  os << "#include \"HalideRuntime" << api->header << ".h\"\n\n"
     << "#define ATTN_WRAP_NATIVE " << api->wrap << "\n"
     << "#define ATTN_DETACH_NATIVE " << api->detach << "\n"
     << "#define ATTN_NATIVE_OF " << api->native << "\n\n"
     << "static const struct halide_device_interface_t "
        "*device_interface(void) {\n  return halide_"
     << api->name << "_device_interface();\n}\n\n";
}

void emitDeviceApi(int32_t device, llvm::raw_ostream &os) {
  if (device == ATTN_MODEL_DEVICE_HOST) {
    os << "\nstatic void install_device_hooks(void) {}\n";
    return;
  }
  os << (device == ATTN_MODEL_DEVICE_CUDA ? kCudaGlue : kOpenClGlue)
     << kNativeGlue << "\nstatic const attn_model_device_api device_api = {\n"
     << "  device_alloc, device_free, copy_to_device, copy_to_host,\n"
     << "  synchronize, device_wrap, device_unwrap, device_native,\n"
     << "  native_context, device_crop, device_release_crop};\n";
}

} // namespace attnc::driver
