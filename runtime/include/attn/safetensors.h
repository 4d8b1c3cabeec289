//===- runtime/include/attn/safetensors.h - safetensors files ---*- C++ -*-===//
//
// Reads and writes the safetensors format: an 8-byte little-endian header
// length, a JSON header mapping each tensor name to its dtype, shape and byte
// range, then the raw data. Used by the runtime, attn-run and the compiler.
//
// No exceptions leave this API: failures come back as a Status or an
// Expected<T> whose message names the file, the tensor and the fix.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_SAFETENSORS_H
#define ATTN_SAFETENSORS_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::safetensors {

/// Every dtype of the format. attn computes on the dtypes of attn/dtypes.h
/// only; a file may hold the others (an I64 buffer in a checkpoint, say) as
/// long as the tensors attn reads have one of those, and the readers of a
/// tensor check its dtype.
enum class DType {
  F32,
  I32,
  F64,
  F16,
  BF16,
  F8_E4M3,
  F8_E5M2,
  I64,
  I16,
  I8,
  U64,
  U32,
  U16,
  U8,
  BOOL
};

/// "F32", "I64", ...: the names the format uses.
const char *dtypeName(DType dtype);
std::size_t itemSize(DType dtype);
std::optional<DType> parseDType(std::string_view name);
/// The attn dtype code (attn_dtype, attn_model_dtype) of `dtype`, or nullopt
/// for a dtype attn does not compute on. Both sides spell a dtype alike, so
/// the mapping follows attn_dtype_table's names.
std::optional<int32_t> attnDType(DType dtype);
/// The format's dtype for attn dtype code `code`, or nullopt for a code
/// attn_dtype_lookup does not know.
std::optional<DType> fromAttnDType(int32_t code);

/// The "__metadata__" key under which `attnc quantize` records how it read
/// the matrix `tensor`: "out, in" (scaled per row) or "in, out" (per
/// column), since a square matrix's shape cannot say.
std::string quantizedLayoutKey(std::string_view tensor);
/// That record's value for a matrix stored [in, out] (`inOut`) or [out, in].
const char *quantizedLayoutName(bool inOut);

/// Success, or a failure with a message for the user.
class [[nodiscard]] Status {
public:
  static Status success() { return Status(); }
  static Status failure(std::string message) {
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }
  bool ok() const { return !failed; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return msg; }

private:
  bool failed = false;
  std::string msg;
};

/// A value, or the failed Status that explains why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value(std::move(value)) {}
  Expected(Status failure) : status(std::move(failure)) {}
  bool ok() const { return value.has_value(); }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return status.message(); }
  T &operator*() { return *value; }
  const T &operator*() const { return *value; }
  T *operator->() { return &*value; }
  const T *operator->() const { return &*value; }

private:
  std::optional<T> value;
  Status status = Status::success();
};

/// One tensor of an open File; `data` points into the File's mapping.
struct Tensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
  std::size_t sizeBytes;

  int64_t numElements() const;
};

/// A safetensors file mapped read-only. Tensors are listed in the order of
/// their data in the file. Copies share one mapping; tensor data lives as
/// long as any copy of the File.
class File {
public:
  /// Maps `path` and validates all of it: header length against the file
  /// size, the JSON, every dtype, shape and byte range (inside the data, the
  /// size the shape needs, no two tensors overlapping).
  static Expected<File> open(const std::string &path);

  const std::string &path() const { return filePath; }
  const std::vector<Tensor> &tensors() const { return tensorList; }
  /// The tensor called `name`, or nullptr.
  const Tensor *find(std::string_view name) const;
  /// The optional "__metadata__" string map.
  const std::map<std::string, std::string> &metadata() const { return meta; }
  /// "a, b, c": the tensor names, for messages that list what a file has.
  std::string tensorNames() const;

private:
  struct Mapping;
  std::string filePath;
  std::shared_ptr<Mapping> mapping;
  std::vector<Tensor> tensorList;
  std::map<std::string, std::string> meta;
};

/// A model's weights as Hugging Face saves them: one safetensors file, or a
/// sharded checkpoint, an index (model.safetensors.index.json: {"metadata":
/// {...}, "weight_map": {tensor name: shard file name}}) and the shards it
/// names beside it. Every shard is opened as a File (so checked all through)
/// and the tensors of all of them form one table. Refused, with a message
/// naming the index, the shard and a tensor: malformed JSON, a shard name
/// that is empty, absolute or has a ".." component (it must stay in the
/// index's directory; the check is on the name, so a shard may be a symbolic
/// link, as in the Hub's cache), a shard that cannot be opened, a tensor the
/// index maps to a shard that lacks it, and a tensor held by two shards. A
/// tensor a shard holds that the index does not list is read too.
class Checkpoint {
public:
  /// A path ending in ".json" is an index; anything else one File.
  static Expected<Checkpoint> open(const std::string &path);
  static bool isIndex(std::string_view path);

  /// The path opened: the file or the index.
  const std::string &path() const { return checkpointPath; }
  bool sharded() const { return isSharded; }
  /// The files the tensors are in (one for an unsharded checkpoint), in the
  /// order of their names.
  const std::vector<File> &files() const { return fileList; }
  /// Every tensor of every file, by file then data order.
  const std::vector<Tensor> &tensors() const { return tensorList; }
  /// The tensor called `name`, or nullptr.
  const Tensor *find(std::string_view name) const;
  /// The file `t` (one of tensors()) is in.
  const File &fileOf(const Tensor &t) const;
  const std::string &pathOf(const Tensor &t) const { return fileOf(t).path(); }
  std::string tensorNames() const;

private:
  std::string checkpointPath;
  bool isSharded = false;
  std::vector<File> fileList;
  std::vector<Tensor> tensorList;
  /// Per tensor of tensorList, its file's index in fileList.
  std::vector<std::size_t> fileIndex;
  std::map<std::string, std::size_t, std::less<>> byName;
};

/// When `attnc quantize` recorded reading the matrix `t` of `checkpoint`
/// (under quantizedLayoutKey) otherwise than a model reads it, [in, out]
/// (`inOut`) or [out, in], its scales are on the wrong axis: what happened
/// and the fix, "was quantized as stored [out, in] but the model reads it
/// [in, out], so its scales are on the wrong axis: quantize it again with it
/// in attnc quantize's --in-out". Nothing when they agree or the file has no
/// record.
std::optional<std::string>
conflictingQuantizedLayout(const Checkpoint &checkpoint, const Tensor &t,
                           bool inOut);

/// Collects tensors, then writes them as one safetensors file atomically: the
/// file at `path` is either the complete new file or left as it was.
class Writer {
public:
  /// Copies `data` (sizeBytes must equal product(shape) * itemSize(dtype)).
  /// Fails on a duplicate or empty name, a negative dim or a size mismatch.
  Status add(std::string name, DType dtype, std::vector<int64_t> shape,
             const void *data, std::size_t sizeBytes);
  void setMetadata(std::string key, std::string value);
  /// Writes `path.tmp.XXXXXX` beside `path`, fsyncs it and renames it over
  /// `path`; on any failure the temporary file is removed.
  Status write(const std::string &path) const;

private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<Entry> entries;
  std::map<std::string, std::string> meta;
};

} // namespace attn::safetensors

#endif // ATTN_SAFETENSORS_H
