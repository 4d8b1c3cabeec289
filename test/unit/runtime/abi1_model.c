/*===- test/unit/runtime/abi1_model.c - A library of model ABI 1 ----------===*
 *
 * What attnc 0.1 built: the entry symbol attn_model_descriptor_v1 and no
 * attn_model_descriptor_v2. The runtime must refuse it by name, asking for a
 * rebuild, without calling it (its tables have another layout).
 *
 *===----------------------------------------------------------------------===*/
#include <stddef.h>

__attribute__((visibility("default"))) const void *
attn_model_descriptor_v1(void) {
  return NULL;
}
