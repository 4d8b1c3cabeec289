/*===- compiler/driver/glue/host.c - plan.c of a CPU library ------*- C -*-===*
 *
 * After common.c in the plan.c of a library whose kernels run on the host:
 * no device interface, nothing to set up, no device memory functions.
 *
 *===----------------------------------------------------------------------===*/

static const struct halide_device_interface_t *device_interface(void) {
  return NULL;
}

static void install_device_hooks(void) {}
