//===- runtime/include/attn/attn.hpp - C++ wrapper of the C API -*- C++ -*-===//
//
// Header-only and thin: RAII ownership of a model and exceptions instead of
// status codes. Everything it does goes through attn.h, so the C ABI stays
// the only contract with libattnrt.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_ATTN_HPP
#define ATTN_ATTN_HPP

#include "attn/attn.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attn {

/// A failed call: the status and attn_last_error()'s message.
class Error : public std::runtime_error {
public:
  Error(attn_status status, const std::string &message)
      : std::runtime_error(message), code(status) {}
  attn_status status() const { return code; }

private:
  attn_status code;
};

/// Throws Error for anything but ATTN_OK.
inline void check(attn_status status) {
  if (status != ATTN_OK)
    throw Error(status, attn_last_error());
}

/// What a run takes for its temporary buffers (attn_model_workspace_size).
struct WorkspaceSize {
  uint64_t arenaBytes = 0;       ///< the arena planned by lifetime
  uint64_t largestLiveBytes = 0; ///< the most bytes alive at one step
  uint64_t tempBytes = 0;        ///< one buffer per temporary
};

/// Memory on the device of a model built for a GPU
/// (attn_model_device_alloc), freed with this object, which must not outlive
/// its model. Move-only. get() is what an attn_tensor on the device holds.
class DeviceMemory {
public:
  DeviceMemory(attn_model *model, uint64_t bytes) : model(model) {
    check(attn_model_device_alloc(model, bytes, &memory));
  }
  DeviceMemory(DeviceMemory &&other) noexcept
      : model(other.model), memory(std::exchange(other.memory, nullptr)) {}
  DeviceMemory &operator=(DeviceMemory &&other) noexcept {
    std::swap(model, other.model);
    std::swap(memory, other.memory);
    return *this;
  }
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  ~DeviceMemory() {
    if (memory)
      attn_model_device_free(model, memory);
  }

  void *get() const { return memory; }
  /// Copies `bytes` from the host to its start, or from its start back.
  void upload(const void *host, uint64_t bytes) {
    check(attn_model_copy_to_device(model, memory, host, bytes));
  }
  void download(void *host, uint64_t bytes) const {
    check(attn_model_copy_to_host(model, host, memory, bytes));
  }

private:
  attn_model *model;
  void *memory = nullptr;
};

/// A loaded model; unloaded when the last owner goes. Move-only. Runs may be
/// concurrent (see attn.h).
class Model {
public:
  /// A library that embeds its weights (attnc --weights).
  explicit Model(const std::string &path) {
    check(attn_model_load(path.c_str(), &model));
  }
  /// A library that reads its weights at load from safetensors file
  /// `weights`.
  Model(const std::string &path, const std::string &weights) {
    attn_load_options options{};
    options.size = sizeof options;
    options.weights = weights.c_str();
    check(attn_model_load_with_options(path.c_str(), &options, &model));
  }
  /// Loads `path` to describe it (ATTN_LOAD_DESCRIBE_ONLY): no weights are
  /// read, so none are needed, and run() throws.
  static Model describeOnly(const std::string &path) {
    Model m;
    attn_load_options options{};
    options.size = sizeof options;
    options.flags = ATTN_LOAD_DESCRIBE_ONLY;
    check(attn_model_load_with_options(path.c_str(), &options, &m.model));
    return m;
  }
  Model(Model &&other) noexcept : model(std::exchange(other.model, nullptr)) {}
  Model &operator=(Model &&other) noexcept {
    std::swap(model, other.model);
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { attn_model_free(model); }

  attn_model_info info() const {
    attn_model_info i{};
    i.size = sizeof i;
    check(attn_model_get_info(model, &i));
    return i;
  }
  int32_t numInputs() const { return attn_model_num_inputs(model); }
  int32_t numOutputs() const { return attn_model_num_outputs(model); }
  attn_tensor_info input(int32_t index) const {
    attn_tensor_info i;
    check(attn_model_input_info(model, index, &i));
    return i;
  }
  attn_tensor_info output(int32_t index) const {
    attn_tensor_info i;
    check(attn_model_output_info(model, index, &i));
    return i;
  }
  void setThreads(int32_t threads) {
    check(attn_model_set_threads(model, threads));
  }
  /// The dims output `index` has for these inputs.
  std::vector<int64_t> outputDims(const std::vector<attn_tensor> &inputs,
                                  int32_t index) const {
    std::vector<int64_t> dims(ATTN_MAX_RANK);
    check(attn_model_output_dims(model, inputs.data(),
                                 static_cast<int32_t>(inputs.size()), index,
                                 dims.data(), ATTN_MAX_RANK));
    dims.resize(output(index).rank);
    return dims;
  }
  /// The memory a run on these inputs takes for its temporaries.
  WorkspaceSize workspaceSize(const std::vector<attn_tensor> &inputs) const {
    WorkspaceSize w;
    check(attn_model_workspace_size(
        model, inputs.data(), static_cast<int32_t>(inputs.size()),
        &w.arenaBytes, &w.largestLiveBytes, &w.tempBytes));
    return w;
  }
  /// Safe to call from several threads at once on one model.
  void run(const std::vector<attn_tensor> &inputs,
           const std::vector<attn_tensor> &outputs) {
    check(attn_model_run(model, inputs.data(),
                         static_cast<int32_t>(inputs.size()), outputs.data(),
                         static_cast<int32_t>(outputs.size())));
  }
  /// An entry point, states, tensors on the device: attn_run_options.
  void run(const std::vector<attn_tensor> &inputs,
           const std::vector<attn_tensor> &outputs,
           const attn_run_options &options) {
    check(attn_model_run_with_options(
        model, &options, inputs.data(), static_cast<int32_t>(inputs.size()),
        outputs.data(), static_cast<int32_t>(outputs.size())));
  }
  /// Where the kernels run, and the GPU API's context and queue.
  attn_device_info device() const {
    attn_device_info i{};
    i.size = sizeof i;
    check(attn_model_device_info(model, &i));
    return i;
  }
  /// `bytes` of memory on the model's device (a GPU library only).
  DeviceMemory deviceAlloc(uint64_t bytes) const {
    return DeviceMemory(model, bytes);
  }
  attn_model *get() const { return model; }

private:
  Model() = default;

  attn_model *model = nullptr;
};

} // namespace attn

#endif // ATTN_ATTN_HPP
