//===- runtime/src/safetensors.cpp - safetensors reader and writer --------===//
//
// The reader maps the file and checks every byte range before handing out a
// pointer, so a corrupt or truncated file is an error, never a crash. The
// writer goes through a temporary file and rename(2), so a reader never sees
// half a file.
//
//===----------------------------------------------------------------------===//
#include "attn/safetensors.h"
#include "attn/dtypes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::safetensors {
namespace {

using Json = nlohmann::ordered_json;

/// The header is padded with spaces so the data starts on this boundary,
/// which keeps every F32/I32 tensor of a mapped file aligned for SIMD loads.
constexpr std::size_t DataAlignment = 64;

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// product(shape) * item, or nullopt when it overflows.
std::optional<uint64_t> byteSize(const std::vector<int64_t> &shape,
                                 std::size_t item) {
  uint64_t n = item;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / uint64_t(d))
      return std::nullopt;
    n *= uint64_t(d);
  }
  return n;
}

std::string errnoText() { return std::strerror(errno); }

bool writeAll(int fd, const void *data, std::size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= std::size_t(n);
  }
  return true;
}

struct DTypeInfo {
  DType dtype;
  const char *name;
  std::size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "F32", 4},         {DType::I32, "I32", 4},
    {DType::F64, "F64", 8},         {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},       {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::F8_E5M2, "F8_E5M2", 1}, {DType::I64, "I64", 8},
    {DType::I16, "I16", 2},         {DType::I8, "I8", 1},
    {DType::U64, "U64", 8},         {DType::U32, "U32", 4},
    {DType::U16, "U16", 2},         {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
};
} // namespace

std::string quantizedLayoutKey(std::string_view tensor) {
  return "attnc.layout." + std::string(tensor);
}

const char *quantizedLayoutName(bool inOut) {
  return inOut ? "in, out" : "out, in";
}

const char *dtypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.name;
  return "?";
}

std::size_t itemSize(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.size;
  return 0;
}

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name)
      return info.dtype;
  return std::nullopt;
}

std::optional<int32_t> attnDType(DType dtype) {
  for (const attn_dtype_desc &row : attn_dtype_table)
    if (std::string_view(row.name) == dtypeName(dtype))
      return row.code;
  return std::nullopt;
}

std::optional<DType> fromAttnDType(int32_t code) {
  const attn_dtype_desc *row = attn_dtype_lookup(code);
  return row ? parseDType(row->name) : std::nullopt;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Owns the read-only mapping of a whole file.
struct File::Mapping {
  void *base = nullptr;
  std::size_t size = 0;
  ~Mapping() {
    if (base)
      ::munmap(base, size);
  }
};

Expected<File> File::open(const std::string &path) {
  auto fail = [&](const std::string &what) {
    return Status::failure("safetensors file '" + path + "': " + what);
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("cannot open it: " + errnoText());
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  auto fileSize = uint64_t(st.st_size);
  if (fileSize < 8) {
    ::close(fd);
    return fail("only " + std::to_string(fileSize) +
                " bytes, too short for the 8-byte header length it must "
                "start with: is it a safetensors file?");
  }
  auto mapping = std::make_shared<Mapping>();
  void *base = ::mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED)
    return fail("cannot map it: " + errnoText());
  mapping->base = base;
  mapping->size = fileSize;
  const auto *bytes = static_cast<const uint8_t *>(base);

  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | bytes[i];
  if (headerLen > fileSize - 8)
    return fail("the header length says " + std::to_string(headerLen) +
                " bytes but only " + std::to_string(fileSize - 8) +
                " follow it: the file is truncated or not a safetensors file");
  if (headerLen < 2)
    return fail("the header length is " + std::to_string(headerLen) +
                " bytes, too short for a JSON object: the file is corrupt");

  Json header;
  try {
    header = Json::parse(bytes + 8, bytes + 8 + headerLen);
  } catch (const Json::exception &e) {
    return fail(std::string("the JSON header is malformed (") + e.what() +
                "): the file is corrupt");
  }
  if (!header.is_object())
    return fail("the JSON header is not an object: the file is corrupt");

  File file;
  file.filePath = path;
  file.mapping = mapping;
  const uint8_t *data = bytes + 8 + headerLen;
  const uint64_t dataSize = fileSize - 8 - headerLen;
  for (const auto &[name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        return fail("\"__metadata__\" is not an object of strings");
      for (const auto &[key, value] : entry.items()) {
        if (!value.is_string())
          return fail("metadata entry '" + key + "' is not a string");
        file.meta[key] = value.get<std::string>();
      }
      continue;
    }
    // No model can declare it, and the writer refuses it: a name is what
    // the weights are found by.
    if (name.empty())
      return fail("a tensor has an empty name: the file is corrupt");
    std::string where = "tensor '" + name + "'";
    if (!entry.is_object())
      return fail(where + " is not a JSON object");
    auto dtypeIt = entry.find("dtype");
    auto shapeIt = entry.find("shape");
    auto offsetsIt = entry.find("data_offsets");
    if (dtypeIt == entry.end() || !dtypeIt->is_string())
      return fail(where + " has no \"dtype\" string");
    std::string dtypeStr = dtypeIt->get<std::string>();
    std::optional<DType> dtype = parseDType(dtypeStr);
    if (!dtype)
      return fail(where + " has dtype " + dtypeStr +
                  ", which is not a safetensors dtype: the file is corrupt");
    if (shapeIt == entry.end() || !shapeIt->is_array())
      return fail(where + " has no \"shape\" array");
    Tensor t{name, *dtype, {}, nullptr, 0};
    for (const auto &d : *shapeIt) {
      if (!d.is_number_unsigned() ||
          d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        return fail(where + " has a shape entry " + d.dump() +
                    " that is not a non-negative integer");
      t.shape.push_back(d.get<int64_t>());
    }
    if (offsetsIt == entry.end() || !offsetsIt->is_array() ||
        offsetsIt->size() != 2 || !(*offsetsIt)[0].is_number_unsigned() ||
        !(*offsetsIt)[1].is_number_unsigned())
      return fail(where + " has no \"data_offsets\" pair of non-negative "
                          "integers");
    auto begin = (*offsetsIt)[0].get<uint64_t>();
    auto end = (*offsetsIt)[1].get<uint64_t>();
    if (end < begin)
      return fail(where + " has data_offsets [" + std::to_string(begin) + ", " +
                  std::to_string(end) + "] that end before they begin");
    std::optional<uint64_t> need = byteSize(t.shape, itemSize(*dtype));
    if (!need)
      return fail(where + " has shape " + shapeString(t.shape) +
                  " whose byte size overflows");
    if (end - begin != *need)
      return fail(where + " has shape " + shapeString(t.shape) + " of " +
                  dtypeStr + ", which needs " + std::to_string(*need) +
                  " bytes, but its data_offsets [" + std::to_string(begin) +
                  ", " + std::to_string(end) + "] hold " +
                  std::to_string(end - begin));
    if (end > dataSize)
      return fail(where + " needs data bytes [" + std::to_string(begin) + ", " +
                  std::to_string(end) + ") but the file holds only " +
                  std::to_string(dataSize) +
                  " data bytes (expected a file "
                  "of at least " +
                  std::to_string(8 + headerLen + end) + " bytes, it has " +
                  std::to_string(fileSize) + "): the file is truncated");
    t.data = data + begin;
    t.sizeBytes = std::size_t(end - begin);
    file.tensorList.push_back(std::move(t));
  }

  std::sort(file.tensorList.begin(), file.tensorList.end(),
            [](const Tensor &a, const Tensor &b) { return a.data < b.data; });
  const Tensor *prev = nullptr;
  for (const Tensor &t : file.tensorList) {
    if (t.sizeBytes == 0)
      continue;
    if (prev && static_cast<const uint8_t *>(prev->data) + prev->sizeBytes >
                    static_cast<const uint8_t *>(t.data))
      return fail("tensors '" + prev->name + "' and '" + t.name +
                  "' overlap in the data section: the file is corrupt");
    prev = &t;
  }
  return file;
}

const Tensor *File::find(std::string_view name) const {
  for (const Tensor &t : tensorList)
    if (t.name == name)
      return &t;
  return nullptr;
}

std::string File::tensorNames() const {
  std::string s;
  for (const Tensor &t : tensorList)
    s += (s.empty() ? "" : ", ") + t.name;
  return s.empty() ? "no tensors" : s;
}

namespace {

/// The bytes of the regular file at `path` (an index: JSON, so bounded).
Expected<std::string> readSmallFile(const std::string &path,
                                    const std::string &what) {
  constexpr uint64_t MaxBytes = uint64_t(64) << 20;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::failure(what + ": cannot open it: " + errnoText());
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::failure(what + ": not a regular file");
  }
  if (uint64_t(st.st_size) > MaxBytes) {
    ::close(fd);
    return Status::failure(what + ": " + std::to_string(st.st_size) +
                           " bytes, more than the " + std::to_string(MaxBytes) +
                           " an index of tensor names takes: is it an index?");
  }
  std::string text(std::size_t(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += std::size_t(n);
  }
  ::close(fd);
  text.resize(done);
  return text;
}

/// `name` with empty and "." components dropped, or nullopt when it is
/// absolute or climbs out with "..".
std::optional<std::string> shardName(const std::string &name) {
  if (name.empty() || name.front() == '/')
    return std::nullopt;
  std::string out;
  std::size_t begin = 0;
  while (begin <= name.size()) {
    std::size_t end = std::min(name.find('/', begin), name.size());
    std::string_view part(name.data() + begin, end - begin);
    if (part == "..")
      return std::nullopt;
    if (!part.empty() && part != ".")
      out += (out.empty() ? "" : "/") + std::string(part);
    begin = end + 1;
  }
  if (out.empty())
    return std::nullopt;
  return out;
}

} // namespace

bool Checkpoint::isIndex(std::string_view path) {
  constexpr std::string_view Suffix = ".json";
  return path.size() >= Suffix.size() &&
         path.substr(path.size() - Suffix.size()) == Suffix;
}

Expected<Checkpoint> Checkpoint::open(const std::string &path) {
  Checkpoint cp;
  cp.checkpointPath = path;
  if (!isIndex(path)) {
    Expected<File> file = File::open(path);
    if (!file)
      return Status::failure(file.message());
    cp.fileList.push_back(std::move(*file));
  } else {
    cp.isSharded = true;
    std::string what = "safetensors index '" + path + "'";
    Expected<std::string> text = readSmallFile(path, what);
    if (!text)
      return Status::failure(text.message());
    auto fail = [&](const std::string &why) {
      return Status::failure(what + ": " + why);
    };
    Json index;
    try {
      index = Json::parse(*text);
    } catch (const Json::exception &e) {
      return fail(std::string("not valid JSON (") + e.what() +
                  "): restore the index, or download the checkpoint again");
    }
    auto map = index.is_object() ? index.find("weight_map") : index.end();
    if (!index.is_object() || map == index.end() || !map->is_object())
      return fail("no \"weight_map\" object mapping tensor names to shard "
                  "files: is it a Hugging Face model.safetensors.index.json?");
    if (map->empty())
      return fail("its \"weight_map\" maps no tensors: the checkpoint is "
                  "empty or the index is damaged");
    // Shard name -> the tensors the index maps to it.
    std::map<std::string, std::vector<std::string>> shards;
    for (const auto &[tensor, shard] : map->items()) {
      if (!shard.is_string())
        return fail("tensor '" + tensor + "' maps to " + shard.dump() +
                    ", not a shard file name");
      std::optional<std::string> name = shardName(shard.get<std::string>());
      if (!name)
        return fail("tensor '" + tensor + "' maps to shard '" +
                    shard.get<std::string>() +
                    "', which is not a file name inside the index's "
                    "directory (an empty or absolute name, or one with "
                    "'..'): shards must lie beside their index");
      shards[*name].push_back(tensor);
    }
    std::string dir;
    if (std::size_t slash = path.rfind('/'); slash != std::string::npos)
      dir = path.substr(0, slash + 1);
    for (const auto &[name, tensors] : shards) {
      Expected<File> file = File::open(dir + name);
      if (!file)
        return fail(
            "shard '" + name + "' (which holds tensor '" + tensors.front() +
            "'" +
            (tensors.size() > 1
                 ? " and " + std::to_string(tensors.size() - 1) + " more"
                 : std::string()) +
            ") cannot be read: " + file.message() +
            ": download the checkpoint's shards again");
      for (const std::string &tensor : tensors)
        if (!file->find(tensor))
          return fail("maps tensor '" + tensor + "' to shard '" + name +
                      "', which lacks it: the index and its shards disagree; "
                      "download the checkpoint again");
      cp.fileList.push_back(std::move(*file));
    }
  }
  for (std::size_t f = 0; f < cp.fileList.size(); ++f)
    for (const Tensor &t : cp.fileList[f].tensors()) {
      auto [it, added] = cp.byName.try_emplace(t.name, cp.tensorList.size());
      if (!added)
        return Status::failure(
            "safetensors index '" + path + "': tensor '" + t.name +
            "' is in two shards, '" +
            cp.fileList[cp.fileIndex[it->second]].path() + "' and '" +
            cp.fileList[f].path() +
            "': a checkpoint holds each tensor once; download it again");
      cp.tensorList.push_back(t);
      cp.fileIndex.push_back(f);
    }
  return cp;
}

const Tensor *Checkpoint::find(std::string_view name) const {
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : &tensorList[it->second];
}

const File &Checkpoint::fileOf(const Tensor &t) const {
  return fileList[fileIndex[std::size_t(&t - tensorList.data())]];
}

std::optional<std::string>
conflictingQuantizedLayout(const Checkpoint &checkpoint, const Tensor &t,
                           bool inOut) {
  const std::map<std::string, std::string> &meta =
      checkpoint.fileOf(t).metadata();
  auto recorded = meta.find(quantizedLayoutKey(t.name));
  if (recorded == meta.end() || recorded->second == quantizedLayoutName(inOut))
    return std::nullopt;
  return "was quantized as stored [" + recorded->second +
         "] but the model reads it [" + quantizedLayoutName(inOut) +
         "], so its scales are on the wrong axis: quantize it again " +
         (inOut ? "with" : "without") + " it in attnc quantize's --in-out";
}

std::string Checkpoint::tensorNames() const {
  std::string s;
  for (const Tensor &t : tensorList)
    s += (s.empty() ? "" : ", ") + t.name;
  return s.empty() ? "no tensors" : s;
}

Status Writer::add(std::string name, DType dtype, std::vector<int64_t> shape,
                   const void *data, std::size_t sizeBytes) {
  if (name.empty() || name == "__metadata__")
    return Status::failure("cannot add a tensor named '" + name +
                           "': the name is reserved or empty");
  for (const Entry &e : entries)
    if (e.name == name)
      return Status::failure("tensor '" + name +
                             "' was already added: give each tensor a "
                             "unique name");
  std::optional<uint64_t> need = byteSize(shape, itemSize(dtype));
  if (!need)
    return Status::failure("tensor '" + name + "' has shape " +
                           shapeString(shape) +
                           " with a negative dim or an overflowing size");
  if (*need != sizeBytes)
    return Status::failure(
        "tensor '" + name + "' has shape " + shapeString(shape) + " of " +
        dtypeName(dtype) + ", which needs " + std::to_string(*need) +
        " bytes, but " + std::to_string(sizeBytes) + " were given");
  if (sizeBytes > 0 && !data)
    return Status::failure("tensor '" + name + "' has no data");
  const auto *p = static_cast<const uint8_t *>(data);
  entries.push_back(Entry{std::move(name), dtype, std::move(shape),
                          std::vector<uint8_t>(p, p + sizeBytes)});
  return Status::success();
}

void Writer::setMetadata(std::string key, std::string value) {
  meta[std::move(key)] = std::move(value);
}

Status Writer::write(const std::string &path) const {
  Json header = Json::object();
  if (!meta.empty())
    header["__metadata__"] = meta;
  uint64_t offset = 0;
  for (const Entry &e : entries) {
    header[e.name] = {{"dtype", dtypeName(e.dtype)},
                      {"shape", e.shape},
                      {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  std::string text = header.dump();
  text.append(
      (DataAlignment - (8 + text.size()) % DataAlignment) % DataAlignment, ' ');
  uint8_t lengthBytes[8];
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = uint8_t(uint64_t(text.size()) >> (8 * i));

  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> tmpName(tmpl.begin(), tmpl.end());
  tmpName.push_back('\0');
  int fd = ::mkstemp(tmpName.data());
  if (fd < 0)
    return Status::failure("cannot write '" + path +
                           "': creating a temporary file beside it failed (" +
                           errnoText() +
                           "): check that the directory exists and is "
                           "writable");
  auto abandon = [&](const std::string &step) {
    std::string err = errnoText();
    if (fd >= 0)
      ::close(fd);
    ::unlink(tmpName.data());
    return Status::failure("cannot write '" + path + "': " + step +
                           " failed (" + err + "); the old file is untouched");
  };
  bool ok =
      writeAll(fd, lengthBytes, 8) && writeAll(fd, text.data(), text.size());
  for (const Entry &e : entries)
    ok = ok && writeAll(fd, e.bytes.data(), e.bytes.size());
  if (!ok)
    return abandon("writing the data");
  // mkstemp creates the file 0600; a tensor file is ordinary data.
  if (::fchmod(fd, 0644) != 0)
    return abandon("setting the file mode");
  if (::fsync(fd) != 0)
    return abandon("fsync");
  int closeResult = ::close(fd);
  fd = -1;
  if (closeResult != 0)
    return abandon("closing the temporary file");
  if (::rename(tmpName.data(), path.c_str()) != 0)
    return abandon("renaming the temporary file into place");
  return Status::success();
}

} // namespace attn::safetensors
