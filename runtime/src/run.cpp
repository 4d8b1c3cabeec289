//===- runtime/src/run.cpp - Bind tensors and run the plan ----------------===//
//
// Every input and output is checked against the model before the first
// kernel runs: a kernel compiled for fixed shapes and bounds would otherwise
// read or write out of bounds.
//
//===----------------------------------------------------------------------===//
#include "device_buffers.h"
#include "model.h"

#include "attn/dtypes.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
#include <string_view>

namespace attn::rt {

std::string kernelMessage(char *error, std::size_t size) {
  error[size - 1] = '\0';
  std::string m = error;
  // A failed Halide require(condition, value, words...) reads "Requirement
  // Failed: (false) <value> <words...>": the condition is printed as its
  // value at run time (always false here), then every argument of the
  // message, the require's value first. attnc's requires say it all in
  // their words ("attention key length 6 at batch index 1 is outside 0 ..
  // 5"), so only those are kept.
  constexpr std::string_view prefix = "Requirement Failed: (";
  if (m.compare(0, prefix.size(), prefix) == 0) {
    std::size_t i = prefix.size();
    for (int depth = 1; i < m.size() && depth > 0; ++i)
      depth += m[i] == '(' ? 1 : m[i] == ')' ? -1 : 0;
    std::size_t value = m.find_first_not_of(' ', i);
    std::size_t gap = m.find(' ', value == std::string::npos ? i : value);
    std::size_t words =
        m.find_first_not_of(" \n", gap == std::string::npos ? m.size() : gap);
    if (words != std::string::npos)
      m.erase(0, words);
  }
  while (!m.empty() && std::isspace(static_cast<unsigned char>(m.back())))
    m.pop_back();
  return m.empty() ? "it gave no message" : m;
}

namespace {

/// The element count of `dims`, or -1 when it overflows int64.
int64_t numElements(const int64_t *dims, int32_t rank) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] != 0 && n > std::numeric_limits<int64_t>::max() / dims[i])
      return -1;
    n *= dims[i];
  }
  return n;
}

std::string namesOf(const attn_model_tensor *table, int32_t count) {
  std::string s;
  for (int32_t i = 0; i < count; ++i)
    s += (i ? ", " : "") + std::string(table[i].name);
  return s;
}

/// Matches given tensors to the model's by name, or by position where the
/// name is NULL; each model tensor must be given exactly once.
attn_status matchTensors(const attn_model_desc &d, const attn_model_entry &e,
                         bool inputs, const attn_tensor *given,
                         int32_t numGiven,
                         std::vector<const attn_tensor *> &matched) {
  const char *what = inputs ? "input" : "output";
  int32_t count = inputs ? e.num_inputs : e.num_outputs;
  const attn_model_tensor *table = inputs ? e.inputs : e.outputs;
  // Entries other than "run" may take other inputs (a decode reads no
  // encoder input), so their messages name the entry.
  bool isRun = std::string_view(e.name) == "run";
  std::string model = (isRun ? "" : "entry '" + std::string(e.name) + "' of ") +
                      "model '" + std::string(d.model_name) + "'";
  auto index = [&](const char *name) {
    for (int32_t j = 0; j < count; ++j)
      if (std::string_view(table[j].name) == name)
        return j;
    return int32_t(-1);
  };
  // An unknown name first: giving an input of "run" that this entry does
  // not read (an encoder's, to a decode from cross-attention caches) also
  // makes the count wrong, and the name says why.
  for (int32_t i = 0; given && i < numGiven; ++i) {
    if (!given[i].name || index(given[i].name) >= 0)
      continue;
    const attn_model_entry *run = findEntry(d, "run");
    bool ofRun = false;
    for (int32_t j = 0; inputs && !isRun && run && j < run->num_inputs; ++j)
      ofRun |= std::string_view(run->inputs[j].name) == given[i].name;
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                model + " has no " + what + " named '" + given[i].name +
                    "': its " + what + "s are " + namesOf(table, count) +
                    (ofRun ? std::string(" ('") + given[i].name +
                                 "' is an input of 'run' that '" + e.name +
                                 "' does not read: leave it out)"
                           : std::string()));
  }
  if (numGiven != count || (numGiven > 0 && !given))
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                model + (isRun ? " has " : " takes ") + std::to_string(count) +
                    " " + what + "s (" + namesOf(table, count) + ") but " +
                    std::to_string(numGiven) + " were given");
  matched.assign(count, nullptr);
  for (int32_t i = 0; i < numGiven; ++i) {
    int32_t j = given[i].name ? index(given[i].name) : i;
    if (matched[j])
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  std::string(what) + " '" + table[j].name +
                      "' is given twice: give each once, by name or position");
    matched[j] = &given[i];
  }
  return ATTN_OK;
}

/// Checks a tensor's dtype, rank and pointers before its dims are read.
attn_status checkTensorHeader(const attn_model_desc &d,
                              const attn_model_buffer &buf,
                              const std::string &where, const attn_tensor &t,
                              bool needData) {
  if (t.dtype != buf.dtype)
    return fail(ATTN_ERROR_DTYPE_MISMATCH,
                where + " has dtype " + dtypeName(t.dtype) +
                    " but the model expects " + dtypeName(buf.dtype));
  if (t.rank != buf.rank)
    return fail(ATTN_ERROR_SHAPE_MISMATCH,
                where + " has rank " + std::to_string(t.rank) +
                    " but the model expects rank " + std::to_string(buf.rank) +
                    " " + declaredDims(d, buf));
  if (t.rank > 0 && !t.dims)
    return fail(ATTN_ERROR_INVALID_ARGUMENT, where + " has NULL dims");
  for (int32_t i = 0; i < t.rank; ++i)
    if (t.dims[i] < 0)
      return fail(ATTN_ERROR_SHAPE_MISMATCH,
                  where + " dim " + std::to_string(i) + " is negative (" +
                      std::to_string(t.dims[i]) + ")");
  int64_t n = numElements(t.dims, t.rank);
  if (n < 0)
    return fail(ATTN_ERROR_SHAPE_MISMATCH, where + " dims " +
                                               dimsString(t.dims, t.rank) +
                                               " overflow the element count");
  if (needData && n > 0 && !t.data)
    return fail(ATTN_ERROR_INVALID_ARGUMENT, where + " has NULL data");
  return ATTN_OK;
}

std::string bindingString(const attn_model_desc &d, const Binding &binding) {
  std::string s;
  for (int32_t i = 0; i < d.num_symbols; ++i)
    if (binding.symbols[i] >= 0)
      s += (s.empty() ? "" : ", ") + std::string(d.symbols[i].name) + "=" +
           std::to_string(binding.symbols[i]);
  return s;
}

bool isPlainSymbol(const attn_model_dim &dim) {
  return dim.num_terms == 1 && dim.terms[0].coeff == 1 && dim.constant == 0;
}

/// constant + sum(coeff * symbol), or nullopt when it overflows int64.
std::optional<int64_t> evalDim(const attn_model_dim &dim,
                               const std::vector<int64_t> &symbols) {
  int64_t v = dim.constant;
  for (int32_t t = 0; t < dim.num_terms; ++t) {
    int64_t term;
    if (__builtin_mul_overflow(int64_t(dim.terms[t].coeff),
                               symbols[dim.terms[t].symbol], &term) ||
        __builtin_add_overflow(v, term, &v))
      return std::nullopt;
  }
  return v;
}

/// Binds the symbol of a plain-symbol dim (`v` is the input's extent),
/// checking its bound and that every input gives it the same value.
attn_status bindSymbol(const attn_model_desc &d, const attn_model_entry &e,
                       const attn_model_dim &dim, int64_t v,
                       const std::string &dimWhere, int32_t input, int32_t i,
                       Binding &binding,
                       std::vector<std::pair<int32_t, int32_t>> &boundAt) {
  int32_t symbol = dim.terms[0].symbol;
  const attn_model_symbol &sym = d.symbols[symbol];
  // An empty batch or sequence is refused before any kernel, alike for
  // every dim: kernels index the last row of what they read.
  if (v == 0)
    return fail(ATTN_ERROR_DIM_OUT_OF_BOUNDS,
                dimWhere + " (" + sym.name +
                    ") is 0: the model runs on at least one " + sym.name +
                    "; leave empty tensors out of the call");
  if (sym.max > 0 && v > sym.max)
    return fail(ATTN_ERROR_DIM_OUT_OF_BOUNDS,
                dimWhere + " (" + sym.name + ") is " + std::to_string(v) +
                    ", beyond its bound " + sym.name +
                    " <= " + std::to_string(sym.max) +
                    ": split the input or recompile the model with a "
                    "larger bound");
  int64_t &value = binding.symbols[symbol];
  if (value < 0) {
    value = v;
    boundAt[symbol] = {input, i};
    return ATTN_OK;
  }
  if (value == v)
    return ATTN_OK;
  // A negative index is state -1 - index.
  auto [firstInput, firstDim] = boundAt[symbol];
  std::string first =
      firstInput >= 0 ? "input '" + std::string(e.inputs[firstInput].name)
                      : "state '" + std::string(d.states[-1 - firstInput].name);
  return fail(ATTN_ERROR_SHAPE_MISMATCH,
              std::string("symbol ") + sym.name + " is " +
                  std::to_string(value) + " in " + first + "' dim " +
                  std::to_string(firstDim) + " but " + std::to_string(v) +
                  " in " + dimWhere + ": give every input" +
                  (firstInput < 0 || input < 0 ? " and state" : "") +
                  " the same " + sym.name);
}

} // namespace

attn_status bindInputs(const attn_model &model, const attn_tensor *inputs,
                       int32_t numInputs, bool needData, Binding &binding) {
  return bindEntry(model, *model.run, inputs, numInputs, nullptr, 0, needData,
                   binding);
}

namespace {

/// Matches the caller's states to the descriptor's, each exactly once, when
/// the entry uses state; none may be given to one that does not.
attn_status matchStates(const attn_model_desc &d, const attn_model_entry &e,
                        const attn_tensor *given, int32_t numGiven,
                        std::vector<const attn_tensor *> &matched) {
  bool usesState = false;
  for (int32_t b = 0; b < e.num_buffers; ++b)
    usesState |= e.buffers[b].kind == ATTN_MODEL_BUFFER_STATE;
  // Messages only: a run that binds its states right builds no strings.
  auto model = [&] { return "model '" + std::string(d.model_name) + "'"; };
  auto names = [&] {
    std::string s;
    for (int32_t i = 0; i < d.num_states; ++i)
      s += (i ? ", " : "") + std::string(d.states[i].name);
    return s;
  };
  int32_t count = usesState ? d.num_states : 0;
  if (numGiven != count || (numGiven > 0 && !given))
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                "entry '" + std::string(e.name) + "' of " + model() +
                    (usesState ? " takes its " + std::to_string(count) +
                                     " states (" + names() + ")"
                               : std::string(" takes no states")) +
                    " but " + std::to_string(numGiven) + " were given");
  matched.assign(d.num_states, nullptr);
  for (int32_t i = 0; i < numGiven; ++i) {
    int32_t index = i;
    if (given[i].name) {
      index = -1;
      for (int32_t j = 0; j < d.num_states; ++j)
        if (std::string_view(d.states[j].name) == given[i].name)
          index = j;
      if (index < 0)
        return fail(ATTN_ERROR_INVALID_ARGUMENT,
                    model() + " has no state named '" + given[i].name +
                        "': its states are " + names());
    }
    if (matched[index])
      return fail(ATTN_ERROR_INVALID_ARGUMENT,
                  "state '" + std::string(d.states[index].name) +
                      "' is given twice: give each once, by name or position");
    matched[index] = &given[i];
  }
  return ATTN_OK;
}

} // namespace

attn_status bindEntry(const attn_model &model, const attn_model_entry &e,
                      const attn_tensor *inputs, int32_t numInputs,
                      const attn_tensor *states, int32_t numStates,
                      bool needData, Binding &binding) {
  const attn_model_desc &d = *model.desc;
  if (attn_status s = matchStates(d, e, states, numStates, binding.states);
      s != ATTN_OK)
    return s;
  if (attn_status s =
          matchTensors(d, e, true, inputs, numInputs, binding.inputs);
      s != ATTN_OK)
    return s;
  binding.symbols.assign(d.num_symbols, -1);
  // Where each symbol was first bound, for the inconsistency message.
  std::vector<std::pair<int32_t, int32_t>> boundAt(d.num_symbols);
  auto where = [&](int32_t j) {
    return "input '" + std::string(e.inputs[j].name) + "'";
  };
  // First the dims that are constants or bind a symbol, ...
  for (int32_t j = 0; j < e.num_inputs; ++j) {
    const attn_tensor &t = *binding.inputs[j];
    const attn_model_buffer &buf = e.buffers[e.inputs[j].buffer];
    if (attn_status s = checkTensorHeader(d, buf, where(j), t, needData);
        s != ATTN_OK)
      return s;
    for (int32_t i = 0; i < buf.rank; ++i) {
      const attn_model_dim &dim = buf.dims[i];
      std::string dimWhere = where(j) + " dim " + std::to_string(i);
      int64_t v = t.dims[i];
      if (dim.num_terms == 0 && v != dim.constant)
        return fail(ATTN_ERROR_SHAPE_MISMATCH,
                    dimWhere + " is " + std::to_string(v) +
                        " but the model fixes it to " +
                        std::to_string(dim.constant) + " (dims " +
                        declaredDims(d, buf) + ")");
      if (isPlainSymbol(dim))
        if (attn_status s =
                bindSymbol(d, e, dim, v, dimWhere, j, i, binding, boundAt);
            s != ATTN_OK)
          return s;
    }
  }
  // States bind their symbols (a cache's capacity) and agree on the others.
  for (int32_t j = 0; j < int32_t(binding.states.size()); ++j) {
    const attn_tensor *t = binding.states[j];
    if (!t)
      continue;
    const attn_model_state &st = d.states[j];
    attn_model_buffer buf{
        ATTN_MODEL_BUFFER_STATE, j, st.dtype, st.rank, st.dims, 0};
    std::string sw = "state '" + std::string(st.name) + "'";
    if (attn_status s = checkTensorHeader(d, buf, sw, *t, needData);
        s != ATTN_OK)
      return s;
    for (int32_t i = 0; i < st.rank; ++i) {
      const attn_model_dim &dim = st.dims[i];
      std::string dimWhere = sw + " dim " + std::to_string(i);
      if (dim.num_terms == 0 && t->dims[i] != dim.constant)
        return fail(ATTN_ERROR_SHAPE_MISMATCH,
                    dimWhere + " is " + std::to_string(t->dims[i]) +
                        " but the model fixes it to " +
                        std::to_string(dim.constant) + " (dims " +
                        declaredDims(d, buf) + ")");
      if (isPlainSymbol(dim))
        if (attn_status s = bindSymbol(d, e, dim, t->dims[i], dimWhere, -1 - j,
                                       i, binding, boundAt);
            s != ATTN_OK)
          return s;
    }
  }
  // ... then the affine ones (S + 1), computed from the bound symbols.
  for (int32_t j = 0; j < e.num_inputs; ++j) {
    const attn_tensor &t = *binding.inputs[j];
    const attn_model_buffer &buf = e.buffers[e.inputs[j].buffer];
    for (int32_t i = 0; i < buf.rank; ++i) {
      const attn_model_dim &dim = buf.dims[i];
      if (dim.num_terms == 0 || isPlainSymbol(dim))
        continue;
      std::optional<int64_t> want = evalDim(dim, binding.symbols);
      if (!want || *want != t.dims[i])
        return fail(ATTN_ERROR_SHAPE_MISMATCH,
                    where(j) + " dim " + std::to_string(i) + " is " +
                        std::to_string(t.dims[i]) +
                        " but the model declares it " + declaredDim(d, dim) +
                        ", which is " +
                        (want ? std::to_string(*want) : "too large") +
                        " with " + bindingString(d, binding) + " (dims " +
                        declaredDims(d, buf) + ")");
    }
  }
  return ATTN_OK;
}

attn_status resolveDims(const attn_model_desc &desc,
                        const attn_model_buffer &buffer, const Binding &binding,
                        const std::string &where, int64_t *dims) {
  for (int32_t i = 0; i < buffer.rank; ++i) {
    std::optional<int64_t> v = evalDim(buffer.dims[i], binding.symbols);
    if (!v || *v < 0)
      return fail(ATTN_ERROR_SHAPE_MISMATCH,
                  where + " dim " + std::to_string(i) + " is " +
                      declaredDim(desc, buffer.dims[i]) + ", which is " +
                      (v ? std::to_string(*v) : "too large") + " with " +
                      bindingString(desc, binding) +
                      ": give inputs for which it is a valid extent");
    dims[i] = *v;
  }
  return ATTN_OK;
}

namespace {

/// How many bindings a workspace keeps plans for: a server alternating a few
/// shapes (prompt lengths) plans each once.
constexpr std::size_t PlanCacheSize = 4;

/// The plan of `state` for `binding`: a cached one, moved to the front, or a
/// new one that evicts the least recently used.
attn_status findPlan(const attn_model_desc &d, const attn_model_entry &entry,
                     EntryState &state, const Binding &binding,
                     uint64_t alignment, const ArenaPlan *&out) {
  if (state.entry != &entry) {
    state.entry = &entry;
    state.lifetimes = tempLifetimes(entry);
    state.plans.clear();
  }
  auto &plans = state.plans;
  for (std::size_t i = 0; i < plans.size(); ++i)
    if (plans[i].symbols == binding.symbols) {
      std::rotate(plans.begin(), plans.begin() + i, plans.begin() + i + 1);
      out = &plans.front();
      return ATTN_OK;
    }
  ArenaPlan plan;
  if (attn_status s = planArena(d, entry, state.lifetimes, binding.symbols,
                                alignment, plan);
      s != ATTN_OK)
    return s;
  if (plans.size() == PlanCacheSize)
    plans.pop_back();
  plans.insert(plans.begin(), std::move(plan));
  out = &plans.front();
  return ATTN_OK;
}

/// Grows the arena of `state` to `bytes` (at least 64 when the entry has
/// temps, so even an empty temp gets a valid pointer); never shrinks it.
attn_status ensureArena(const attn_model_desc &d, const attn_model_entry &e,
                        EntryState &state, const Binding &binding,
                        uint64_t bytes) {
  if (state.lifetimes.empty() || (state.arena && bytes <= state.arenaCapacity))
    return ATTN_OK;
  void *p = alignedAlloc(std::size_t(bytes));
  if (!p)
    return fail(ATTN_ERROR_OUT_OF_MEMORY,
                "cannot allocate the " + std::to_string(bytes) +
                    "-byte arena of the temporaries of entry '" + e.name +
                    "' of model '" + d.model_name + "' (" +
                    bindingString(d, binding) + "): give smaller inputs");
  std::free(state.arena);
  state.arena = p;
  state.arenaCapacity = std::max<std::size_t>(64, std::size_t(bytes));
  return ATTN_OK;
}

/// Where the data of buffer `b` is for this call.
attn_status bufferData(attn_model &model, const attn_model_entry &entry,
                       const EntryState &state, const ArenaPlan &plan,
                       const Binding &binding,
                       const std::vector<const attn_tensor *> &outputs,
                       int32_t b, void *&data) {
  const attn_model_buffer &buf = entry.buffers[b];
  switch (buf.kind) {
  case ATTN_MODEL_BUFFER_INPUT:
    data = binding.inputs[buf.index]->data;
    return ATTN_OK;
  case ATTN_MODEL_BUFFER_OUTPUT:
    data = outputs[buf.index]->data;
    return ATTN_OK;
  // Kernels only read weights, and constants outside "init" (the load
  // checked every step); the view type is shared with outputs.
  case ATTN_MODEL_BUFFER_CONSTANT:
    data = model.constants ? const_cast<uint8_t *>(model.constants) + buf.offset
                           : nullptr;
    return ATTN_OK;
  case ATTN_MODEL_BUFFER_WEIGHT:
    data = const_cast<void *>(model.weights[buf.index]);
    return ATTN_OK;
  case ATTN_MODEL_BUFFER_TEMP:
    data = static_cast<uint8_t *>(state.arena) + plan.offsets[b];
    return ATTN_OK;
  case ATTN_MODEL_BUFFER_STATE:
    data = binding.states[buf.index]->data;
    return ATTN_OK;
  default: // the load checked every kind
    return fail(ATTN_ERROR_INVALID_LIBRARY,
                "entry '" + std::string(entry.name) + "' buffer " +
                    std::to_string(b) + " has an unknown kind");
  }
}

} // namespace

attn_status runSteps(attn_model &model, const attn_model_entry &entry,
                     EntryState &state, const Binding &binding,
                     const std::vector<const attn_tensor *> &outputs,
                     const char *what) {
  const attn_model_desc &d = *model.desc;
  const ArenaPlan *plan = nullptr;
  if (attn_status s = findPlan(d, entry, state, binding,
                               arenaAlignment(model, entry), plan);
      s != ATTN_OK)
    return s;
  // On a GPU library's device, every buffer of the run lives there: only
  // inputs and states cross in here, outputs and states out at the end.
  const bool onDevice = runsOnDevice(model, entry);
  // The caller's tensors on the device are wrapped for this run only.
  struct ReleaseHandles {
    const attn_model_desc &d;
    EntryState &state;
    bool onDevice;
    ~ReleaseHandles() {
      if (onDevice)
        releaseCallerHandles(d, state);
    }
  } release{d, state, onDevice};
  if (attn_status s =
          onDevice
              ? bindDeviceBuffers(model, entry, state, *plan, binding, outputs)
              : ensureArena(d, entry, state, binding, plan->arenaBytes);
      s != ATTN_OK)
    return s;
  // Views are rebuilt per step; state.views keeps their storage across runs.
  for (int32_t s = 0; s < entry.num_steps; ++s) {
    const attn_model_step &step = entry.steps[s];
    state.views.resize(step.num_args);
    for (int32_t a = 0; a < step.num_args; ++a) {
      int32_t b = step.args[a];
      if (onDevice) {
        bool read = a < d.kernels[step.kernel].num_inputs;
        if (attn_status st = deviceView(model, entry, state, *plan, binding, b,
                                        read, state.views[a]);
            st != ATTN_OK)
          return st;
        continue;
      }
      const attn_model_buffer &buf = entry.buffers[b];
      void *data = nullptr;
      if (attn_status st =
              bufferData(model, entry, state, *plan, binding, outputs, b, data);
          st != ATTN_OK)
        return st;
      state.views[a] = {data,
                        buf.dtype,
                        buf.rank,
                        plan->bufferDims[b].data(),
                        ATTN_MODEL_DEVICE_HOST,
                        0};
    }
    // Per call, so concurrent calls never share an error buffer.
    char error[1024] = "";
    attn_model_context context{error, sizeof error};
    bool timed = model.stepCallback && &entry != model.init;
    auto start = timed ? std::chrono::steady_clock::now()
                       : std::chrono::steady_clock::time_point();
    int32_t status =
        d.run_kernel(&context, step.kernel, step.num_args, state.views.data());
    // A GPU kernel returns once launched: timing it waits for it.
    if (timed && status == 0 && onDevice)
      if (attn_status st = synchronizeDevice(model); st != ATTN_OK)
        return st;
    if (timed && status == 0) {
      std::chrono::duration<double> took =
          std::chrono::steady_clock::now() - start;
      const attn_model_kernel &kernel = d.kernels[step.kernel];
      double flops = 0;
      for (int32_t t = 0; t < kernel.num_flop_terms; ++t) {
        double term = kernel.flop_terms[t].coeff;
        for (int32_t i = 0; i < kernel.flop_terms[t].num_symbols; ++i)
          term *= double(binding.symbols[kernel.flop_terms[t].symbols[i]]);
        flops += term;
      }
      double bytes = 0;
      for (int32_t a = 0; a < step.num_args; ++a) {
        const attn_model_buffer &buf = entry.buffers[step.args[a]];
        if (auto n = byteSize(plan->bufferDims[step.args[a]],
                              attn_dtype_lookup(buf.dtype)->size))
          bytes += double(*n);
      }
      attn_step_event event{
          s, entry.num_steps, kernel.name, took.count(), flops, bytes};
      model.stepCallback(model.stepUser, &event);
    }
    if (status != 0)
      return fail(ATTN_ERROR_KERNEL_FAILED,
                  "model '" + std::string(d.model_name) + "': " + what + " '" +
                      d.kernels[step.kernel].name + "' (step " +
                      std::to_string(s) +
                      ") failed: " + kernelMessage(error, sizeof error));
  }
  if (onDevice)
    return copyOutputsToHost(model, entry, state, *plan, binding, outputs);
  return ATTN_OK;
}

namespace {

/// A workspace of "run" owned by one call: taken from the model's pool (or
/// made when every pooled one is busy) and given back when the call ends,
/// however it ends. The pool's mutex is held only to take and give back.
class WorkspaceLease {
public:
  explicit WorkspaceLease(attn_model &model) : model(model) {
    std::lock_guard<std::mutex> lock(model.workspaceMutex);
    if (!model.idleWorkspaces.empty()) {
      workspace = std::move(model.idleWorkspaces.back());
      model.idleWorkspaces.pop_back();
      return;
    }
    // Room to give every workspace back, so the destructor never
    // allocates (and so never throws).
    model.idleWorkspaces.reserve(model.numWorkspaces + 1);
    workspace = std::make_unique<EntryState>();
    ++model.numWorkspaces;
  }
  ~WorkspaceLease() {
    std::lock_guard<std::mutex> lock(model.workspaceMutex);
    model.idleWorkspaces.push_back(std::move(workspace));
  }
  WorkspaceLease(const WorkspaceLease &) = delete;
  WorkspaceLease &operator=(const WorkspaceLease &) = delete;

  EntryState &state() { return *workspace; }

private:
  attn_model &model;
  std::unique_ptr<EntryState> workspace;
};

/// A model loaded with ATTN_LOAD_DESCRIBE_ONLY has no weights or constants.
attn_status refuseDescribeOnly(const attn_model &model) {
  const attn_model_desc &d = *model.desc;
  std::string m = "model '" + std::string(d.model_name) + "' ('" + model.path +
                  "') was loaded to describe it only " +
                  "(ATTN_LOAD_DESCRIBE_ONLY), so it cannot run";
  if (d.num_weights == 0)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                m + ": load it without ATTN_LOAD_DESCRIBE_ONLY to run it");
  std::string names;
  for (int32_t i = 0; i < std::min(d.num_weights, 3); ++i)
    names += (i ? ", '" : "'") + std::string(d.weights[i].name) + "'";
  if (d.num_weights > 3)
    names += " and " + std::to_string(d.num_weights - 3) + " more";
  return fail(ATTN_ERROR_INVALID_ARGUMENT,
              m + ": it reads its " + std::to_string(d.num_weights) +
                  " weights (" + names +
                  ") from a safetensors file at load: load it again with "
                  "that file (attn_load_options.weights, attn-run --weights "
                  "FILE) and without ATTN_LOAD_DESCRIBE_ONLY");
}

} // namespace

attn_status runModel(attn_model &model, const attn_model_entry &e,
                     const attn_tensor *inputs, int32_t numInputs,
                     const attn_tensor *states, int32_t numStates,
                     const attn_tensor *outputs, int32_t numOutputs,
                     uint32_t deviceTensors) {
  if (model.describeOnly)
    return refuseDescribeOnly(model);
  const attn_model_desc &d = *model.desc;
  if (deviceTensors)
    if (attn_status s = checkDeviceTensors(model, deviceTensors); s != ATTN_OK)
      return s;
  Binding binding;
  if (attn_status s = bindEntry(model, e, inputs, numInputs, states, numStates,
                                true, binding);
      s != ATTN_OK)
    return s;
  binding.deviceTensors = deviceTensors;
  std::vector<const attn_tensor *> outs;
  if (attn_status s = matchTensors(d, e, false, outputs, numOutputs, outs);
      s != ATTN_OK)
    return s;
  for (int32_t j = 0; j < e.num_outputs; ++j) {
    const attn_tensor &t = *outs[j];
    const attn_model_buffer &buf = e.buffers[e.outputs[j].buffer];
    std::string where = "output '" + std::string(e.outputs[j].name) + "'";
    if (attn_status s = checkTensorHeader(d, buf, where, t, true); s != ATTN_OK)
      return s;
    int64_t want[ATTN_MAX_RANK];
    if (attn_status s = resolveDims(d, buf, binding, where, want); s != ATTN_OK)
      return s;
    for (int32_t i = 0; i < buf.rank; ++i)
      if (t.dims[i] != want[i])
        return fail(
            ATTN_ERROR_SHAPE_MISMATCH,
            where + " has dims " + dimsString(t.dims, t.rank) +
                " but the inputs make it " + dimsString(want, buf.rank) + " (" +
                declaredDims(d, buf) + " with " + bindingString(d, binding) +
                "): size it with attn_model_output_dims");
  }

  WorkspaceLease workspace(model);
  return runSteps(model, e, workspace.state(), binding, outs, "kernel");
}

attn_status planWorkspace(const attn_model &model, const attn_tensor *inputs,
                          int32_t numInputs, ArenaPlan &plan) {
  Binding binding;
  if (attn_status s = bindInputs(model, inputs, numInputs, false, binding);
      s != ATTN_OK)
    return s;
  return planArena(*model.desc, *model.run, tempLifetimes(*model.run),
                   binding.symbols, arenaAlignment(model, *model.run), plan);
}

} // namespace attn::rt
