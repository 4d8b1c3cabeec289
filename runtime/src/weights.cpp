//===- runtime/src/weights.cpp - Read a model's weights at load -----------===//
//
// A library built without attnc --weights names the tensors it reads (its
// weights table) and computes its constants block from them with its "init"
// entry. Here the safetensors file (or each shard of a sharded checkpoint,
// through its model.safetensors.index.json) is mapped, every tensor of the
// table is checked by name, dtype and shape (all problems reported at once, so
// one export fixes them all), optionally scanned for NaN and Inf, and "init"
// runs once.
//
//===----------------------------------------------------------------------===//
#include "model.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>

namespace attn::rt {
namespace {

namespace st = attn::safetensors;

/// At most this many problems are listed; the rest are counted.
constexpr std::size_t MaxListed = 10;
/// How many similar names a missing weight's message suggests.
constexpr std::size_t NumClosest = 3;

/// The edit distance between `a` and `b` (insertions, deletions and
/// substitutions of one byte each).
std::size_t levenshtein(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                         prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

/// "'x', 'y', 'z'": the names in `file` closest to `name`.
std::string closestNames(const st::Checkpoint &file, std::string_view name) {
  std::vector<std::pair<std::size_t, const std::string *>> ranked;
  for (const st::Tensor &t : file.tensors())
    ranked.push_back({levenshtein(name, t.name), &t.name});
  std::size_t n = std::min(NumClosest, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + n, ranked.end(),
                    [](const auto &x, const auto &y) {
                      return x.first != y.first ? x.first < y.first
                                                : *x.second < *y.second;
                    });
  std::string s;
  for (std::size_t i = 0; i < n; ++i)
    s += (i ? ", '" : "'") + *ranked[i].second + "'";
  return s;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  return dimsString(shape.data(), int32_t(shape.size()));
}

/// The problems found in a weights file: the first status, up to MaxListed
/// lines, and how many more there were.
struct Problems {
  attn_status status = ATTN_OK;
  std::vector<std::string> lines;
  std::size_t more = 0;

  /// Whether another line would be listed (so is worth composing).
  bool listing() const { return lines.size() < MaxListed; }
  void add(attn_status s, std::string line) {
    if (status == ATTN_OK)
      status = s;
    if (listing())
      lines.push_back(std::move(line));
    else
      ++more;
  }
};

/// A quantized matrix read in the layout `attnc quantize` recorded reading
/// it in (files without the record are not checked): read the other way,
/// its scales would go with its inputs.
void checkQuantizedLayout(const attn_model_weight &w, const st::Tensor &t,
                          const st::Checkpoint &file, const std::string &where,
                          Problems &problems) {
  if (w.layout == ATTN_MODEL_WEIGHT_ANY)
    return;
  bool inOut = w.layout == ATTN_MODEL_WEIGHT_IN_OUT;
  if (std::optional<std::string> conflict =
          st::conflictingQuantizedLayout(file, t, inOut))
    problems.add(ATTN_ERROR_SHAPE_MISMATCH, where + " " + *conflict);
}

void checkWeight(const attn_model_weight &w, const st::Checkpoint &file,
                 Problems &problems) {
  std::string where = "weight '" + std::string(w.name) + "'";
  const st::Tensor *t = file.find(w.name);
  std::string in = "'" + (t ? file.pathOf(*t) : file.path()) + "'";
  if (!t) {
    std::string line = where + " is not in " + in;
    if (!problems.listing())
      line.clear(); // only counted: skip the distances
    else if (file.tensors().empty())
      line += ", which holds no tensors: give the model's weights file";
    else
      line += "; closest names there: " + closestNames(file, w.name) +
              ": fix the name in the model or export the weight";
    problems.add(ATTN_ERROR_INVALID_ARGUMENT, std::move(line));
    return;
  }
  std::optional<int32_t> dtype = st::attnDType(t->dtype);
  if (!dtype || *dtype != w.dtype) {
    std::string line = where + " in " + in + " has dtype " +
                       st::dtypeName(t->dtype) + " but the model reads " +
                       dtypeName(w.dtype) + ": convert it to " +
                       dtypeName(w.dtype) + " when exporting";
    // Weights may be declared in any float dtype the ABI has, which keeps
    // the file's precision (the runtime never converts).
    if (dtype && attn_dtype_lookup(*dtype)->is_float) {
      std::string name = st::dtypeName(t->dtype);
      for (char &c : name)
        c = char(std::tolower(static_cast<unsigned char>(c)));
      line += ", or declare it " + name + " in the model and compile again";
    }
    problems.add(ATTN_ERROR_DTYPE_MISMATCH, std::move(line));
  }
  if (t->shape != std::vector<int64_t>(w.dims, w.dims + w.rank))
    problems.add(ATTN_ERROR_SHAPE_MISMATCH,
                 where + " in " + in + " has shape " + shapeString(t->shape) +
                     " but the model declares it " +
                     dimsString(w.dims, w.rank) +
                     ": fix the declaration or the exported tensor");
  checkQuantizedLayout(w, *t, file, where + " in " + in, problems);
}

/// Where kernels read weight `w` of `file`: the mapped data, or an aligned
/// copy when the file leaves it misaligned for its dtype (an F32 after an
/// odd number of F16 elements, say).
attn_status placeWeight(attn_model &model, const attn_model_weight &w,
                        const st::Tensor &t) {
  std::size_t align = attn_dtype_lookup(w.dtype)->size;
  if (reinterpret_cast<uintptr_t>(t.data) % align == 0) {
    model.weights.push_back(t.data);
    return ATTN_OK;
  }
  void *copy = alignedAlloc(t.sizeBytes);
  if (!copy)
    return fail(ATTN_ERROR_OUT_OF_MEMORY,
                "cannot allocate " + std::to_string(t.sizeBytes) +
                    " bytes for an aligned copy of weight '" + w.name + "'");
  model.weightCopies.push_back(copy);
  std::memcpy(copy, t.data, t.sizeBytes);
  model.weights.push_back(copy);
  return ATTN_OK;
}

/// The flat index of the first NaN or Inf among `count` elements of float
/// dtype `dtype` at `data`, or -1. By bits: all-ones exponent.
int64_t firstNonFinite(const void *data, int64_t count, int32_t dtype) {
  auto scan = [&](auto bits, auto exponent) {
    using Bits = decltype(bits);
    const auto *p = static_cast<const Bits *>(data);
    for (int64_t i = 0; i < count; ++i) {
      Bits b;
      std::memcpy(&b, p + i, sizeof b); // the mapping may be misaligned
      if ((b & exponent) == exponent)
        return i;
    }
    return int64_t(-1);
  };
  switch (dtype) {
  case ATTN_MODEL_F32:
    return scan(uint32_t(0), uint32_t(0x7f800000u));
  case ATTN_MODEL_BF16:
    return scan(uint16_t(0), uint16_t(0x7f80u));
  case ATTN_MODEL_F16:
    return scan(uint16_t(0), uint16_t(0x7c00u));
  default:
    return -1; // integers are always finite
  }
}

/// "NaN" or "+Inf" / "-Inf" for element `i` of a float tensor.
std::string nonFiniteName(const void *data, int64_t i, int32_t dtype) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  if (dtype == ATTN_MODEL_F32) {
    uint32_t b;
    std::memcpy(&b, bytes + 4 * i, 4);
    return (b & 0x007fffffu) ? "NaN" : (b >> 31) ? "-Inf" : "+Inf";
  }
  uint16_t b;
  std::memcpy(&b, bytes + 2 * i, 2);
  uint16_t mantissa = dtype == ATTN_MODEL_BF16 ? 0x007f : 0x03ff;
  return (b & mantissa) ? "NaN" : (b >> 15) ? "-Inf" : "+Inf";
}

/// Fails on the first NaN or Inf of the weights the model reads, in the
/// order of its weights table, naming the tensor, the index and the value.
attn_status checkFinite(const attn_model_desc &d, const st::Checkpoint &file) {
  for (int32_t w = 0; w < d.num_weights; ++w) {
    const attn_model_weight &weight = d.weights[w];
    const st::Tensor &t = *file.find(weight.name);
    int64_t count = 1;
    for (int32_t r = 0; r < weight.rank; ++r)
      count *= weight.dims[r];
    int64_t i = firstNonFinite(t.data, count, weight.dtype);
    if (i < 0)
      continue;
    std::string index;
    int64_t flat = i;
    for (int32_t r = weight.rank - 1; r >= 0; --r) {
      index.insert(0, std::to_string(flat % weight.dims[r]) +
                          (r + 1 < weight.rank ? ", " : ""));
      flat /= weight.dims[r];
    }
    return fail(ATTN_ERROR_NON_FINITE,
                "weight '" + std::string(weight.name) + "' in '" +
                    file.pathOf(t) + "' holds " +
                    nonFiniteName(t.data, i, weight.dtype) + " at [" + index +
                    "] (shape " + dimsString(weight.dims, weight.rank) +
                    "): the checkpoint is damaged; export it again from a "
                    "model whose weights are finite");
  }
  return ATTN_OK;
}

attn_status readWeightsFile(attn_model &model, const std::string &path,
                            bool checkNonFinite) {
  const attn_model_desc &d = *model.desc;
  st::Expected<st::Checkpoint> file = st::Checkpoint::open(path);
  if (!file)
    return fail(ATTN_ERROR_IO, file.message());
  Problems problems;
  for (int32_t i = 0; i < d.num_weights; ++i)
    checkWeight(d.weights[i], *file, problems);
  if (problems.status != ATTN_OK) {
    if (problems.lines.size() == 1)
      return fail(problems.status, problems.lines[0]);
    std::string message =
        "model '" + std::string(d.model_name) +
        "': " + std::to_string(problems.lines.size() + problems.more) +
        " problems with its weights in '" + path + "':";
    for (const std::string &line : problems.lines)
      message += "\n  " + line;
    if (problems.more)
      message += "\n  and " + std::to_string(problems.more) + " more";
    return fail(problems.status, message);
  }
  if (checkNonFinite)
    if (attn_status s = checkFinite(d, *file); s != ATTN_OK)
      return s;
  for (int32_t i = 0; i < d.num_weights; ++i)
    if (attn_status s =
            placeWeight(model, d.weights[i], *file->find(d.weights[i].name));
        s != ATTN_OK)
      return s;
  model.weightsFile = std::move(*file);
  return ATTN_OK;
}

/// "init" has read every page of the mapping; "run" reads a part of it (an
/// embedding table's rows of the ids it is given). Dropping the pages from
/// this process lets the runs fault back in only what they read: the data
/// stays in the page cache, and the mapping is private and read-only, so
/// nothing is lost.
void releaseResidentPages(const st::Checkpoint &checkpoint) {
  for (const st::File &file : checkpoint.files()) {
    uintptr_t begin = UINTPTR_MAX, end = 0;
    for (const st::Tensor &t : file.tensors()) {
      auto p = reinterpret_cast<uintptr_t>(t.data);
      begin = std::min(begin, p);
      end = std::max(end, p + t.sizeBytes);
    }
    uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    begin = begin / page * page;
    if (begin < end)
      ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
  }
}

bool readsWeights(const attn_model_entry &entry) {
  for (int32_t b = 0; b < entry.num_buffers; ++b)
    if (entry.buffers[b].kind == ATTN_MODEL_BUFFER_WEIGHT)
      return true;
  return false;
}

} // namespace

void *alignedAlloc(std::size_t bytes) {
  if (bytes > SIZE_MAX - 63)
    return nullptr;
  std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
  void *p = nullptr;
  return ::posix_memalign(&p, 64, rounded) == 0 ? p : nullptr;
}

attn_status loadWeights(attn_model &model, const char *weights,
                        bool checkNonFinite) {
  const attn_model_desc &d = *model.desc;
  std::string m =
      "model '" + std::string(d.model_name) + "' ('" + model.path + "')";
  if (d.num_weights > 0 && !weights)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                m + " reads its " + std::to_string(d.num_weights) +
                    " weights from a safetensors file at load: give one "
                    "(attn-run --weights FILE, or attn_load_options.weights)");
  if (d.num_weights == 0 && weights)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                d.constants
                    ? m + " embeds its weights (built with attnc --weights): "
                          "load it without a weights file, or rebuild it "
                          "without --weights to read them at load"
                    : m + " reads no weights: load it without a weights "
                          "file");
  if (checkNonFinite && !weights)
    return fail(ATTN_ERROR_INVALID_ARGUMENT,
                d.constants
                    ? m + " embeds its weights (built with attnc --weights), "
                          "so there are none to check at load: check the "
                          "file before embedding it (attn-run --check-weights "
                          "on a library built without --weights)"
                    : m + " reads no weights: there are none to check");
  if (weights)
    if (attn_status s = readWeightsFile(model, weights, checkNonFinite);
        s != ATTN_OK)
      return s;

  if (d.constants) {
    model.constants = d.constants;
  } else if (model.init || d.constants_size > 0) {
    // Not zeroed: "init" writes every constant, and the padding between
    // two is never read (zeroing 0.5 GB took a tenth of GPT-2's load).
    model.ownedConstants =
        static_cast<uint8_t *>(alignedAlloc(std::size_t(d.constants_size)));
    if (!model.ownedConstants || d.constants_size > SIZE_MAX)
      return fail(ATTN_ERROR_OUT_OF_MEMORY,
                  "cannot allocate the " + std::to_string(d.constants_size) +
                      "-byte constants block of " + m);
    model.constants = model.ownedConstants;
  }
  if (model.init) {
    EntryState state;
    Binding binding;
    binding.symbols.assign(d.num_symbols, -1);
    if (attn_status s =
            runSteps(model, *model.init, state, binding, {}, "init kernel");
        s != ATTN_OK)
      return s;
  }
  // Kernels of "run" that read weights directly read the mapping at every
  // run; otherwise "init" was its last reader.
  if (readsWeights(*model.run)) {
    releaseResidentPages(*model.weightsFile);
  } else {
    model.weightsFile.reset();
    model.weights.clear();
    for (void *copy : model.weightCopies)
      std::free(copy);
    model.weightCopies.clear();
  }
  return ATTN_OK;
}

} // namespace attn::rt
