//===- python/src/attnc_module.cpp - attnc._attnc, the runtime's binding --===//
//
// A thin nanobind layer over the C API of libattnrt (attn/attn.h) and nothing
// else: load, describe, set threads, run (any entry point, with states),
// device memory of a GPU model and runs on it.
// Policy (which arrays are accepted, names, Python-side types) lives in
// attnc/__init__.py; what reaches this module is checked again here only as
// far as memory safety needs.
//
// Errors: a failing attn_* call raises the exception that the factory
// registered by attnc/__init__.py makes from (status, attn_last_error()), so
// the runtime's message reaches Python unchanged.
//
// The GIL is released around attn_model_load_with_options and
// attn_model_run_with_options. A model is closed under an exclusive lock that
// every run shares, so close() waits for the runs in flight instead of freeing
// the model under them.
//
//===----------------------------------------------------------------------===//

#include "attn/attn.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace {

/// attnc/__init__.py's factory: (status, message) -> exception instance.
nb::object &errorFactory() {
  static nb::object *factory = new nb::object();
  return *factory;
}

/// Raises the Python exception for a failed call (the GIL must be held).
[[noreturn]] void raiseStatus(attn_status status, const std::string &message) {
  nb::object &factory = errorFactory();
  if (!factory.is_valid())
    throw std::runtime_error(message);
  nb::object exc = factory(static_cast<int>(status), message);
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
  throw nb::python_error();
}

void check(attn_status status) {
  if (status != ATTN_OK)
    raiseStatus(status, attn_last_error());
}

// The dtypes of attn.h as DLPack types (what nanobind's ndarray speaks).
struct DtypeEntry {
  attn_dtype attn;
  uint8_t code;
  uint8_t bits;
};
constexpr DtypeEntry kDtypes[] = {
    {ATTN_F32, static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 32},
    {ATTN_I32, static_cast<uint8_t>(nb::dlpack::dtype_code::Int), 32},
    {ATTN_F16, static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16},
    {ATTN_BF16, static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16},
    {ATTN_I8, static_cast<uint8_t>(nb::dlpack::dtype_code::Int), 8},
};

std::optional<int32_t> attnDtype(nb::dlpack::dtype t) {
  for (const DtypeEntry &e : kDtypes)
    if (t.code == e.code && t.bits == e.bits && t.lanes == 1)
      return e.attn;
  return std::nullopt;
}

std::optional<nb::dlpack::dtype> dlpackDtype(int32_t attn) {
  for (const DtypeEntry &e : kDtypes)
    if (e.attn == attn)
      return nb::dlpack::dtype{e.code, e.bits, 1};
  return std::nullopt;
}

using InArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::c_contig, nb::device::cpu>;
using NumpyArray = nb::ndarray<nb::numpy>;

/// One caller's tensor: the name's and the dims' storage for attn_tensor.
struct Slot {
  std::string name;
  std::vector<int64_t> dims;
  attn_tensor tensor{};
};

template <typename Array>
void fillSlot(Slot &slot, const std::string &name, const char *what,
              const Array &a, void *data) {
  std::optional<int32_t> dtype = attnDtype(a.dtype());
  // A bf16 state crosses as its bits: numpy has no bfloat16 of its own, so
  // the package passes uint16 views (of ml_dtypes.bfloat16 arrays too).
  if (!dtype && std::string_view(what) == "state" &&
      a.dtype() == nb::dtype<uint16_t>())
    dtype = ATTN_BF16;
  if (!dtype)
    raiseStatus(ATTN_ERROR_DTYPE_MISMATCH,
                std::string(what) + " '" + name +
                    "' has an element type the runtime does not know "
                    "(f32, i32, f16, bf16, i8)");
  slot.name = name;
  slot.dims.assign(a.shape_ptr(), a.shape_ptr() + a.ndim());
  slot.tensor.dtype = *dtype;
  slot.tensor.rank = static_cast<int32_t>(a.ndim());
  slot.tensor.data = data;
}

/// Points the tensors at their slots' storage (after the slots stopped
/// moving).
std::vector<attn_tensor> tensorsOf(std::vector<Slot> &slots) {
  std::vector<attn_tensor> tensors;
  tensors.reserve(slots.size());
  for (Slot &s : slots) {
    s.tensor.name = s.name.c_str();
    s.tensor.dims = s.dims.data();
    tensors.push_back(s.tensor);
  }
  return tensors;
}

nb::tuple dimsInfo(const attn_tensor_info &t) {
  nb::list dims;
  for (int32_t i = 0; i < t.rank; ++i) {
    const attn_dim_info &d = t.dims[i];
    nb::object symbol = d.symbol ? nb::object(nb::str(d.symbol)) : nb::none();
    dims.append(nb::make_tuple(bool(d.is_dynamic), d.extent, symbol, d.max));
  }
  return nb::make_tuple(std::string(t.name), t.dtype, dims);
}

class Model {
public:
  Model(const std::string &path, std::optional<std::string> weights,
        bool checkWeights) {
    attn_load_options options{};
    options.size = sizeof options;
    options.weights = weights ? weights->c_str() : nullptr;
    options.flags = checkWeights ? ATTN_LOAD_CHECK_WEIGHTS : 0;
    attn_status status;
    std::string message;
    {
      nb::gil_scoped_release release;
      status = attn_model_load_with_options(path.c_str(), &options, &model);
      if (status != ATTN_OK)
        message = attn_last_error(); // thread-local: read it on this thread
    }
    if (status != ATTN_OK)
      raiseStatus(status, message);
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { attn_model_free(model); }

  void close() {
    nb::gil_scoped_release release; // a run in flight may hold the lock
    std::unique_lock<std::shared_mutex> lock(mutex);
    attn_model_free(model);
    model = nullptr;
  }
  bool closed() const { return model == nullptr; }

  /// One table of the model (inputs, outputs, weights, states) described
  /// tensor by tensor: `count` of them, each from `query`.
  nb::list infoList(int32_t (*count)(const attn_model *),
                    attn_status (*query)(const attn_model *, int32_t,
                                         attn_tensor_info *)) const {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    const attn_model *m = live();
    nb::list out;
    for (int32_t i = 0, n = count(m); i < n; ++i) {
      attn_tensor_info t;
      check(query(m, i, &t));
      out.append(dimsInfo(t));
    }
    return out;
  }

  nb::tuple info() const {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    attn_model_info i{};
    i.size = sizeof i;
    check(attn_model_get_info(live(), &i));
    return nb::make_tuple(std::string(i.name), std::string(i.compiler_version),
                          std::string(i.target), std::string(i.path),
                          std::string(i.precision));
  }

  nb::list tensors(bool inputs) const {
    return inputs ? infoList(attn_model_num_inputs, attn_model_input_info)
                  : infoList(attn_model_num_outputs, attn_model_output_info);
  }

  /// The tensors the model read from its weights file (none if embedded).
  nb::list weights() const {
    return infoList(attn_model_num_weights, attn_model_weight_info);
  }

  void setThreads(int32_t threads) {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    check(attn_model_set_threads(live(), threads));
  }

  /// The states (KV caches) the caller owns, as inputs() describes inputs.
  nb::list states() const {
    return infoList(attn_model_num_states, attn_model_state_info);
  }

  /// The inputs of entry `entry`, as inputs() describes run's.
  nb::list entryInputs(const std::string &entry) const {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    const attn_model *m = live();
    int32_t n = attn_model_entry_num_inputs(m, entry.c_str());
    if (n < 0)
      raiseStatus(ATTN_ERROR_INVALID_ARGUMENT, attn_last_error());
    nb::list out;
    for (int32_t i = 0; i < n; ++i) {
      attn_tensor_info t;
      check(attn_model_entry_input_info(m, entry.c_str(), i, &t));
      out.append(dimsInfo(t));
    }
    return out;
  }

  bool hasEntry(const std::string &name) const {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    return attn_model_has_entry(live(), name.c_str()) == 1;
  }

  /// Runs entry `entry` (None: "run") of the model on `inputs` (name,
  /// array), with `states` (name, array) written in place by "prefill" and
  /// "decode", writing the outputs of `out` (name, array) in place; returns
  /// a dict of the other outputs, in new arrays sized by
  /// attn_model_output_dims.
  nb::dict run(const std::vector<std::pair<std::string, InArray>> &inputs,
               const std::vector<std::pair<std::string, OutArray>> &out,
               std::optional<std::string> entry,
               const std::vector<std::pair<std::string, OutArray>> &states) {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    const attn_model *m = live();
    std::vector<Slot> inSlots(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      fillSlot(inSlots[i], inputs[i].first, "input", inputs[i].second,
               const_cast<void *>(inputs[i].second.data()));
    std::vector<attn_tensor> in = tensorsOf(inSlots);
    std::vector<Slot> stateSlots(states.size());
    for (size_t i = 0; i < states.size(); ++i)
      fillSlot(stateSlots[i], states[i].first, "state", states[i].second,
               states[i].second.data());
    std::vector<attn_tensor> stateTensors = tensorsOf(stateSlots);
    // Output dims follow from the entry's own inputs and its states (a
    // decode's cross-attention caches bind the memory's length).
    attn_run_options sizing{};
    sizing.size = sizeof sizing;
    sizing.entry = entry ? entry->c_str() : nullptr;
    sizing.states = stateTensors.data();
    sizing.num_states = static_cast<int32_t>(stateTensors.size());

    nb::dict result;
    std::vector<Slot> outSlots;
    outSlots.reserve(attn_model_num_outputs(m) + out.size());
    for (const auto &[name, a] : out) {
      outSlots.emplace_back();
      fillSlot(outSlots.back(), name, "output", a, a.data());
    }
    size_t given = outSlots.size();
    for (int32_t o = 0, n = attn_model_num_outputs(m); o < n; ++o) {
      attn_tensor_info t;
      check(attn_model_output_info(m, o, &t));
      bool isGiven = false;
      for (size_t i = 0; i < given; ++i)
        isGiven |= outSlots[i].name == t.name;
      if (isGiven)
        continue;
      Slot slot;
      slot.name = t.name;
      slot.dims.assign(t.rank, 0);
      check(attn_model_output_dims_with_options(m, &sizing, in.data(),
                                                static_cast<int32_t>(in.size()),
                                                o, slot.dims.data(), t.rank));
      std::optional<nb::dlpack::dtype> dt = dlpackDtype(t.dtype);
      if (!dt)
        raiseStatus(ATTN_ERROR_DTYPE_MISMATCH,
                    "output '" + slot.name + "' has dtype " +
                        std::to_string(t.dtype) + ", which has no numpy type");
      size_t elems = 1;
      for (int64_t d : slot.dims)
        elems *= static_cast<size_t>(d);
      size_t bytes = elems * (dt->bits / 8);
      // 64-byte aligned, as the runtime's own buffers are.
      void *data = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
      if (!data)
        raiseStatus(ATTN_ERROR_OUT_OF_MEMORY,
                    "cannot allocate " + std::to_string(bytes) +
                        " bytes for output '" + slot.name + "'");
      nb::capsule owner(data, [](void *p) noexcept { std::free(p); });
      std::vector<size_t> shape(slot.dims.begin(), slot.dims.end());
      NumpyArray array(data, shape.size(), shape.data(), owner, nullptr, *dt);
      slot.tensor.dtype = t.dtype;
      slot.tensor.rank = t.rank;
      slot.tensor.data = data;
      result[nb::str(t.name)] = array.cast();
      outSlots.push_back(std::move(slot));
    }
    std::vector<attn_tensor> outTensors = tensorsOf(outSlots);
    runReleased(entry, in, outTensors, stateTensors, 0);
    return result;
  }

  /// (attn_device, context, queue) of attn_model_device_info.
  nb::tuple device() const {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    attn_device_info i{};
    i.size = sizeof i;
    check(attn_model_device_info(live(), &i));
    return nb::make_tuple(i.device, reinterpret_cast<uintptr_t>(i.context),
                          reinterpret_cast<uintptr_t>(i.queue));
  }

  /// attn_model_device_alloc; the memory as an integer.
  uintptr_t deviceAlloc(uint64_t bytes) {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    void *memory = nullptr;
    check(attn_model_device_alloc(live(), bytes, &memory));
    return reinterpret_cast<uintptr_t>(memory);
  }

  /// attn_model_device_free; nothing once the model is closed (which freed
  /// it).
  void deviceFree(uintptr_t memory) {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    if (model)
      check(attn_model_device_free(model, reinterpret_cast<void *>(memory)));
  }

  /// The whole of `host` to the start of device memory `memory`.
  void copyToDevice(uintptr_t memory, const InArray &host) {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    check(attn_model_copy_to_device(live(), reinterpret_cast<void *>(memory),
                                    host.data(), host.nbytes()));
  }

  /// The start of device memory `memory` into the whole of `host`.
  void copyToHost(const OutArray &host, uintptr_t memory) {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    check(attn_model_copy_to_host(
        live(), host.data(), reinterpret_cast<void *>(memory), host.nbytes()));
  }

  /// A run whose tensors are (name, address, attn dtype, shape): host
  /// arrays the caller keeps alive, or device memory where
  /// `deviceTensors` (ATTN_ON_DEVICE_* bits) says so. Every output is
  /// given.
  using RawTensor =
      std::tuple<std::string, uintptr_t, int32_t, std::vector<int64_t>>;
  void runRaw(const std::vector<RawTensor> &inputs,
              const std::vector<RawTensor> &outputs,
              std::optional<std::string> entry,
              const std::vector<RawTensor> &states, uint32_t deviceTensors) {
    std::shared_lock<std::shared_mutex> lock = lockShared();
    live();
    auto slotsOf = [](const std::vector<RawTensor> &raw) {
      std::vector<Slot> slots(raw.size());
      for (size_t i = 0; i < raw.size(); ++i) {
        const auto &[name, address, dtype, dims] = raw[i];
        slots[i].name = name;
        slots[i].dims = dims;
        slots[i].tensor.dtype = dtype;
        slots[i].tensor.rank = static_cast<int32_t>(dims.size());
        slots[i].tensor.data = reinterpret_cast<void *>(address);
      }
      return slots;
    };
    std::vector<Slot> inSlots = slotsOf(inputs), outSlots = slotsOf(outputs),
                      stateSlots = slotsOf(states);
    runReleased(entry, tensorsOf(inSlots), tensorsOf(outSlots),
                tensorsOf(stateSlots), deviceTensors);
  }

private:
  /// attn_model_run_with_options with the GIL released (the caller holds
  /// the shared lock); raises its error.
  void runReleased(const std::optional<std::string> &entry,
                   const std::vector<attn_tensor> &in,
                   const std::vector<attn_tensor> &out,
                   const std::vector<attn_tensor> &states,
                   uint32_t deviceTensors) {
    attn_status status;
    std::string message;
    {
      nb::gil_scoped_release release;
      attn_run_options options{};
      options.size = sizeof options;
      options.entry = entry ? entry->c_str() : nullptr;
      options.states = states.data();
      options.num_states = static_cast<int32_t>(states.size());
      options.device_tensors = deviceTensors;
      status = attn_model_run_with_options(
          model, &options, in.data(), static_cast<int32_t>(in.size()),
          out.data(), static_cast<int32_t>(out.size()));
      if (status != ATTN_OK)
        message = attn_last_error();
    }
    if (status != ATTN_OK)
      raiseStatus(status, message);
  }

  /// Taken with the GIL released: a run in flight holds the lock while it
  /// waits for the GIL to return its outputs.
  std::shared_lock<std::shared_mutex> lockShared() const {
    nb::gil_scoped_release release;
    return std::shared_lock<std::shared_mutex>(mutex);
  }

  attn_model *live() const {
    if (!model)
      raiseStatus(ATTN_ERROR_INVALID_ARGUMENT, "the model is closed");
    return model;
  }

  attn_model *model = nullptr;
  mutable std::shared_mutex mutex;
};

} // namespace

NB_MODULE(_attnc, m) {
  m.doc() = "attnc's runtime binding (libattnrt's C API); use the attnc "
            "package, not this module";
  m.def(
      "_set_error_factory",
      [](nb::object factory) { errorFactory() = std::move(factory); },
      "factory(status, message) -> the exception to raise");
  m.def("status_string", [](int status) {
    return std::string(attn_status_string(static_cast<attn_status>(status)));
  });
  m.def("runtime_abi_version", &attn_runtime_abi_version);

  nb::class_<Model>(m, "_Model")
      .def(nb::init<const std::string &, std::optional<std::string>, bool>(),
           nb::arg("path"), nb::arg("weights").none(),
           nb::arg("check_weights") = false)
      .def("close", &Model::close)
      .def_prop_ro("closed", &Model::closed)
      .def("info", &Model::info)
      .def("inputs", [](const Model &self) { return self.tensors(true); })
      .def("outputs", [](const Model &self) { return self.tensors(false); })
      .def("weights", &Model::weights)
      .def("set_threads", &Model::setThreads)
      .def("states", &Model::states)
      .def("has_entry", &Model::hasEntry)
      .def("entry_inputs", &Model::entryInputs)
      .def("run", &Model::run, nb::arg("inputs"), nb::arg("out"),
           nb::arg("entry").none() = nb::none(),
           nb::arg("states") = std::vector<std::pair<std::string, OutArray>>())
      .def("device", &Model::device)
      .def("device_alloc", &Model::deviceAlloc)
      .def("device_free", &Model::deviceFree)
      .def("copy_to_device", &Model::copyToDevice)
      .def("copy_to_host", &Model::copyToHost)
      .def("run_raw", &Model::runRaw, nb::arg("inputs"), nb::arg("out"),
           nb::arg("entry").none(), nb::arg("states"),
           nb::arg("device_tensors"));
}
