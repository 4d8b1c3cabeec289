/*===- runtime/include/attn/dtypes.h - Element types of a model ---*- C -*-===*
 *
 * The one table of the element types a model library, the runtime and the
 * compiler know: their codes (the values of attn_dtype and attn_model_dtype),
 * names and sizes. Adding a dtype is a row here and a code in both enums.
 *
 * Plain C, no dependencies.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_DTYPES_H
#define ATTN_DTYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_dtype_desc {
  int32_t code;        /* attn_dtype / attn_model_dtype */
  const char *name;    /* "F32": as safetensors spells it */
  uint32_t size;       /* bytes per element */
  int32_t is_float;    /* 1 for floating point */
  int32_t halide_code; /* halide_type_code_t: 0 int, 2 float, 4 bfloat */
} attn_dtype_desc;

#define ATTN_NUM_DTYPES 6

/* I8: int8 quantized weights; U8: 4-bit quantized weights, two values per
 * byte (linear matrices only, docs/language.md). */
static const attn_dtype_desc attn_dtype_table[ATTN_NUM_DTYPES] = {
    {0, "F32", 4, 1, 2}, {1, "I32", 4, 0, 0}, {2, "BF16", 2, 1, 4},
    {3, "F16", 2, 1, 2}, {4, "I8", 1, 0, 0},  {5, "U8", 1, 0, 1},
};

/* The row of `code`, or NULL for a code no one defined. */
static inline const attn_dtype_desc *attn_dtype_lookup(int32_t code) {
  return code >= 0 && code < ATTN_NUM_DTYPES ? &attn_dtype_table[code] : NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* ATTN_DTYPES_H */
