/*===- compiler/driver/glue/device.c - plan.c's device memory -----*- C -*-===*
 *
 * Last of the glue in the plan.c of a GPU library, after common.c and the
 * API's glue (cuda.c or opencl.c, which define native_context, wrap_native,
 * detach_native and native_of): the device memory functions of
 * attn_model_device_api, over the library's own Halide runtime, as
 * `device_api`.
 *
 *===----------------------------------------------------------------------===*/

static int32_t device_alloc(attn_model_context *context, uint64_t bytes,
                            uint64_t *handle) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  if (too_large(context, bytes))
    return -1;
  byte_buffer(&buf, &dim, 0, NULL, bytes);
  int result = halide_device_malloc(context, &buf, device_interface());
  *handle = buf.device;
  return result;
}

static void device_free(attn_model_context *context, uint64_t handle) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, handle, NULL, 0);
  halide_device_free(context, &buf);
}

static int32_t copy_to_device(attn_model_context *context, uint64_t handle,
                              const void *host, uint64_t bytes) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  if (too_large(context, bytes))
    return -1;
  byte_buffer(&buf, &dim, handle, (void *)host, bytes);
  buf.flags = halide_buffer_flag_host_dirty;
  return halide_copy_to_device(context, &buf, device_interface());
}

static int32_t copy_to_host(attn_model_context *context, void *host,
                            uint64_t handle, uint64_t bytes) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  if (too_large(context, bytes))
    return -1;
  byte_buffer(&buf, &dim, handle, host, bytes);
  buf.flags = halide_buffer_flag_device_dirty;
  return halide_copy_to_host(context, &buf);
}

/* The byte range [offset, offset + bytes) of an allocation: Halide's crop
 * (CUDA: the pointer moved; OpenCL: a sub-buffer made at each launch). */
static int32_t device_crop(attn_model_context *context, uint64_t handle,
                           uint64_t offset, uint64_t bytes, uint64_t *cropped) {
  halide_buffer_t src, dst;
  halide_dimension_t src_dim, dst_dim;
  if (too_large(context, offset + bytes))
    return -1;
  byte_buffer(&src, &src_dim, handle, NULL, offset + bytes);
  byte_buffer(&dst, &dst_dim, 0, NULL, bytes);
  dst_dim.min = (int32_t)offset;
  int result = halide_device_crop(context, &src, &dst);
  *cropped = dst.device;
  return result;
}

static void device_release_crop(attn_model_context *context, uint64_t cropped) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, cropped, NULL, 0);
  halide_device_release_crop(context, &buf);
}

static int32_t synchronize(attn_model_context *context) {
  return halide_device_sync_global(context, device_interface());
}

/* The application's memory as a handle and back (a CUdeviceptr is Halide's
 * CUDA handle itself; its OpenCL handle wraps a cl_mem). */
static int32_t device_wrap(attn_model_context *context, uint64_t native,
                           uint64_t *handle) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, 0, NULL, 0);
  int result = wrap_native(context, &buf, native);
  *handle = buf.device;
  return result;
}

static void device_unwrap(attn_model_context *context, uint64_t handle) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, handle, NULL, 0);
  detach_native(context, &buf);
}

static uint64_t device_native(uint64_t handle) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, handle, NULL, 0);
  return native_of(&buf);
}

static const attn_model_device_api device_api = {
    device_alloc,   device_free, copy_to_device,     copy_to_host,
    synchronize,    device_wrap, device_unwrap,      device_native,
    native_context, device_crop, device_release_crop};
