/*===- test/unit/runtime/earlier_abi_model.c - What earlier attncs built --===*
 *
 * A library exporting the entry symbol of an earlier model ABI, named by
 * EARLIER_ENTRY: attn_model_descriptor_v1 (attnc 0.1, ABI 1) or
 * attn_model_descriptor_v2 (ABIs 2 to 4). The runtime must refuse it by
 * name, asking for a rebuild, without calling it (its descriptor has
 * another layout): a call would abort.
 *
 *===----------------------------------------------------------------------===*/
#include <stdlib.h>

__attribute__((visibility("default"))) const void *EARLIER_ENTRY(void) {
  abort();
}
