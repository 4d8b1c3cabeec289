/*===- test/unit/runtime/fake_abi.h - shared parts of the fake models ----===*
 *
 * What every hand-written model library of these tests needs: dims of the
 * descriptor tables, the per-call context a failing kernel writes its message
 * into, and the element count of a view.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_TEST_FAKE_ABI_H
#define ATTN_TEST_FAKE_ABI_H

#include "attn/model_abi.h"

#include <stdint.h>
#include <stdio.h>

/* A dim that is symbol s, and a constant dim. */
#define SYM(s)                                                                 \
  {                                                                            \
    0, 1, {                                                                    \
      { (s), 1 }                                                               \
    }                                                                          \
  }
#define CONST(n)                                                               \
  {                                                                            \
    (n), 0, {                                                                  \
      { 0, 0 }                                                                 \
    }                                                                          \
  }

/* The runtime's per-call context: where a failing kernel's message goes.
 * run_kernel sets it before calling a kernel. */
static _Thread_local attn_model_context *context;

static inline int32_t fail(const char *message) {
  snprintf(context->error, context->error_size, "%s", message);
  return -1;
}

static inline int64_t elements(const attn_model_view *v) {
  int64_t n = 1;
  for (int32_t i = 0; i < v->rank; ++i)
    n *= v->dims[i];
  return n;
}

#endif /* ATTN_TEST_FAKE_ABI_H */
