//===- compiler/driver/PlanEmitter.cpp - plan.c of a model library --------===//
#include "compiler/driver/PlanEmitter.h"

#include "compiler/driver/PlanDeviceGlue.h"

#include "llvm/ADT/StringSet.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace attnc::driver {
namespace {

/// `s` as a C string literal; anything but printable ASCII is escaped.
std::string cString(llvm::StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += c;
    } else if (llvm::isPrint(c)) {
      out += c;
    } else {
      out += '\\';
      out += char('0' + (c >> 6));
      out += char('0' + ((c >> 3) & 7));
      out += char('0' + (c & 7));
    }
  }
  return out + "\"";
}

const char *bufferKindName(attn_model_buffer_kind kind) {
  switch (kind) {
  case ATTN_MODEL_BUFFER_INPUT:
    return "ATTN_MODEL_BUFFER_INPUT";
  case ATTN_MODEL_BUFFER_OUTPUT:
    return "ATTN_MODEL_BUFFER_OUTPUT";
  case ATTN_MODEL_BUFFER_CONSTANT:
    return "ATTN_MODEL_BUFFER_CONSTANT";
  case ATTN_MODEL_BUFFER_TEMP:
    return "ATTN_MODEL_BUFFER_TEMP";
  case ATTN_MODEL_BUFFER_WEIGHT:
    return "ATTN_MODEL_BUFFER_WEIGHT";
  case ATTN_MODEL_BUFFER_STATE:
    return "ATTN_MODEL_BUFFER_STATE";
  }
  return "-1";
}

/// The fixed part of run_kernel: views to halide_buffer_t, errors into the
/// call's context, and the copy kernel.
constexpr llvm::StringLiteral kGlue = R"c(
static void set_error(attn_model_context *context, const char *format, ...) {
  va_list args;
  if (!context || !context->error || context->error_size == 0)
    return;
  va_start(args, format);
  vsnprintf(context->error, context->error_size, format, args);
  va_end(args);
}

/* Kernels are compiled with Halide's user context: the call's context. */
static void on_halide_error(void *user_context, const char *message) {
  set_error((attn_model_context *)user_context, "%s", message);
}

/* Halide keeps the threads its pool has made: a smaller count set after the
 * first kernel ran (the "init" entry, at load) would not take effect. The
 * pool is shut down first and made again, of the new size, by the next
 * kernel. The runtime calls this only while no kernel of the model runs. */
static void set_num_threads(int32_t threads) {
  halide_shutdown_thread_pool();
  halide_set_num_threads(threads);
}

/* Device memory (model ABI 3) through Halide's device interface, in
 * 1-D byte buffers whose `device` field is the handle the runtime keeps. */
static void byte_buffer(halide_buffer_t *buf, halide_dimension_t *dim,
                        uint64_t handle, void *host, uint64_t bytes) {
  memset(buf, 0, sizeof *buf);
  memset(dim, 0, sizeof *dim);
  dim->extent = (int32_t)bytes;
  dim->stride = 1;
  buf->type.code = halide_type_uint;
  buf->type.bits = 8;
  buf->type.lanes = 1;
  buf->dimensions = 1;
  buf->dim = dim;
  buf->host = (uint8_t *)host;
  buf->device = handle;
  buf->device_interface = handle ? device_interface() : NULL;
}

static int32_t too_large(attn_model_context *context, uint64_t bytes) {
  if (bytes <= INT32_MAX)
    return 0;
  set_error(context, "a device buffer of %llu bytes is over the 2 GiB this "
            "library's buffers may have", (unsigned long long)bytes);
  return -1;
}

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

static int32_t copy_on_device(attn_model_context *context, uint64_t to,
                              uint64_t from, uint64_t bytes) {
  halide_buffer_t src, dst;
  halide_dimension_t src_dim, dst_dim;
  if (too_large(context, bytes))
    return -1;
  byte_buffer(&src, &src_dim, from, NULL, bytes);
  byte_buffer(&dst, &dst_dim, to, NULL, bytes);
  return halide_buffer_copy(context, &src, device_interface(), &dst);
}

/* The byte range [offset, offset + bytes) of an allocation: Halide's crop
 * (CUDA: the pointer moved; OpenCL: a sub-buffer made at each launch). */
static int32_t device_crop(attn_model_context *context, uint64_t handle,
                           uint64_t offset, uint64_t bytes,
                           uint64_t *cropped) {
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

static void device_release_crop(attn_model_context *context,
                                uint64_t cropped) {
  halide_buffer_t buf;
  halide_dimension_t dim;
  byte_buffer(&buf, &dim, cropped, NULL, 0);
  halide_device_release_crop(context, &buf);
}

static int32_t synchronize(attn_model_context *context) {
  return halide_device_sync_global(context, device_interface());
}

/* Dense row-major views become halide_buffer_ts, whose dim 0 is
 * innermost. */
static int32_t to_halide(attn_model_context *context, int32_t kernel,
                         int32_t num_args, const attn_model_view *views,
                         halide_buffer_t *bufs,
                         halide_dimension_t (*dims)[ATTN_MAX_RANK],
                         void **argv) {
  for (int32_t a = 0; a < num_args; ++a) {
    const attn_model_view *v = &views[a];
    const attn_dtype_desc *dtype = attn_dtype_lookup(v->dtype);
    if (v->rank < 0 || v->rank > ATTN_MAX_RANK || !dtype ||
        (v->device != ATTN_MODEL_DEVICE_HOST && v->device != ATTN_DEVICE) ||
        (v->device != ATTN_MODEL_DEVICE_HOST && !v->device_handle)) {
      set_error(context,
                "kernel '%s' argument %d has rank %d, dtype %d or device %d, "
                "which this library does not handle", kernels[kernel].name,
                (int)a, (int)v->rank, (int)v->dtype, (int)v->device);
      return -1;
    }
    int64_t stride = 1;
    for (int32_t d = 0; d < v->rank; ++d) {
      int64_t extent = v->dims[v->rank - 1 - d];
      if (extent < 0 || extent > INT32_MAX || stride > INT32_MAX) {
        set_error(context,
                  "kernel '%s' argument %d is too large for Halide's 32-bit "
                  "extents and strides", kernels[kernel].name, (int)a);
        return -1;
      }
      dims[a][d].min = 0;
      dims[a][d].extent = (int32_t)extent;
      dims[a][d].stride = (int32_t)stride;
      dims[a][d].flags = 0;
      stride *= extent;
    }
    memset(&bufs[a], 0, sizeof bufs[a]);
    bufs[a].host = (uint8_t *)v->data;
    if (v->device == ATTN_MODEL_DEVICE_HOST) {
      /* The host holds the data: a GPU kernel copies it to the device (all
       * of it, outputs too: a KV cache is written in place, row by row). */
      bufs[a].flags = halide_buffer_flag_host_dirty;
    } else {
      /* On the device; a host copy, if any, holds the same data. */
      bufs[a].device = v->device_handle;
      bufs[a].device_interface = device_interface();
    }
    bufs[a].type.code = (halide_type_code_t)dtype->halide_code;
    /* Kernels built for a target without half types read bf16 and f16 as
     * their bits. */
    if (ATTN_HALF_AS_BITS && dtype->size == 2)
      bufs[a].type.code = halide_type_uint;
    bufs[a].type.bits = (uint8_t)(dtype->size * 8);
    bufs[a].type.lanes = 1;
    bufs[a].dimensions = v->rank;
    bufs[a].dim = dims[a];
    argv[a] = &bufs[a];
  }
  return 0;
}

/* A GPU kernel leaves its outputs on the device and a device allocation on
 * every host view: those outputs come back to the host, then those
 * allocations are released. Views on the device stay as they are. Nothing
 * to do for CPU kernels. */
static int32_t finish_on_host(attn_model_context *context, int32_t kernel,
                              int32_t num_args, const attn_model_view *views,
                              halide_buffer_t *bufs, int32_t result) {
  for (int32_t a = 0; a < num_args; ++a) {
    if (views[a].device != ATTN_MODEL_DEVICE_HOST || !bufs[a].device)
      continue;
    if (result == 0 && a >= kernels[kernel].num_inputs)
      result = halide_copy_to_host(context, &bufs[a]);
    halide_device_free(context, &bufs[a]);
  }
  return result;
}

static int64_t num_elements(const attn_model_view *v) {
  int64_t n = 1;
  for (int32_t d = 0; d < v->rank; ++d)
    n *= v->dims[d];
  return n;
}

/* Outputs that are not kernel results: args[0] copied to args[1], on the
 * host or on the device. */
static int32_t copy_tensor(attn_model_context *context, int32_t kernel,
                           const attn_model_view *args) {
  int64_t n = num_elements(&args[0]);
  if (args[0].dtype != args[1].dtype || n != num_elements(&args[1]) ||
      args[0].device != args[1].device) {
    set_error(context,
              "kernel '%s' copies between tensors of different size, dtype "
              "or device",
              kernels[kernel].name);
    return -1;
  }
  uint64_t bytes = (uint64_t)n * attn_dtype_lookup(args[0].dtype)->size;
  if (n > 0 && args[0].device != ATTN_MODEL_DEVICE_HOST)
    return copy_on_device(context, args[1].device_handle,
                          args[0].device_handle, bytes);
  if (n > 0)
    memcpy(args[1].data, args[0].data, (size_t)bytes);
  return 0;
}
)c";

/// `{constant, num_terms, terms}` of a dim.
std::string dimInitializer(const PlanDim &d) {
  if (d.symbol < 0)
    return "{" + std::to_string(d.extent) + ", 0, {{0, 0}}}";
  return "{0, 1, {{" + std::to_string(d.symbol) + ", 1}}}";
}

class Emitter {
public:
  Emitter(const Plan &plan, const PlanSourceInfo &info, llvm::raw_ostream &os)
      : plan(plan), info(info), os(os) {}

  void emit() {
    os << "/* Generated by " << info.compilerVersion
       << ": the execution plan of model " << cString(plan.modelName)
       << ". */\n"
       << "#include \"attn/model_abi.h\"\n"
       << "#include \"HalideRuntime.h\"\n\n"
       << "#include <pthread.h>\n#include <stdarg.h>\n#include <stdint.h>\n"
       << "#include <stdio.h>\n#include <string.h>\n\n"
       << "#define ATTN_MAX_RANK " << maxRank() << "\n"
       << "#define ATTN_MAX_ARGS " << maxArgs() << "\n"
       << "#define ATTN_HALF_AS_BITS " << int(info.halfAsBits) << "\n"
       << "#define ATTN_DEVICE " << deviceName() << "\n\n";
    emitDeviceInterface(info.device, os);
    emitDeclarations();
    emitModelTables();
    for (auto [e, entry] : llvm::enumerate(plan.entries))
      emitEntryTables(e, entry);
    emitEntries();
    os << kGlue;
    emitDeviceApi(info.device, os);
    emitRunKernel();
    emitDescriptor();
  }

private:
  size_t maxRank() const {
    size_t rank = 1;
    for (const PlanEntry &e : plan.entries)
      for (const PlanBuffer &b : e.buffers)
        rank = std::max(rank, b.dims.size());
    return rank;
  }

  int32_t maxArgs() const {
    int32_t args = 1;
    for (const PlanKernel &k : plan.kernels)
      args = std::max(args, k.numInputs + k.numOutputs);
    return args;
  }

  void emitDeclarations() {
    if (info.embedsConstants)
      os << "extern const uint8_t " << kConstantsSymbol
         << "[] __attribute__((visibility(\"hidden\")));\n";
    llvm::StringSet<> declared;
    for (const PlanKernel &k : plan.kernels)
      if (k.op && declared.insert(k.fnName).second)
        os << "extern int " << k.fnName << "_argv(void **args);\n";
    os << "\n";
  }

  void emitModelTables() {
    os << "static const attn_model_symbol symbols[] = {\n";
    for (const auto &[name, bound] : plan.symbols)
      os << "  {" << cString(name) << ", " << bound << "},\n";
    os << "  {0, 0}};\n\n";

    for (auto [w, weight] : llvm::enumerate(plan.weights)) {
      os << "static const int64_t weight_dims" << w << "[] = {";
      for (int64_t d : weight.shape)
        os << d << ", ";
      os << "0};\n";
    }
    os << "static const attn_model_weight weights[] = {\n";
    for (auto [w, weight] : llvm::enumerate(plan.weights))
      os << "  {" << cString(weight.name) << ", " << weight.dtype << ", "
         << weight.shape.size() << ", weight_dims" << w << "},\n";
    os << "  {0, 0, 0, 0}};\n\n";

    for (auto [s, state] : llvm::enumerate(plan.states)) {
      os << "static const attn_model_dim state_dims" << s << "[] = {";
      for (const PlanDim &d : state.dims)
        os << dimInitializer(d) << ", ";
      os << "{0, 0, {{0, 0}}}};\n";
    }
    os << "static const attn_model_state states[] = {\n";
    for (auto [s, state] : llvm::enumerate(plan.states))
      os << "  {" << cString(state.name) << ", ATTN_MODEL_F32, "
         << state.dims.size() << ", state_dims" << s << "},\n";
    os << "  {0, 0, 0, 0}};\n\n";

    for (auto [k, kernel] : llvm::enumerate(plan.kernels)) {
      if (kernel.flops.empty())
        continue;
      os << "static const attn_model_flop_term flops" << k << "[] = {";
      for (const FlopTerm &term : kernel.flops) {
        os << "{" << llvm::formatv("{0:e17}", term.coeff) << ", "
           << term.symbols.size() << ", {";
        llvm::interleaveComma(term.symbols, os);
        os << "}}, ";
      }
      os << "};\n";
    }
    os << "static const attn_model_kernel kernels[] = {\n";
    for (auto [k, kernel] : llvm::enumerate(plan.kernels)) {
      os << "  {" << cString(kernel.name) << ", " << kernel.numInputs << ", "
         << kernel.numOutputs << ", " << kernel.flops.size() << ", ";
      if (kernel.flops.empty())
        os << "0},\n";
      else
        os << "flops" << k << "},\n";
    }
    os << "};\n\n";
  }

  void emitEntryTables(size_t e, const PlanEntry &entry) {
    std::string p = "e" + std::to_string(e) + "_";
    for (auto [b, buffer] : llvm::enumerate(entry.buffers)) {
      os << "static const attn_model_dim " << p << "dims" << b << "[] = {";
      for (const PlanDim &d : buffer.dims)
        os << dimInitializer(d) << ", ";
      os << "{0, 0, {{0, 0}}}};\n";
    }
    os << "static const attn_model_buffer " << p << "buffers[] = {\n";
    for (auto [b, buffer] : llvm::enumerate(entry.buffers))
      os << "  {" << bufferKindName(buffer.kind) << ", " << buffer.index << ", "
         << buffer.dtype << ", " << buffer.dims.size() << ", " << p << "dims"
         << b << ", " << buffer.offset << "u},\n";
    os << "};\n";
    emitTensors(p + "inputs", entry.inputs);
    emitTensors(p + "outputs", entry.outputs);
    for (auto [s, step] : llvm::enumerate(entry.steps)) {
      os << "static const int32_t " << p << "args" << s << "[] = {";
      llvm::interleaveComma(step.args, os);
      os << "};\n";
    }
    os << "static const attn_model_step " << p << "steps[] = {\n";
    for (auto [s, step] : llvm::enumerate(entry.steps))
      os << "  {" << step.kernel << ", " << step.args.size() << ", " << p
         << "args" << s << "},\n";
    os << "  {0, 0, 0}};\n\n";
  }

  void emitTensors(llvm::StringRef table, const std::vector<PlanTensor> &list) {
    os << "static const attn_model_tensor " << table << "[] = {\n";
    for (const PlanTensor &t : list)
      os << "  {" << cString(t.name) << ", " << t.buffer << "},\n";
    // The terminator keeps a table of an entry without inputs valid C.
    os << "  {0, 0}};\n";
  }

  void emitEntries() {
    os << "static const attn_model_entry entries[] = {\n";
    for (auto [e, entry] : llvm::enumerate(plan.entries)) {
      std::string p = "e" + std::to_string(e) + "_";
      os << "  {" << cString(entry.name) << ", " << entry.inputs.size() << ", "
         << p << "inputs, " << entry.outputs.size() << ", " << p << "outputs, "
         << entry.buffers.size() << ", " << p << "buffers, "
         << entry.steps.size() << ", " << p << "steps},\n";
    }
    os << "};\n";
  }

  const char *deviceName() const {
    switch (info.device) {
    case ATTN_MODEL_DEVICE_CUDA:
      return "ATTN_MODEL_DEVICE_CUDA";
    case ATTN_MODEL_DEVICE_OPENCL:
      return "ATTN_MODEL_DEVICE_OPENCL";
    default:
      return "ATTN_MODEL_DEVICE_HOST";
    }
  }

  void emitRunKernel() {
    os << R"c(
static int32_t run_kernel(attn_model_context *context, int32_t kernel,
                          int32_t num_args, const attn_model_view *args) {
  halide_buffer_t bufs[ATTN_MAX_ARGS];
  halide_dimension_t dims[ATTN_MAX_ARGS][ATTN_MAX_RANK];
  /* argv[0] points at the user context, then one buffer per argument. */
  void *argv[ATTN_MAX_ARGS + 1];
  void *user_context = context;
  int result;
  if (context && context->error && context->error_size)
    context->error[0] = 0;
  if (kernel < 0 || kernel >= )c"
       << plan.kernels.size() << R"c( ||
      num_args != kernels[kernel].num_inputs + kernels[kernel].num_outputs) {
    set_error(context, "run_kernel: no kernel %d taking %d arguments",
              (int)kernel, (int)num_args);
    return -1;
  }
  if (to_halide(context, kernel, num_args, args, bufs, dims, argv + 1) != 0)
    return -1;
  argv[0] = &user_context;
  switch (kernel) {
)c";
    for (auto [k, kernel] : llvm::enumerate(plan.kernels)) {
      os << "  case " << k << ":\n";
      if (kernel.op)
        os << "    result = " << kernel.fnName << "_argv(argv);\n    break;\n";
      else
        os << "    return copy_tensor(context, kernel, args);\n";
    }
    os << R"c(  default:
    return -1;
  }
  result = finish_on_host(context, kernel, num_args, args, bufs, result);
  if (result != 0 && context && context->error && context->error_size &&
      !context->error[0])
    set_error(context, "kernel '%s' failed with Halide error %d",
              kernels[kernel].name, result);
  return result;
}
)c";
  }

  void emitDescriptor() {
    os << "\nstatic const attn_model_desc descriptor = {\n"
       << "  ATTN_MODEL_MAGIC, ATTN_MODEL_ABI_VERSION,\n"
       << "  " << cString(info.compilerVersion) << ",\n"
       << "  " << cString(plan.modelName) << ",\n"
       << "  " << cString(info.halideTarget) << ",\n"
       << "  " << plan.symbols.size() << ", symbols,\n"
       << "  " << plan.weights.size() << ", weights,\n"
       << "  " << plan.states.size() << ", states,\n"
       << "  " << (info.embedsConstants ? kConstantsSymbol.str() : "0") << ", "
       << plan.constantsSize << "u,\n"
       << "  " << plan.kernels.size() << ", kernels,\n"
       << "  " << plan.entries.size() << ", entries,\n"
       << "  run_kernel, set_num_threads,\n"
       << "  ATTN_DEVICE, " << (info.device ? "&device_api" : "0") << "};\n";
    os << R"c(
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void install_hooks(void) {
  halide_set_error_handler(on_halide_error);
  install_device_hooks();
}

__attribute__((visibility("default"))) const attn_model_desc *
)c" << ATTN_MODEL_ENTRY_SYMBOL
       << R"c((void) {
  pthread_once(&install_once, install_hooks);
  return &descriptor;
}
)c";
  }

  const Plan &plan;
  const PlanSourceInfo &info;
  llvm::raw_ostream &os;
};

} // namespace

std::string emitPlanSource(const Plan &plan, const PlanSourceInfo &info) {
  std::string source;
  llvm::raw_string_ostream os(source);
  Emitter(plan, info, os).emit();
  return source;
}

} // namespace attnc::driver
