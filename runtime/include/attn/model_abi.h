/*===- runtime/include/attn/model_abi.h - Compiled-model descriptor -------===*
 *
 * The contract between the attnc driver, which emits these tables into every
 * compiled model library, and the attn runtime, which reads them. A library
 * exports exactly one symbol, ATTN_MODEL_ENTRY_SYMBOL, returning the model's
 * descriptor; everything else (kernels, the Halide runtime, weights) is hidden,
 * so several models live side by side in one process.
 *
 * A library holds kernels and entry points. An entry point is a plan: the
 * buffers it touches and the kernel calls that compute it. "run" computes the
 * model's outputs from its inputs; "init", when present, runs once at load
 * and computes the constants block (weights packed, transposed, folded) from
 * the tensors of a weights file; a model with a KV cache adds "prefill" and
 * "decode".
 *
 * Plain C, no dependencies: both sides include it.
 *
 * Until attnc's first release this ABI changes without compatibility: any
 * change to the structs below bumps ATTN_MODEL_ABI_VERSION, and the runtime
 * loads only libraries of its own version. A library of an earlier attnc is
 * refused, by its version or by the entry symbol it exports, with the fix:
 * rebuild it with this attnc.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_MODEL_ABI_H
#define ATTN_MODEL_ABI_H

#include "attn/dtypes.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any change to the structs below; the runtime loads this version
 * only. */
#define ATTN_MODEL_ABI_VERSION 6u
/* First field of every descriptor: tells an attnc model from anything else. */
#define ATTN_MODEL_MAGIC 0x434E5441u /* "ATNC" little-endian */
/* The one symbol a library exports: a function returning its descriptor,
 * whose abi_version says which ABI it follows. */
#define ATTN_MODEL_ENTRY_SYMBOL "attn_model_descriptor"

/* Element types; rows of attn_dtype_table (dtypes.h). */
typedef enum attn_model_dtype {
  ATTN_MODEL_F32 = 0,
  ATTN_MODEL_I32 = 1,
  ATTN_MODEL_BF16 = 2,
  ATTN_MODEL_F16 = 3,
  ATTN_MODEL_I8 = 4,
  ATTN_MODEL_U8 = 5,
} attn_model_dtype;

/* Where a view's memory is, and where a library's kernels run. */
typedef enum attn_model_device {
  ATTN_MODEL_DEVICE_HOST = 0,
  ATTN_MODEL_DEVICE_CUDA = 1,
  ATTN_MODEL_DEVICE_OPENCL = 2,
} attn_model_device;

/* What the kernels' linears multiply (attnc --precision): f32 throughout,
 * or inputs rounded to bf16 or quantized to int8 (the README says each
 * one's error). */
typedef enum attn_model_precision {
  ATTN_MODEL_PRECISION_F32 = 0,
  ATTN_MODEL_PRECISION_BF16 = 1,
  ATTN_MODEL_PRECISION_INT8 = 2,
} attn_model_precision;

/* How the model reads a quantized matrix (I8, or U8 bytes of 4-bit values),
 * whose scales go with its outputs. The runtime checks it against the
 * weights file's record of how attnc quantize read the matrix, which a
 * square one's shape cannot tell. */
typedef enum attn_model_weight_layout {
  ATTN_MODEL_WEIGHT_ANY = 0, /* not a quantized matrix: nothing to check */
  ATTN_MODEL_WEIGHT_OUT_IN = 1,
  ATTN_MODEL_WEIGHT_IN_OUT = 2,
} attn_model_weight_layout;

#define ATTN_MODEL_MAX_DIM_TERMS 2

/* coeff * symbols[symbol]. */
typedef struct attn_model_dim_term {
  int32_t symbol; /* index into attn_model_desc.symbols */
  int32_t coeff;
} attn_model_dim_term;

/* One dimension of a tensor: constant + sum of its terms, so a constant
 * (no terms), a symbol bound at run time (one term, coefficient 1) or an
 * affine form such as P + S. Only a dim that is exactly one symbol binds that
 * symbol from an input; every other dim is computed and checked. */
typedef struct attn_model_dim {
  int64_t constant;
  int32_t num_terms; /* 0 .. ATTN_MODEL_MAX_DIM_TERMS */
  attn_model_dim_term terms[ATTN_MODEL_MAX_DIM_TERMS];
} attn_model_dim;

typedef struct attn_model_symbol {
  const char *name;
  int64_t max; /* inclusive upper bound; 0 means unbounded */
} attn_model_symbol;

/* A tensor of the weights file the "init" entry (or a kernel directly) reads:
 * dense row-major with these dims, outermost first, as stored in the file. */
typedef struct attn_model_weight {
  const char *name; /* the tensor's name in the safetensors file */
  int32_t dtype;    /* attn_model_dtype */
  int32_t rank;
  const int64_t *dims;
  int32_t layout; /* attn_model_weight_layout */
} attn_model_weight;

/* A buffer that persists across runs (a KV cache), owned by the caller. */
typedef struct attn_model_state {
  const char *name;
  int32_t dtype; /* attn_model_dtype */
  int32_t rank;
  const attn_model_dim *dims;
} attn_model_state;

typedef enum attn_model_buffer_kind {
  ATTN_MODEL_BUFFER_INPUT = 0,    /* index: which input of the entry */
  ATTN_MODEL_BUFFER_OUTPUT = 1,   /* index: which output of the entry */
  ATTN_MODEL_BUFFER_CONSTANT = 2, /* offset: bytes into the constants block */
  ATTN_MODEL_BUFFER_TEMP = 3,     /* allocated by the runtime per call */
  ATTN_MODEL_BUFFER_WEIGHT = 4,   /* index: attn_model_desc.weights, as read */
  ATTN_MODEL_BUFFER_STATE = 5,    /* index: attn_model_desc.states */
} attn_model_buffer_kind;

/* A tensor a plan touches. Dims are listed outermost first (row-major, as a
 * user writes [B, S, D]); every buffer has dense strides. */
typedef struct attn_model_buffer {
  int32_t kind;  /* attn_model_buffer_kind */
  int32_t index; /* see the kinds; -1 for constants and temps */
  int32_t dtype; /* attn_model_dtype */
  int32_t rank;
  const attn_model_dim *dims;
  uint64_t offset; /* CONSTANT: 64-byte aligned offset into the block */
} attn_model_buffer;

/* An input or output of an entry point as the user sees it. */
typedef struct attn_model_tensor {
  const char *name;
  int32_t buffer; /* index into the entry's buffers */
} attn_model_tensor;

/* A dense row-major tensor handed to a kernel: dims outermost first. The
 * library turns it into a halide_buffer_t itself, so the runtime needs no
 * Halide header. A view on the host (device HOST) is `data`; a GPU library
 * may copy it to its device and back for the call. A view on the library's
 * device is the allocation `device_handle` (from its device_api), and `data`
 * is NULL or a host copy of equal contents that the kernel may read. */
typedef struct attn_model_view {
  void *data;    /* host memory, or NULL when the data lives on a device */
  int32_t dtype; /* attn_model_dtype */
  int32_t rank;
  const int64_t *dims;
  int32_t device;         /* attn_model_device */
  uint64_t device_handle; /* the device allocation when not on the host */
} attn_model_view;

#define ATTN_MODEL_MAX_FLOP_SYMBOLS 4

/* coeff times the values of the listed symbols: part of a kernel call's
 * floating-point operations, e.g. 2 * 768 * 2304 * B * S for a projection. */
typedef struct attn_model_flop_term {
  double coeff;
  int32_t num_symbols; /* 0 .. ATTN_MODEL_MAX_FLOP_SYMBOLS */
  int32_t symbols[ATTN_MODEL_MAX_FLOP_SYMBOLS]; /* indices into symbols */
} attn_model_flop_term;

typedef struct attn_model_kernel {
  const char *name;
  int32_t num_inputs; /* its arguments: inputs, then outputs */
  int32_t num_outputs;
  /* The call's floating-point operations, the sum of these terms (GEMMs and
   * attention, counted dense); none: not counted. */
  int32_t num_flop_terms;
  const attn_model_flop_term *flop_terms;
} attn_model_kernel;

/* One call in a plan: kernel `kernel` with the listed buffers as its
 * arguments, in the kernel's argument order (inputs, then outputs). */
typedef struct attn_model_step {
  int32_t kernel;
  int32_t num_args;
  const int32_t *args; /* indices into the entry's buffers */
} attn_model_step;

/* An entry point. Its buffers are its own: INPUT and OUTPUT buffers refer to
 * its inputs and outputs, the other kinds to the descriptor's tables. */
typedef struct attn_model_entry {
  const char *name; /* "run", "init", ... */
  int32_t num_inputs;
  const attn_model_tensor *inputs;
  int32_t num_outputs;
  const attn_model_tensor *outputs;
  int32_t num_buffers;
  const attn_model_buffer *buffers;
  int32_t num_steps;
  const attn_model_step *steps;
} attn_model_entry;

/* What the runtime passes with every kernel call (Halide's user context): a
 * failing kernel writes its message here, so calls on several threads never
 * share error state. */
typedef struct attn_model_context {
  char *error; /* filled with a NUL-terminated message on failure */
  uint32_t error_size;
} attn_model_context;

/* Device memory of a GPU library, in opaque handles, the ones its
 * views carry. Each function that returns a status returns 0 on success,
 * else nonzero with a message in context->error. Copies return when done. */
typedef struct attn_model_device_api {
  int32_t (*alloc)(attn_model_context *context, uint64_t bytes,
                   uint64_t *handle);
  void (*free)(attn_model_context *context, uint64_t handle);
  /* `bytes` from host memory to the start of allocation `handle`. */
  int32_t (*copy_to_device)(attn_model_context *context, uint64_t handle,
                            const void *host, uint64_t bytes);
  /* `bytes` from the start of `handle` to host memory, once the kernels
   * launched before have written them. */
  int32_t (*copy_to_host)(attn_model_context *context, void *host,
                          uint64_t handle, uint64_t bytes);
  /* Returns when every kernel launched so far has finished. */
  int32_t (*synchronize)(attn_model_context *context);

  /* Memory native to the device's API (a CUdeviceptr, a cl_mem) that
   * the library did not allocate, as a handle views may carry until unwrap
   * forgets it; the memory stays its owner's. */
  int32_t (*wrap)(attn_model_context *context, uint64_t native,
                  uint64_t *handle);
  void (*unwrap)(attn_model_context *context, uint64_t handle);
  /* The native memory behind a handle of alloc or wrap. */
  uint64_t (*native)(uint64_t handle);
  /* The API's context and queue the kernels run in, made if none yet: CUDA,
   * the device's primary context (the one the CUDA runtime API uses) and
   * its default stream (NULL); OpenCL, a cl_context and cl_command_queue. */
  int32_t (*native_context)(attn_model_context *context, void **api_context,
                            void **queue);
  /* `bytes` of allocation `handle` from byte `offset` (a multiple of 4096),
   * as a handle of their own until release_crop: the runtime places the
   * temps of a run in one allocation, as on the host. */
  int32_t (*crop)(attn_model_context *context, uint64_t handle, uint64_t offset,
                  uint64_t bytes, uint64_t *cropped);
  void (*release_crop)(attn_model_context *context, uint64_t cropped);
} attn_model_device_api;

typedef struct attn_model_desc {
  uint32_t magic;       /* ATTN_MODEL_MAGIC */
  uint32_t abi_version; /* ATTN_MODEL_ABI_VERSION */
  const char *compiler_version;
  const char *model_name;
  /* Halide target string the kernels were built for; for a multi-target
   * library, a comma-separated list, most capable first, of which the CPU
   * must support the last (each kernel dispatches to the best it has). */
  const char *target;
  int32_t precision; /* attn_model_precision */

  int32_t num_symbols;
  const attn_model_symbol *symbols;
  /* The tensors of the weights file the model reads at load; none when the
   * library embeds its constants. */
  int32_t num_weights;
  const attn_model_weight *weights;
  int32_t num_states;
  const attn_model_state *states;

  /* The constants block: embedded (64-byte aligned), or NULL when the runtime
   * allocates constants_size bytes and the "init" entry fills them. */
  const uint8_t *constants;
  uint64_t constants_size;

  int32_t num_kernels;
  const attn_model_kernel *kernels;
  int32_t num_entries;
  const attn_model_entry *entries;

  /* Runs kernel `kernel` on `num_args` views (inputs, then outputs, in the
   * kernel's argument order). Returns 0 on success; otherwise the message is
   * in context->error. */
  int32_t (*run_kernel)(attn_model_context *context, int32_t kernel,
                        int32_t num_args, const attn_model_view *args);
  /* Sizes this library's own (hidden) Halide thread pool. */
  void (*set_num_threads)(int32_t threads);

  /* Where the kernels run (attn_model_device): on the host, the
   * runtime hands them host views; on a GPU, the buffers of "run" and of the
   * other entries but "init" live in `device_api` allocations, and only the
   * inputs, states and outputs cross to and from the host, once per run. */
  int32_t device;
  const attn_model_device_api *device_api; /* NULL on the host */
} attn_model_desc;

typedef const attn_model_desc *(*attn_model_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_MODEL_ABI_H */
