/*===- runtime/include/attn/model_abi.h - Compiled-model descriptor -------===*
 *
 * The contract between the attnc driver, which emits these tables into every
 * compiled model library, and the attn runtime, which reads them. A library
 * exports exactly one symbol, ATTN_MODEL_ENTRY_SYMBOL, returning the model's
 * descriptor; everything else (kernels, the Halide runtime, weights) is hidden,
 * so several models live side by side in one process.
 *
 * Plain C, no dependencies: both sides include it.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_MODEL_ABI_H
#define ATTN_MODEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any change to the structs below. The runtime refuses other values. */
#define ATTN_MODEL_ABI_VERSION 1u
/* First field of every descriptor: tells an attnc model from anything else. */
#define ATTN_MODEL_MAGIC 0x434E5441u /* "ATNC" little-endian */
#define ATTN_MODEL_ENTRY_SYMBOL "attn_model_descriptor_v1"

typedef enum attn_model_dtype {
  ATTN_MODEL_F32 = 0,
  ATTN_MODEL_I32 = 1,
} attn_model_dtype;

/* One dimension of a tensor: a constant extent, or a symbolic dim of the model
 * (an index into attn_model_desc.symbols) bound at run time. */
typedef struct attn_model_dim {
  int32_t symbol; /* -1: constant; otherwise index into symbols */
  int64_t extent; /* the constant extent when symbol == -1 */
} attn_model_dim;

typedef struct attn_model_symbol {
  const char *name;
  int64_t max; /* inclusive upper bound; 0 means unbounded */
} attn_model_symbol;

typedef enum attn_model_buffer_kind {
  ATTN_MODEL_BUFFER_INPUT = 0,  /* index: which model input */
  ATTN_MODEL_BUFFER_OUTPUT = 1, /* index: which model output */
  ATTN_MODEL_BUFFER_WEIGHT = 2, /* weight_offset: byte offset into weights */
  ATTN_MODEL_BUFFER_TEMP = 3,   /* allocated by the runtime */
} attn_model_buffer_kind;

/* A tensor the plan touches. Dims are listed outermost first (row-major, as a
 * user writes [B, S, D]); the runtime reverses them into a halide_buffer_t,
 * whose dim 0 is the innermost, and gives every buffer dense strides. */
typedef struct attn_model_buffer {
  int32_t kind;  /* attn_model_buffer_kind */
  int32_t index; /* input/output index; -1 for weights and temps */
  int32_t dtype; /* attn_model_dtype */
  int32_t rank;
  const attn_model_dim *dims;
  uint64_t weight_offset; /* bytes into attn_model_desc.weights, 64-aligned */
} attn_model_buffer;

/* A model input or output as the user sees it. */
typedef struct attn_model_tensor {
  const char *name;
  int32_t buffer; /* index into attn_model_desc.buffers */
} attn_model_tensor;

/* A dense row-major tensor handed to a kernel: dims outermost first. The
 * library turns it into a halide_buffer_t itself, so the runtime needs no
 * Halide header. */
typedef struct attn_model_view {
  void *data;
  int32_t dtype; /* attn_model_dtype */
  int32_t rank;
  const int64_t *dims;
} attn_model_view;

typedef struct attn_model_kernel {
  const char *name;
  int32_t num_args; /* inputs then outputs, each a buffer */
} attn_model_kernel;

/* One call in the execution plan: kernel `kernel` with the listed buffers as
 * its arguments, in the kernel's argument order (inputs, then outputs). */
typedef struct attn_model_step {
  int32_t kernel;
  int32_t num_args;
  const int32_t *args; /* buffer indices */
} attn_model_step;

typedef struct attn_model_desc {
  uint32_t magic;       /* ATTN_MODEL_MAGIC */
  uint32_t abi_version; /* ATTN_MODEL_ABI_VERSION */
  const char *compiler_version;
  const char *model_name;
  const char *target; /* Halide target string the kernels were built for */

  int32_t num_symbols;
  const attn_model_symbol *symbols;
  int32_t num_inputs;
  const attn_model_tensor *inputs;
  int32_t num_outputs;
  const attn_model_tensor *outputs;
  int32_t num_buffers;
  const attn_model_buffer *buffers;
  int32_t num_kernels;
  const attn_model_kernel *kernels;
  int32_t num_steps;
  const attn_model_step *steps;

  const uint8_t *weights; /* embedded weights, 64-byte aligned */
  uint64_t weights_size;

  /* Runs kernel `kernel` on `num_args` views (inputs, then outputs, in the
   * kernel's argument order). Returns 0 on success; otherwise the message is
   * left for last_error. */
  int32_t (*run_kernel)(int32_t kernel, int32_t num_args,
                        const attn_model_view *args);
  /* Sizes this library's own (hidden) Halide thread pool. */
  void (*set_num_threads)(int32_t threads);
  /* The last error this library's Halide runtime reported on this thread. */
  const char *(*last_error)(void);
} attn_model_desc;

typedef const attn_model_desc *(*attn_model_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_MODEL_ABI_H */
