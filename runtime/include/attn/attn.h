/*===- runtime/include/attn/attn.h - attn runtime C API ---------*- C -*-===*
 *
 * Loads a model library built by attnc, describes its inputs and outputs, and
 * runs it. A stable C ABI: every symbol carries the attn_ prefix, every struct
 * here is only ever extended by a new function, never changed in place.
 *
 * Errors: every function that can fail returns an attn_status; the message
 * that goes with it (naming the tensor, dim or file and the fix) is read with
 * attn_last_error() on the same thread.
 *
 * Threads: a model may be queried and run from many threads at once; no lock
 * is held while its kernels run. Each run takes a workspace (the arena of its
 * temporary buffers) that no other run uses at the same time, from a pool in
 * the model that grows to the number of runs in flight, so concurrent runs
 * give results bit-identical to the same runs one after another. Loading,
 * freeing and attn_model_set_threads must not overlap other calls on the
 * same model.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_ATTN_H
#define ATTN_ATTN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ATTN_BUILDING_RUNTIME)
#define ATTN_API __attribute__((visibility("default")))
#else
#define ATTN_API
#endif

/* The largest rank a model tensor may have. */
#define ATTN_MAX_RANK 8

typedef enum attn_status {
  ATTN_OK = 0,
  ATTN_ERROR_IO = 1,                /* the file cannot be opened or read */
  ATTN_ERROR_INVALID_LIBRARY = 2,   /* not an attnc model, or a corrupt one */
  ATTN_ERROR_ABI_MISMATCH = 3,      /* built for another model ABI version */
  ATTN_ERROR_INVALID_ARGUMENT = 4,  /* NULL pointer, bad index, unknown name */
  ATTN_ERROR_SHAPE_MISMATCH = 5,    /* wrong rank or dim, inconsistent dims */
  ATTN_ERROR_DTYPE_MISMATCH = 6,    /* a tensor of the wrong element type */
  ATTN_ERROR_DIM_OUT_OF_BOUNDS = 7, /* a dynamic dim 0 or beyond its bound */
  ATTN_ERROR_KERNEL_FAILED = 8,     /* a kernel of the model failed */
  ATTN_ERROR_OUT_OF_MEMORY = 9,
  ATTN_ERROR_UNSUPPORTED_CPU = 10, /* built for instructions this CPU lacks */
  ATTN_ERROR_NO_DEVICE = 11,       /* no device of the library's GPU API */
  ATTN_ERROR_NON_FINITE = 12, /* a weight holds NaN or Inf (CHECK_WEIGHTS) */
} attn_status;

/* Element types; the values equal attn_model_dtype in model_abi.h. */
typedef enum attn_dtype {
  ATTN_F32 = 0,
  ATTN_I32 = 1,
  ATTN_BF16 = 2,
  ATTN_F16 = 3,
  ATTN_I8 = 4, /* quantized weights and i8 KV caches (states), never an input or
                  output */
  ATTN_U8 = 5, /* 4-bit quantized weights, two per byte; weights only */
} attn_dtype;

/* A dense row-major tensor the caller owns: dims outermost first. `name` may
 * be NULL, which means "the model's tensor at this position". Inputs are only
 * read; outputs must point at memory of the size the dims give. */
typedef struct attn_tensor {
  const char *name;
  int32_t dtype; /* attn_dtype */
  int32_t rank;
  const int64_t *dims;
  void *data;
} attn_tensor;

/* One dim of a model input or output. */
typedef struct attn_dim_info {
  int32_t is_dynamic; /* 1: bound at run time from the inputs */
  int64_t extent;     /* the constant extent; -1 when dynamic */
  const char *symbol; /* the symbol's name when dynamic, else NULL */
  int64_t max;        /* inclusive bound of the symbol; 0: unbounded */
} attn_dim_info;

/* A model input or output. Pointers stay valid until attn_model_free. */
typedef struct attn_tensor_info {
  const char *name;
  int32_t dtype; /* attn_dtype */
  int32_t rank;
  const attn_dim_info *dims;
} attn_tensor_info;

/* What a model says about itself. Zero-initialise it and set `size` before
 * attn_model_get_info: later runtimes may add fields at the end, and write
 * only `size` bytes of it. Pointers stay valid until attn_model_free. */
typedef struct attn_model_info {
  uint32_t size; /* sizeof(attn_model_info) */
  const char *name;
  const char *compiler_version;
  const char *target;
  const char *path;
  /* What the linears multiply, as attnc --precision names it: "f32",
   * "bf16" or "int8". */
  const char *precision;
} attn_model_info;

typedef struct attn_model attn_model;

/* The message of the last failing call on this thread ("" if none). Valid
 * until the next failing call on this thread. */
ATTN_API const char *attn_last_error(void);
/* A short constant name for a status, e.g. "shape mismatch". */
ATTN_API const char *attn_status_string(attn_status status);
/* The model ABI version this runtime reads (ATTN_MODEL_ABI_VERSION). */
ATTN_API uint32_t attn_runtime_abi_version(void);

/* Loads and validates the model library at `path` (NULL *model on failure).
 * For a library that embeds its weights (attnc --weights); one that reads
 * them at load needs attn_model_load_with_options. */
ATTN_API attn_status attn_model_load(const char *path, attn_model **model);

/* How to load a model. Zero-initialise it and set `size`, then the fields you
 * need: later runtimes may add fields at the end, and read only `size` bytes.
 */
typedef struct attn_load_options {
  uint32_t size; /* sizeof(attn_load_options) */
  /* The safetensors file the model's weights are read from (mapped, checked
   * by name, dtype and shape, then packed by the library's "init" plan), or
   * NULL for a library that embeds its weights. A path ending in ".json" is
   * a sharded checkpoint's index (model.safetensors.index.json): every shard
   * it names beside it is mapped and checked alike, and the weights are
   * found across them. */
  const char *weights;
  /* ATTN_LOAD_* bits; 0 for a plain load. Unknown bits are refused. */
  uint32_t flags;
} attn_load_options;

/* Load to describe the model: no weights are read and no init runs, so a
 * library that reads its weights at load needs no weights file (and must not
 * be given one). Info queries, attn_model_output_dims and
 * attn_model_workspace_size work; attn_model_run refuses with
 * ATTN_ERROR_INVALID_ARGUMENT naming the weights file the model needs. */
#define ATTN_LOAD_DESCRIBE_ONLY 1u

/* Scan every weight the model reads for NaN and Inf once, before "init"
 * runs: the first one found fails the load with ATTN_ERROR_NON_FINITE naming
 * the tensor, the index and the value. NaN and Inf propagate through the
 * kernels as through PyTorch, so a damaged checkpoint would otherwise give
 * NaN outputs at run time, or nothing to notice. It reads every byte of the
 * file once (GPT-2 small: docs/robustness.md). A library that embeds its
 * weights (attnc --weights) is refused with this flag: check the file before
 * embedding it. */
#define ATTN_LOAD_CHECK_WEIGHTS 2u

/* attn_model_load with options; NULL options equal attn_model_load. */
ATTN_API attn_status attn_model_load_with_options(
    const char *path, const attn_load_options *options, attn_model **model);
/* Unloads a model; NULL is allowed. */
ATTN_API void attn_model_free(attn_model *model);

ATTN_API attn_status attn_model_get_info(const attn_model *model,
                                         attn_model_info *info);
ATTN_API int32_t attn_model_num_inputs(const attn_model *model);
ATTN_API int32_t attn_model_num_outputs(const attn_model *model);
ATTN_API attn_status attn_model_input_info(const attn_model *model,
                                           int32_t index,
                                           attn_tensor_info *info);
ATTN_API attn_status attn_model_output_info(const attn_model *model,
                                            int32_t index,
                                            attn_tensor_info *info);
/* The tensors a model reads from its weights file at load, in the library's
 * order (none for one that embeds its weights): name, dtype as declared (F32,
 * or BF16 / F16 kept in that precision) and fixed dims. */
ATTN_API int32_t attn_model_num_weights(const attn_model *model);
ATTN_API attn_status attn_model_weight_info(const attn_model *model,
                                            int32_t index,
                                            attn_tensor_info *info);

/* One kernel call of a run, as a step callback sees it. Later runtimes may
 * add fields at the end. */
typedef struct attn_step_event {
  int32_t step;       /* its index in the run's plan, 0 .. num_steps - 1 */
  int32_t num_steps;  /* kernel calls in one run */
  const char *kernel; /* the kernel's name; valid until attn_model_free */
  double seconds;     /* wall-clock time of the call */
  double flops;       /* its floating-point operations (GEMMs and attention,
                         counted dense); 0 when the library does not say */
  double bytes;       /* the sizes of the buffers it is passed (inputs,
                         weights, states, outputs), each once: the traffic
                         it cannot avoid, more than it reads of a buffer it
                         reads in part (a KV cache past the position) */
} attn_step_event;

typedef void (*attn_step_callback)(void *user, const attn_step_event *event);

/* Calls `callback(user, event)` after each kernel call of every later
 * attn_model_run of `model`, on the thread that runs it (so from several
 * threads at once when runs overlap); NULL stops it. For profilers: it costs
 * two clock reads per call. Set it while no run of the model is in flight. */
ATTN_API attn_status attn_model_set_step_callback(attn_model *model,
                                                  attn_step_callback callback,
                                                  void *user);

/* Sizes the model's thread pool; 0 restores the library's default. */
ATTN_API attn_status attn_model_set_threads(attn_model *model, int32_t threads);

/* Checks `inputs` as attn_model_run would (their data may be NULL here) and
 * writes the dims of output `output` into dims[0 .. rank), where rank is the
 * output's rank and must be <= max_rank. */
ATTN_API attn_status attn_model_output_dims(const attn_model *model,
                                            const attn_tensor *inputs,
                                            int32_t num_inputs, int32_t output,
                                            int64_t *dims, int32_t max_rank);

/* Checks `inputs` as attn_model_output_dims does (data may be NULL) and
 * reports the memory a run on them takes for the model's temporary buffers,
 * beyond inputs and outputs: `arena_bytes`, the arena they are planned in by
 * lifetime (buffers never alive at the same step share memory); at least
 * `largest_live_bytes`, the most bytes of temporaries alive at one step; and
 * `temp_bytes`, the sum of all of them (one buffer per temporary, no reuse).
 * Each concurrent run has its own arena. Any pointer may be NULL. */
ATTN_API attn_status attn_model_workspace_size(
    const attn_model *model, const attn_tensor *inputs, int32_t num_inputs,
    uint64_t *arena_bytes, uint64_t *largest_live_bytes, uint64_t *temp_bytes);

/* Runs the model. Every input and output must be given exactly once, by name
 * or by position; their dtypes and dims are checked before any kernel runs. */
ATTN_API attn_status attn_model_run(attn_model *model,
                                    const attn_tensor *inputs,
                                    int32_t num_inputs,
                                    const attn_tensor *outputs,
                                    int32_t num_outputs);

/* State: buffers the caller owns that persist across runs, such as the KV
 * caches of a decoder (`state` in the model). Each is dense row-major f32,
 * [B, L, F] for a KV cache: L, its capacity, is a symbol the caller's
 * buffers bind (within its bound). The runtime never copies or allocates
 * them: a sequence is its states, so an application keeps several, trims one
 * (decodes from an earlier position) or copies one (forks a sequence). */
ATTN_API int32_t attn_model_num_states(const attn_model *model);
ATTN_API attn_status attn_model_state_info(const attn_model *model,
                                           int32_t index,
                                           attn_tensor_info *info);
/* 1 when the library has the entry point `name` ("run"; "prefill" and
 * "decode" for a model with state), else 0. */
ATTN_API int32_t attn_model_has_entry(const attn_model *model,
                                      const char *name);

/* The inputs of entry point `entry` ("run", "prefill", "decode"), which may
 * differ from run's: an entry takes the inputs its computation reads, so an
 * encoder-decoder's "decode" (reading its cross-attention caches) takes no
 * encoder input, and "decode" also takes `position`. num_inputs returns
 * their count, or -1 when the model has no such entry (attn_last_error says
 * why); input_info describes input `index` as attn_model_input_info does
 * (the dims are valid until attn_model_free). For "run" they equal
 * attn_model_num_inputs and attn_model_input_info. */
ATTN_API int32_t attn_model_entry_num_inputs(const attn_model *model,
                                             const char *entry);
ATTN_API attn_status attn_model_entry_input_info(const attn_model *model,
                                                 const char *entry,
                                                 int32_t index,
                                                 attn_tensor_info *info);

/* How to run a model. Zero-initialise it and set `size`, then the fields you
 * need: later runtimes may add fields at the end, and read only `size` bytes.
 */
typedef struct attn_run_options {
  uint32_t size; /* sizeof(attn_run_options) */
  /* The entry point: NULL or "run" (the outputs from the inputs alone),
   * "prefill" (the same, also writing the prompt's keys and values into the
   * states from row 0) or "decode" (the inputs are new tokens: they are
   * written into the states at row `position` and attend over the states'
   * rows 0 .. position + S - 1). Each entry takes its own inputs
   * (attn_model_entry_input_info): those of "run" that it reads, and for
   * "decode" also `position`, i32 [B]: the tokens already in each
   * sequence's states, one value per sequence (they may differ). A position
   * + S beyond the states' capacity fails before any state is written. */
  const char *entry;
  /* The states, by name or by position (attn_model_state_info); every state
   * exactly once for "prefill" and "decode", none for "run". */
  const attn_tensor *states;
  int32_t num_states;
  /* ATTN_ON_DEVICE_* bits: whose `data` is memory on the model's device
   * rather than the host (a model built for a GPU target only; see
   * attn_model_device_info). The run reads and writes those tensors where
   * they are, with no copy, and returns once its kernels have finished. 0:
   * every tensor on the host. Unknown bits are refused. */
  uint32_t device_tensors;
} attn_run_options;

#define ATTN_ON_DEVICE_INPUTS 1u
#define ATTN_ON_DEVICE_OUTPUTS 2u
#define ATTN_ON_DEVICE_STATES 4u

/* attn_model_run with options; NULL options equal attn_model_run. */
ATTN_API attn_status
attn_model_run_with_options(attn_model *model, const attn_run_options *options,
                            const attn_tensor *inputs, int32_t num_inputs,
                            const attn_tensor *outputs, int32_t num_outputs);
/* attn_model_output_dims for the entry and states of `options` (NULL: "run"
 * and no states): `inputs` are that entry's, and the states bind their
 * symbols as in a run (a decode's cross-attention caches bind the memory's
 * length, which no input of the decode has). */
ATTN_API attn_status attn_model_output_dims_with_options(
    const attn_model *model, const attn_run_options *options,
    const attn_tensor *inputs, int32_t num_inputs, int32_t output,
    int64_t *dims, int32_t max_rank);

/* Where a model's kernels run; its library's target decides (attnc
 * --target=host-cuda, host-opencl). */
typedef enum attn_device {
  ATTN_DEVICE_HOST = 0,
  ATTN_DEVICE_CUDA = 1,
  ATTN_DEVICE_OPENCL = 2,
} attn_device;

/* A model's device. Zero-initialise it and set `size`: later runtimes may
 * add fields at the end, and write only `size` bytes. */
typedef struct attn_device_info {
  uint32_t size;  /* sizeof(attn_device_info) */
  int32_t device; /* attn_device */
  /* The API objects the kernels run in, NULL on the host. CUDA: the
   * device's primary context (a CUcontext, the one the CUDA runtime API and
   * so cudaMalloc use) and the stream, NULL for the default one. OpenCL: the
   * cl_context, in which memory for the model must be made, and the
   * cl_command_queue. Valid until attn_model_free. */
  void *context;
  void *queue;
} attn_device_info;

/* Describes the device `model` runs on; for a GPU, makes its context if no
 * kernel has yet (not for a model loaded with ATTN_LOAD_DESCRIBE_ONLY). */
ATTN_API attn_status attn_model_device_info(attn_model *model,
                                            attn_device_info *info);

/* Memory on the device of a model built for a GPU, to give tensors and
 * states on the device (attn_run_options.device_tensors) without an API of
 * its own: `*memory` is the API's (a CUdeviceptr, a cl_mem, cast to
 * void *). What is left is freed with the model. */
ATTN_API attn_status attn_model_device_alloc(attn_model *model, uint64_t bytes,
                                             void **memory);
ATTN_API attn_status attn_model_device_free(attn_model *model, void *memory);
/* Copies `bytes` between the host and the start of device memory: from
 * attn_model_device_alloc (its size is checked) or the application's own
 * in the model's context. They return when the copy is done. */
ATTN_API attn_status attn_model_copy_to_device(attn_model *model, void *memory,
                                               const void *host,
                                               uint64_t bytes);
ATTN_API attn_status attn_model_copy_to_host(attn_model *model, void *host,
                                             const void *memory,
                                             uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_ATTN_H */
