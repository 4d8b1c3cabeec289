//===- fuzz/descriptor_fuzzer.cpp - The loader's descriptor validation ----===//
//
// A real model library's descriptor (test/models/decoder.attn, or the library
// named by ATTNC_FUZZ_LIBRARY) is copied into tables the fuzzer owns, and the
// input says how to damage the copy: set any count, index, kind, dtype, rank,
// dim term, bound, offset, coefficient or the device to any value, drop or
// repeat table rows, change or remove names, make table pointers NULL. Every
// table is as long as its count says (the digest, not the validator, guards
// that a count matches its table; a negative count or a NULL table is fair
// game).
// validateDescriptor must refuse the copy with a message naming the library,
// or accept it; an accepted copy is then described and planned through the
// public API (info queries, output dims, workspace sizes for a binding of the
// symbols the input picks), which must not crash either.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzFiles.h"
#include "fuzz/FuzzModel.h"

#include "model.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using attnc::fuzz::finding;

namespace {

constexpr const char *kTarget = "descriptor_fuzzer";
constexpr const char *kPath = "fuzzed.so";

using Name = std::optional<std::string>; // nullopt: a NULL pointer

const char *cstr(const Name &n) { return n ? n->c_str() : nullptr; }
Name copyName(const char *s) { return s ? Name(s) : std::nullopt; }

/// A table the fuzzer owns, with a flag to hand out NULL instead of it.
template <typename T> struct Table {
  std::vector<T> rows;
  bool null = false;
  const T *ptr() const { return null || rows.empty() ? nullptr : rows.data(); }
};

struct Buffer {
  attn_model_buffer b;
  Table<attn_model_dim> dims;
};
struct Step {
  attn_model_step s;
  Table<int32_t> args;
};
struct Entry {
  Name name;
  Table<attn_model_tensor> inputs, outputs;
  std::vector<Name> inputNames, outputNames;
  Table<Buffer> buffers;
  Table<Step> steps;
  // Materialised rows (their pointers point into the tables above).
  std::vector<attn_model_buffer> cBuffers;
  std::vector<attn_model_step> cSteps;
};
struct Weight {
  attn_model_weight w;
  Name name;
  Table<int64_t> dims;
};
struct State {
  attn_model_state s;
  Name name;
  Table<attn_model_dim> dims;
};
struct Kernel {
  attn_model_kernel k;
  Name name;
  Table<attn_model_flop_term> flops;
};

/// The descriptor, copied into owned tables.
struct Desc {
  attn_model_desc d;
  Name compilerVersion, modelName, target;
  Table<attn_model_symbol> symbols;
  std::vector<Name> symbolNames;
  Table<Weight> weights;
  Table<State> states;
  Table<Kernel> kernels;
  Table<Entry> entries;
  // Materialised rows.
  std::vector<attn_model_weight> cWeights;
  std::vector<attn_model_state> cStates;
  std::vector<attn_model_kernel> cKernels;
  std::vector<attn_model_entry> cEntries;
};

template <typename T> Table<T> copyTable(const T *rows, int64_t count) {
  Table<T> t;
  if (rows && count > 0)
    t.rows.assign(rows, rows + count);
  return t;
}

Desc copyDesc(const attn_model_desc &src) {
  Desc c;
  c.d = src;
  c.compilerVersion = copyName(src.compiler_version);
  c.modelName = copyName(src.model_name);
  c.target = copyName(src.target);
  c.symbols = copyTable(src.symbols, src.num_symbols);
  for (const attn_model_symbol &s : c.symbols.rows)
    c.symbolNames.push_back(copyName(s.name));
  for (int32_t i = 0; i < src.num_weights; ++i)
    c.weights.rows.push_back(
        {src.weights[i], copyName(src.weights[i].name),
         copyTable(src.weights[i].dims, src.weights[i].rank)});
  for (int32_t i = 0; i < src.num_states; ++i)
    c.states.rows.push_back(
        {src.states[i], copyName(src.states[i].name),
         copyTable(src.states[i].dims, src.states[i].rank)});
  for (int32_t i = 0; i < src.num_kernels; ++i)
    c.kernels.rows.push_back(
        {src.kernels[i], copyName(src.kernels[i].name),
         copyTable(src.kernels[i].flop_terms, src.kernels[i].num_flop_terms)});
  for (int32_t i = 0; i < src.num_entries; ++i) {
    const attn_model_entry &e = src.entries[i];
    Entry &ce = c.entries.rows.emplace_back();
    ce.name = copyName(e.name);
    ce.inputs = copyTable(e.inputs, e.num_inputs);
    ce.outputs = copyTable(e.outputs, e.num_outputs);
    for (const attn_model_tensor &t : ce.inputs.rows)
      ce.inputNames.push_back(copyName(t.name));
    for (const attn_model_tensor &t : ce.outputs.rows)
      ce.outputNames.push_back(copyName(t.name));
    for (int32_t b = 0; b < e.num_buffers; ++b)
      ce.buffers.rows.push_back(
          {e.buffers[b], copyTable(e.buffers[b].dims, e.buffers[b].rank)});
    for (int32_t s = 0; s < e.num_steps; ++s)
      ce.steps.rows.push_back(
          {e.steps[s], copyTable(e.steps[s].args, e.steps[s].num_args)});
  }
  return c;
}

/// What one mutation may touch, gathered by walking the copy: integers, names
/// (with the lists that keep them), tables (to resize or NULL).
struct Targets {
  /// A field to set; `kind` says its type.
  struct Int {
    enum Kind { I32, I64, U64, F64 } kind;
    void *field;
    void set(int64_t v) const;
  };
  std::vector<Int> ints;
  std::vector<Name *> names;
  std::vector<std::function<void(FuzzedDataProvider &)>> tables;

  void i32(int32_t &x) { ints.push_back({Int::I32, &x}); }
  void i64(int64_t &x) { ints.push_back({Int::I64, &x}); }
  void u64(uint64_t &x) { ints.push_back({Int::U64, &x}); }
  void f64(double &x) { ints.push_back({Int::F64, &x}); }
  void dim(attn_model_dim &d) {
    i64(d.constant);
    i32(d.num_terms);
    for (attn_model_dim_term &t : d.terms) {
      i32(t.symbol);
      i32(t.coeff);
    }
  }
  /// Rows may be dropped or repeated, the table made NULL; `names` (if any)
  /// follows the rows.
  template <typename T>
  void table(Table<T> &t, std::vector<Name> *names = nullptr) {
    tables.push_back([&t, names](FuzzedDataProvider &p) {
      switch (p.ConsumeIntegralInRange(0, 2)) {
      case 0:
        t.null = !t.null;
        return;
      case 1:
        if (!t.rows.empty()) {
          size_t i = p.ConsumeIntegralInRange<size_t>(0, t.rows.size() - 1);
          t.rows.erase(t.rows.begin() + i);
          if (names)
            names->erase(names->begin() + i);
        }
        return;
      default:
        if (!t.rows.empty() && t.rows.size() < 64) {
          size_t i = p.ConsumeIntegralInRange<size_t>(0, t.rows.size() - 1);
          t.rows.push_back(t.rows[i]);
          if (names)
            names->push_back((*names)[i]);
        }
        return;
      }
    });
  }
};

Targets walk(Desc &c) {
  Targets t;
  t.names = {&c.compilerVersion, &c.modelName, &c.target};
  t.u64(c.d.constants_size);
  // A GPU device without memory functions, or an unknown one.
  t.i32(c.d.device);
  t.i32(c.d.precision);
  for (int32_t *n : {&c.d.num_symbols, &c.d.num_weights, &c.d.num_states,
                     &c.d.num_kernels, &c.d.num_entries})
    t.i32(*n);
  t.table(c.symbols, &c.symbolNames);
  for (attn_model_symbol &s : c.symbols.rows)
    t.i64(s.max);
  for (Name &n : c.symbolNames)
    t.names.push_back(&n);
  t.table(c.weights);
  for (Weight &w : c.weights.rows) {
    t.names.push_back(&w.name);
    t.i32(w.w.dtype);
    t.i32(w.w.rank);
    t.i32(w.w.layout);
    t.table(w.dims);
    for (int64_t &d : w.dims.rows)
      t.i64(d);
  }
  t.table(c.states);
  for (State &s : c.states.rows) {
    t.names.push_back(&s.name);
    t.i32(s.s.dtype);
    t.i32(s.s.rank);
    t.table(s.dims);
    for (attn_model_dim &d : s.dims.rows)
      t.dim(d);
  }
  t.table(c.kernels);
  for (Kernel &k : c.kernels.rows) {
    t.names.push_back(&k.name);
    t.i32(k.k.num_inputs);
    t.i32(k.k.num_outputs);
    t.i32(k.k.num_flop_terms);
    t.table(k.flops);
    for (attn_model_flop_term &f : k.flops.rows) {
      t.f64(f.coeff);
      t.i32(f.num_symbols);
      for (int32_t &s : f.symbols)
        t.i32(s);
    }
  }
  t.table(c.entries);
  for (Entry &e : c.entries.rows) {
    t.names.push_back(&e.name);
    t.table(e.inputs, &e.inputNames);
    t.table(e.outputs, &e.outputNames);
    for (attn_model_tensor &x : e.inputs.rows)
      t.i32(x.buffer);
    for (attn_model_tensor &x : e.outputs.rows)
      t.i32(x.buffer);
    for (Name &n : e.inputNames)
      t.names.push_back(&n);
    for (Name &n : e.outputNames)
      t.names.push_back(&n);
    t.table(e.buffers);
    for (Buffer &b : e.buffers.rows) {
      t.i32(b.b.kind);
      t.i32(b.b.index);
      t.i32(b.b.dtype);
      t.i32(b.b.rank);
      t.u64(b.b.offset);
      t.table(b.dims);
      for (attn_model_dim &d : b.dims.rows)
        t.dim(d);
    }
    t.table(e.steps);
    for (Step &s : e.steps.rows) {
      t.i32(s.s.kernel);
      t.i32(s.s.num_args);
      t.table(s.args);
      for (int32_t &a : s.args.rows)
        t.i32(a);
    }
  }
  return t;
}

void Targets::Int::set(int64_t v) const {
  switch (kind) {
  case I32:
    *static_cast<int32_t *>(field) = int32_t(v);
    return;
  case I64:
    *static_cast<int64_t *>(field) = v;
    return;
  case U64:
    *static_cast<uint64_t *>(field) = uint64_t(v);
    return;
  case F64: {
    static constexpr double specials[] = {
        -1.0, 0.0, 1e308, std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN()};
    *static_cast<double *>(field) = v >= 0 && v < 5 ? specials[v] : double(v);
    return;
  }
  }
}

/// A value that tends to sit on a boundary.
int64_t interestingValue(FuzzedDataProvider &p) {
  static constexpr int64_t values[] = {-1,
                                       0,
                                       1,
                                       2,
                                       3,
                                       4,
                                       5,
                                       6,
                                       7,
                                       8,
                                       63,
                                       64,
                                       65,
                                       std::numeric_limits<int32_t>::max(),
                                       std::numeric_limits<int32_t>::min(),
                                       std::numeric_limits<int64_t>::max(),
                                       std::numeric_limits<int64_t>::min(),
                                       int64_t(1) << 32,
                                       int64_t(1) << 62};
  if (p.ConsumeBool())
    return p.PickValueInArray(values);
  return p.ConsumeIntegral<int64_t>();
}

void mutate(Desc &c, FuzzedDataProvider &p) {
  // Rows dropped or repeated, tables made NULL, first: each such edit
  // changes which fields the others can reach, so the copy is walked again.
  int tableEdits = p.ConsumeIntegralInRange(0, 3);
  for (int i = 0; i < tableEdits && p.remaining_bytes(); ++i) {
    Targets t = walk(c);
    t.tables[p.ConsumeIntegralInRange<size_t>(0, t.tables.size() - 1)](p);
  }
  Targets t = walk(c);
  int edits = p.ConsumeIntegralInRange(1, 12);
  for (int i = 0; i < edits && p.remaining_bytes(); ++i) {
    if (p.ConsumeIntegralInRange(0, 3) != 0) {
      t.ints[p.ConsumeIntegralInRange<size_t>(0, t.ints.size() - 1)].set(
          interestingValue(p));
      continue;
    }
    Name &n = *t.names[p.ConsumeIntegralInRange<size_t>(0, t.names.size() - 1)];
    if (p.ConsumeBool())
      n = std::nullopt;
    else
      n = p.ConsumeRandomLengthString(16);
  }
}

/// A rank's dims table is as long as the rank says (within ATTN_MAX_RANK).
template <typename T> const T *rankedDims(Table<T> &dims, int32_t rank) {
  dims.rows.resize(std::clamp<int32_t>(rank, 0, ATTN_MAX_RANK));
  return dims.ptr();
}

/// Points the descriptor's counts and pointers at the owned tables. A
/// mutated count is kept when it is negative (the validator must refuse it);
/// otherwise the count is the table's length.
void materialise(Desc &c) {
  attn_model_desc &d = c.d;
  auto count = [](int32_t old, size_t rows) {
    return old < 0 ? old : int32_t(rows);
  };
  d.compiler_version = cstr(c.compilerVersion);
  d.model_name = cstr(c.modelName);
  d.target = cstr(c.target);
  for (size_t i = 0; i < c.symbols.rows.size(); ++i)
    c.symbols.rows[i].name = cstr(c.symbolNames[i]);
  d.num_symbols = count(d.num_symbols, c.symbols.rows.size());
  d.symbols = c.symbols.ptr();

  c.cWeights.clear();
  for (Weight &w : c.weights.rows) {
    w.w.name = cstr(w.name);
    w.w.dims = rankedDims(w.dims, w.w.rank);
    c.cWeights.push_back(w.w);
  }
  d.num_weights = count(d.num_weights, c.cWeights.size());
  d.weights =
      c.weights.null || c.cWeights.empty() ? nullptr : c.cWeights.data();
  c.cStates.clear();
  for (State &s : c.states.rows) {
    s.s.name = cstr(s.name);
    s.s.dims = rankedDims(s.dims, s.s.rank);
    c.cStates.push_back(s.s);
  }
  d.num_states = count(d.num_states, c.cStates.size());
  d.states = c.states.null || c.cStates.empty() ? nullptr : c.cStates.data();

  c.cKernels.clear();
  for (Kernel &k : c.kernels.rows) {
    k.k.name = cstr(k.name);
    k.k.num_flop_terms = count(k.k.num_flop_terms, k.flops.rows.size());
    k.k.flop_terms = k.flops.ptr();
    c.cKernels.push_back(k.k);
  }
  d.num_kernels = count(d.num_kernels, c.cKernels.size());
  d.kernels =
      c.kernels.null || c.cKernels.empty() ? nullptr : c.cKernels.data();

  c.cEntries.clear();
  for (Entry &e : c.entries.rows) {
    attn_model_entry ce{};
    ce.name = cstr(e.name);
    for (size_t i = 0; i < e.inputs.rows.size(); ++i)
      e.inputs.rows[i].name = cstr(e.inputNames[i]);
    for (size_t i = 0; i < e.outputs.rows.size(); ++i)
      e.outputs.rows[i].name = cstr(e.outputNames[i]);
    ce.num_inputs = int32_t(e.inputs.rows.size());
    ce.inputs = e.inputs.ptr();
    ce.num_outputs = int32_t(e.outputs.rows.size());
    ce.outputs = e.outputs.ptr();
    e.cBuffers.clear();
    for (Buffer &b : e.buffers.rows) {
      b.b.dims = rankedDims(b.dims, b.b.rank);
      e.cBuffers.push_back(b.b);
    }
    ce.num_buffers = int32_t(e.cBuffers.size());
    ce.buffers =
        e.buffers.null || e.cBuffers.empty() ? nullptr : e.cBuffers.data();
    e.cSteps.clear();
    for (Step &s : e.steps.rows) {
      s.s.num_args = count(s.s.num_args, s.args.rows.size());
      s.s.args = s.args.ptr();
      e.cSteps.push_back(s.s);
    }
    ce.num_steps = int32_t(e.cSteps.size());
    ce.steps = e.steps.null || e.cSteps.empty() ? nullptr : e.cSteps.data();
    c.cEntries.push_back(ce);
  }
  d.num_entries = count(d.num_entries, c.cEntries.size());
  d.entries =
      c.entries.null || c.cEntries.empty() ? nullptr : c.cEntries.data();
}

/// Describes and plans an accepted descriptor through the public API, for
/// symbol values the input picks (within their bounds).
void exercise(const attn_model_desc &d, FuzzedDataProvider &p) {
  attn_model model;
  attn::rt::adoptDescriptor(model, d);
  model.describeOnly = true;
  attn_model_info info{};
  info.size = sizeof info;
  (void)attn_model_get_info(&model, &info);
  attn_tensor_info t;
  for (int32_t i = 0; i < attn_model_num_inputs(&model); ++i)
    (void)attn_model_input_info(&model, i, &t);
  for (int32_t i = 0; i < attn_model_num_outputs(&model); ++i)
    (void)attn_model_output_info(&model, i, &t);
  for (int32_t i = 0; i < attn_model_num_states(&model); ++i)
    (void)attn_model_state_info(&model, i, &t);
  for (int32_t i = 0; i < attn_model_num_weights(&model); ++i)
    (void)attn_model_weight_info(&model, i, &t);

  std::vector<int64_t> symbols;
  for (int32_t s = 0; s < d.num_symbols; ++s) {
    int64_t max = d.symbols[s].max ? d.symbols[s].max : 64;
    symbols.push_back(p.ConsumeIntegralInRange<int64_t>(0, max));
  }
  const attn_model_entry &run = *model.run;
  std::vector<std::vector<int64_t>> dims(run.num_inputs);
  std::vector<attn_tensor> inputs(run.num_inputs);
  for (int32_t i = 0; i < run.num_inputs; ++i) {
    const attn_model_buffer &b = run.buffers[run.inputs[i].buffer];
    for (int32_t k = 0; k < b.rank; ++k)
      dims[i].push_back(b.dims[k].num_terms ? symbols[b.dims[k].terms[0].symbol]
                                            : b.dims[k].constant);
    inputs[i] = {run.inputs[i].name, b.dtype, b.rank, dims[i].data(), nullptr};
  }
  int64_t out[ATTN_MAX_RANK];
  for (int32_t o = 0; o < run.num_outputs; ++o)
    (void)attn_model_output_dims(&model, inputs.data(), run.num_inputs, o, out,
                                 ATTN_MAX_RANK);
  uint64_t arena, live, temps;
  (void)attn_model_workspace_size(&model, inputs.data(), run.num_inputs, &arena,
                                  &live, &temps);
}

/// The real descriptor, loaded once and kept for the whole run.
const attn_model_desc &original() {
  static attn_model *loaded = attnc::fuzz::loadFuzzModel(kTarget, false);
  return *loaded->desc;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider p(data, size);
  Desc c = copyDesc(original());
  mutate(c, p);
  materialise(c);
  if (attn::rt::validateDescriptor(c.d, kPath) != ATTN_OK) {
    if (std::string(attn_last_error()).find(kPath) == std::string::npos)
      finding(kTarget, std::string("a refusal does not name the library: ") +
                           attn_last_error());
    return 0;
  }
  exercise(c.d, p);
  return 0;
}
