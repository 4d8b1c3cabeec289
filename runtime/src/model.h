//===- runtime/src/model.h - Loaded model state (internal) ------*- C++ -*-===//
//
// What the runtime keeps per loaded model, and the helpers the C API edge
// (api.cpp), the loader (load.cpp), the weights reader (weights.cpp) and the
// executor (run.cpp) share.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_MODEL_H
#define ATTN_RUNTIME_SRC_MODEL_H

#include "attn/attn.h"
#include "attn/model_abi.h"
#include "attn/safetensors.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace attn::rt {

/// Records `message` as this thread's last error and returns `status`.
attn_status fail(attn_status status, std::string message);

/// The message a kernel left in its context's `error` buffer (`size` bytes,
/// not necessarily terminated) as a user should read it: a failed Halide
/// require()'s own words without the "Requirement Failed: (false) <value> "
/// Halide puts before them, no trailing newline; "it gave no message" for
/// none.
std::string kernelMessage(char *error, std::size_t size);

/// "S + 1", "2*S", "4": one dim as the model declares it.
std::string declaredDim(const attn_model_desc &desc, const attn_model_dim &dim);
/// "[B, S + 1, 4]": a buffer's dims as the model declares them.
std::string declaredDims(const attn_model_desc &desc,
                         const attn_model_buffer &buffer);
/// "[2, 5, 4]".
std::string dimsString(const int64_t *dims, int32_t rank);
/// "F32", from attn/dtypes.h; "an unknown dtype" for a code it lacks.
const char *dtypeName(int32_t dtype);
/// "f32", "bf16" or "int8" (attnc --precision's spelling) for an
/// attn_model_precision; nullptr for a code this runtime does not know.
const char *precisionName(int32_t precision);

/// A 64-byte aligned block from posix_memalign (at least 64 bytes even for
/// `bytes` == 0), or nullptr.
void *alignedAlloc(std::size_t bytes);

/// product(dims) * itemSize, or nullopt when it overflows.
std::optional<uint64_t> byteSize(const std::vector<int64_t> &dims,
                                 uint64_t itemSize);

/// The steps of an entry during which one TEMP buffer holds data: from the
/// first step that passes it to a kernel to the last, both included.
struct TempLifetime {
  int32_t buffer; ///< index into the entry's buffers
  int32_t first, last;
};

/// Where an entry's temps lie in one arena for one binding of the symbols,
/// and the dims of every buffer under that binding (the views point here).
struct ArenaPlan {
  std::vector<int64_t> symbols;                 ///< the binding: the key
  std::vector<std::vector<int64_t>> bufferDims; ///< per buffer index
  std::vector<uint64_t> offsets;                ///< per buffer index; temps
  uint64_t arenaBytes = 0;                      ///< the arena this plan needs
  uint64_t largestLiveBytes = 0; ///< max over steps of the temps alive there
  uint64_t tempBytes = 0;        ///< every temp in its own buffer
};

/// The lifetime of every TEMP buffer of `entry` that some step touches.
std::vector<TempLifetime> tempLifetimes(const attn_model_entry &entry);

/// Sizes every buffer of `entry` under `binding` and places its temps in one
/// arena, greedy by size: largest first, each at the lowest offset, a
/// multiple of `alignment` (a power of two: 64 on the host, more on a
/// device), that overlaps no placed temp whose lifetime intersects its own.
attn_status planArena(const attn_model_desc &desc,
                      const attn_model_entry &entry,
                      const std::vector<TempLifetime> &lifetimes,
                      const std::vector<int64_t> &symbols, uint64_t alignment,
                      ArenaPlan &plan);

/// What executing one entry point needs besides the model: an arena for its
/// temps, the plans of the last bindings, and storage for the views of a
/// step. Owned by one call at a time: "run" takes one from the model's pool
/// per call (see attn_model), "init" makes one for the load.
struct EntryState {
  /// The entry `lifetimes` and `plans` describe (computed on first use).
  const attn_model_entry *entry = nullptr;
  std::vector<TempLifetime> lifetimes;
  /// The plans of the last bindings, most recently used first: a steady
  /// state of equal shapes plans nothing and allocates nothing.
  std::vector<ArenaPlan> plans;
  /// 64-byte aligned; grown to the largest plan, never shrunk.
  void *arena = nullptr;
  std::size_t arenaCapacity = 0;
  std::vector<attn_model_view> views;
  /// On a GPU library's device (device_buffers.h): an allocation per buffer
  /// index (inputs, outputs, temps, states), grown to the largest binding,
  /// never shrunk; `deviceOwner`'s device_api frees them with the workspace.
  struct DeviceBuffer {
    uint64_t handle = 0, bytes = 0;
  };
  std::vector<DeviceBuffer> device;
  /// On a GPU: the temps' one allocation (the arena on the device), grown
  /// to the largest plan, and a crop of it per temp (per buffer index, 0 for
  /// others) for the plan of `cropSymbols`.
  DeviceBuffer deviceArena;
  std::vector<uint64_t> tempCrops;
  std::vector<int64_t> cropSymbols;
  const attn_model_desc *deviceOwner = nullptr;
  /// The entry `device` and `hostCopies` are laid out for.
  const attn_model_entry *deviceEntry = nullptr;
  /// Host copies of the i32 buffers kernels write, per buffer index.
  std::map<int32_t, std::vector<uint8_t>> hostCopies;
  /// For one run: the handles of the caller's tensors on the device, per
  /// buffer index (0: the buffer is in `device`), and those wrapped for it.
  std::vector<uint64_t> callerHandles;
  std::vector<uint64_t> wrapped;
  /// The inputs on the device whose host copy this run already made.
  std::set<int32_t> copiedInputs;

  EntryState() = default;
  EntryState(const EntryState &) = delete;
  EntryState &operator=(const EntryState &) = delete;
  ~EntryState();
};

/// The symbol values one call binds from its inputs.
struct Binding {
  std::vector<int64_t> symbols;            ///< -1 while unbound
  std::vector<const attn_tensor *> inputs; ///< per entry input
  std::vector<const attn_tensor *> states; ///< per descriptor state
  /// ATTN_ON_DEVICE_* bits: whose data is device memory.
  uint32_t deviceTensors = 0;
};

/// An allocation of attn_model_device_alloc.
struct DeviceAllocation {
  uint64_t handle = 0, bytes = 0;
};

} // namespace attn::rt

struct attn_model {
  void *handle = nullptr;
  std::string path;
  const attn_model_desc *desc = nullptr;
  const attn_model_entry *run = nullptr;  ///< the "run" entry
  const attn_model_entry *init = nullptr; ///< the "init" entry, if any
  /// attn_dim_info tables handed out by the info queries.
  std::vector<std::vector<attn_dim_info>> inputDims, outputDims, stateDims,
      weightDims;
  /// The inputs' dims of each entry, by its index in the descriptor.
  std::vector<std::vector<std::vector<attn_dim_info>>> entryInputDims;

  /// The constants block: the library's embedded one, or `ownedConstants`
  /// that the "init" entry filled at load.
  const uint8_t *constants = nullptr;
  uint8_t *ownedConstants = nullptr;
  /// The weights file, kept mapped only while kernels of "run" read its
  /// tensors directly; `weights` points at each tensor's data (into the
  /// mapping, or into `weightCopies` where the file's data was misaligned).
  std::optional<attn::safetensors::Checkpoint> weightsFile;
  std::vector<const void *> weights; ///< per attn_model_desc.weights entry
  std::vector<void *> weightCopies;  ///< freed with the model
  /// On a GPU library's device (device_buffers.h), uploaded at load: the
  /// weights the kernels read, per weights entry (0: none), and the pieces
  /// of the constants block, by offset.
  std::vector<uint64_t> deviceWeights;
  std::map<uint64_t, uint64_t> deviceConstants;
  /// attn_model_device_alloc's allocations, by their native memory; the
  /// mutex guards only the map.
  mutable std::mutex deviceMemoryMutex;
  std::map<uint64_t, attn::rt::DeviceAllocation> deviceMemory;

  /// Loaded with ATTN_LOAD_DESCRIBE_ONLY: no weights, no constants, no runs.
  bool describeOnly = false;

  /// attn_model_set_step_callback: told of each kernel call of "run".
  attn_step_callback stepCallback = nullptr;
  void *stepUser = nullptr;

  /// Workspaces of "run" not in use. A run takes one (or makes one when all
  /// are busy) and gives it back, so concurrent runs never share an arena;
  /// the mutex guards only the list, never a kernel.
  std::mutex workspaceMutex;
  std::vector<std::unique_ptr<attn::rt::EntryState>> idleWorkspaces;
  std::size_t numWorkspaces = 0; ///< idle or in use

  attn_model() = default;
  attn_model(const attn_model &) = delete;
  attn_model &operator=(const attn_model &) = delete;
  ~attn_model();
};

namespace attn::rt {

/// dlopens `path`, checks magic, ABI and every table of the descriptor, then
/// reads the weights from `weights` (nullptr: none given) and runs "init";
/// `flags` are attn_load_options' (ATTN_LOAD_DESCRIBE_ONLY skips both: the
/// model can be described, not run).
attn_status loadModel(const char *path, const char *weights, uint32_t flags,
                      attn_model *&out);

/// Checks every count, index, name and byte range of `desc` (magic and ABI
/// version aside); messages name the library at `path`.
attn_status validateDescriptor(const attn_model_desc &desc,
                               const std::string &path);

/// Points `model` at `desc`, which validateDescriptor accepted, and builds
/// the dim tables the info queries hand out.
void adoptDescriptor(attn_model &model, const attn_model_desc &desc);

/// Checks the weights file at `weights` against the model's weights table,
/// records where each tensor's data is, allocates the constants block and
/// runs the "init" entry; with `checkFinite`, first fails on the first NaN
/// or Inf of a float weight (ATTN_LOAD_CHECK_WEIGHTS).
attn_status loadWeights(attn_model &model, const char *weights,
                        bool checkFinite);

/// The entry of `desc` called `name`, or nullptr.
const attn_model_entry *findEntry(const attn_model_desc &desc,
                                  const char *name);

/// Matches `inputs` to the "run" entry's inputs and binds every symbol from
/// them, checking dtype, rank, dims, bounds and consistency. `needData`:
/// whether a non-empty input must have a data pointer.
attn_status bindInputs(const attn_model &model, const attn_tensor *inputs,
                       int32_t numInputs, bool needData, Binding &binding);
/// bindInputs for entry `e`, which may also read `states` (the caller's
/// state buffers, matched to the descriptor's by name or position).
attn_status bindEntry(const attn_model &model, const attn_model_entry &e,
                      const attn_tensor *inputs, int32_t numInputs,
                      const attn_tensor *states, int32_t numStates,
                      bool needData, Binding &binding);

/// The dims of `buffer` under `binding` (every symbol it uses is bound).
/// Fails with SHAPE_MISMATCH, naming `where`, when a dim comes out negative
/// or overflows.
attn_status resolveDims(const attn_model_desc &desc,
                        const attn_model_buffer &buffer, const Binding &binding,
                        const std::string &where, int64_t *dims);

/// Runs every step of `entry` once. `outputs`: the caller's tensor per entry
/// output. `what` names the entry's kernels in messages ("kernel", "init
/// kernel").
attn_status runSteps(attn_model &model, const attn_model_entry &entry,
                     EntryState &state, const Binding &binding,
                     const std::vector<const attn_tensor *> &outputs,
                     const char *what);

/// Runs `entry` once; `deviceTensors` (ATTN_ON_DEVICE_* bits): which of the
/// caller's tensors are in device memory.
attn_status runModel(attn_model &model, const attn_model_entry &entry,
                     const attn_tensor *inputs, int32_t numInputs,
                     const attn_tensor *states, int32_t numStates,
                     const attn_tensor *outputs, int32_t numOutputs,
                     uint32_t deviceTensors);

/// The arena plan of "run" for `inputs` (checked as for output dims).
attn_status planWorkspace(const attn_model &model, const attn_tensor *inputs,
                          int32_t numInputs, ArenaPlan &plan);

} // namespace attn::rt

#endif // ATTN_RUNTIME_SRC_MODEL_H
