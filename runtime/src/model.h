//===- runtime/src/model.h - Loaded model state (internal) ------*- C++ -*-===//
//
// What the runtime keeps per loaded model, and the helpers the C API edge
// (api.cpp), the loader (load.cpp) and the executor (run.cpp) share.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_MODEL_H
#define ATTN_RUNTIME_SRC_MODEL_H

#include "attn/attn.h"
#include "attn/model_abi.h"

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace attn::rt {

/// Records `message` as this thread's last error and returns `status`.
attn_status fail(attn_status status, std::string message);

/// "[B, S, 4]": a buffer's dims as the model declares them.
std::string declaredDims(const attn_model_desc &desc,
                         const attn_model_buffer &buffer);
/// "[2, 5, 4]".
std::string dimsString(const int64_t *dims, int32_t rank);
const char *dtypeName(int32_t dtype);

/// A 64-byte aligned TEMP buffer, kept between runs and grown on demand.
struct TempBuffer {
  void *data = nullptr;
  std::size_t capacity = 0;
};

/// The symbol values one call binds from its inputs.
struct Binding {
  std::vector<int64_t> symbols;            ///< -1 while unbound
  std::vector<const attn_tensor *> inputs; ///< per model input
};

} // namespace attn::rt

struct attn_model {
  void *handle = nullptr;
  std::string path;
  const attn_model_desc *desc = nullptr;
  /// attn_dim_info tables handed out by the info queries.
  std::vector<std::vector<attn_dim_info>> inputDims, outputDims;

  /// Guards everything below: a run owns the temps and view dims.
  std::mutex runMutex;
  std::vector<attn::rt::TempBuffer> temps;      ///< per buffer index
  std::vector<std::vector<int64_t>> bufferDims; ///< per buffer index
  std::vector<attn_model_view> views;

  ~attn_model();
};

namespace attn::rt {

/// dlopens `path`, checks magic, ABI and every table of the descriptor.
attn_status loadModel(const char *path, attn_model *&out);

/// Matches `inputs` to the model's inputs and binds every symbol from them,
/// checking dtype, rank, constant dims, bounds and consistency. `needData`:
/// whether a non-empty input must have a data pointer.
attn_status bindInputs(const attn_model &model, const attn_tensor *inputs,
                       int32_t numInputs, bool needData, Binding &binding);

/// The dims of `buffer` under `binding` (every symbol it uses is bound).
void resolveDims(const attn_model_buffer &buffer, const Binding &binding,
                 int64_t *dims);

attn_status runModel(attn_model &model, const attn_tensor *inputs,
                     int32_t numInputs, const attn_tensor *outputs,
                     int32_t numOutputs);

} // namespace attn::rt

#endif // ATTN_RUNTIME_SRC_MODEL_H
