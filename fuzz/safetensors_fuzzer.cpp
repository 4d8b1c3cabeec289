//===- fuzz/safetensors_fuzzer.cpp - The safetensors reader ---------------===//
//
// Any bytes as a weights file. File::open either refuses them with a message
// or returns tensors whose every byte lies inside the file and whose sizes
// match their shapes; a file it accepts is written back by Writer and reads
// back the same. The same bytes as a sharded checkpoint's index beside two
// real shards: Checkpoint::open refuses them with a message, or every tensor
// it gives comes from a shard inside the index's directory, once.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzFiles.h"

#include "attn/safetensors.h"

#include <cstring>
#include <fstream>
#include <set>
#include <sys/stat.h>
#include <utility>

using namespace attn::safetensors;
using attnc::fuzz::finding;
using attnc::fuzz::MemFile;

namespace {

constexpr const char *kTarget = "safetensors_fuzzer";

/// Every byte of `t`, so a range past the mapping faults here.
uint8_t touch(const Tensor &t) {
  uint8_t sum = 0;
  for (size_t i = 0; i < t.sizeBytes; ++i)
    sum ^= static_cast<const uint8_t *>(t.data)[i];
  return sum;
}

void checkTensors(const File &file, size_t fileSize) {
  for (const Tensor &t : file.tensors()) {
    if (t.numElements() < 0 ||
        uint64_t(t.numElements()) * itemSize(t.dtype) != t.sizeBytes)
      finding(kTarget, "tensor '" + t.name + "' has " +
                           std::to_string(t.sizeBytes) +
                           " bytes for its shape");
    if (t.sizeBytes > fileSize)
      finding(kTarget, "tensor '" + t.name + "' is larger than the file");
    if (file.find(t.name) != &t)
      finding(kTarget, "find('" + t.name + "') is not the listed tensor");
    volatile uint8_t sink = touch(t);
    (void)sink;
  }
}

/// Writer's copy of `file` in /dev/shm reads back with equal tensors.
void roundTrip(const File &file) {
  Writer writer;
  for (const Tensor &t : file.tensors())
    if (Status s = writer.add(t.name, t.dtype, t.shape, t.data, t.sizeBytes);
        !s)
      finding(kTarget, "Writer refuses tensor '" + t.name +
                           "' that File read: " + s.message());
  for (const auto &[key, value] : file.metadata())
    writer.setMetadata(key, value);
  std::string path =
      "/dev/shm/attnc-safetensors-fuzz-" + std::to_string(::getpid());
  if (Status s = writer.write(path); !s)
    finding(kTarget, "Writer failed: " + s.message());
  Expected<File> back = File::open(path);
  ::unlink(path.c_str());
  if (!back)
    finding(kTarget, "what Writer wrote does not read back: " + back.message());
  if (back->tensors().size() != file.tensors().size() ||
      back->metadata() != file.metadata())
    finding(kTarget, "the tensors or metadata changed on the round trip");
  for (const Tensor &t : file.tensors()) {
    const Tensor *u = back->find(t.name);
    if (!u || u->dtype != t.dtype || u->shape != t.shape ||
        u->sizeBytes != t.sizeBytes ||
        std::memcmp(u->data, t.data, t.sizeBytes) != 0)
      finding(kTarget, "tensor '" + t.name + "' changed on the round trip");
  }
}

/// A directory of this process's with shards "a.safetensors" (tensor "a")
/// and "b.safetensors" (tensors "b", "c") for indexes to name; removed at
/// exit.
struct ShardDirectory {
  static constexpr const char *Files[] = {"a.safetensors", "b.safetensors",
                                          "model.safetensors.index.json"};
  std::string path = "/dev/shm/attnc-index-fuzz-" + std::to_string(::getpid());

  ShardDirectory() {
    ::mkdir(path.c_str(), 0700);
    float v[2] = {1, 2};
    Writer a, b;
    (void)a.add("a", DType::F32, {2}, v, sizeof v);
    (void)b.add("b", DType::F32, {2}, v, sizeof v);
    (void)b.add("c", DType::F32, {2}, v, sizeof v);
    for (auto [writer, file] : {std::pair{&a, Files[0]}, {&b, Files[1]}})
      if (Status s = writer->write(path + "/" + file); !s)
        finding(kTarget, "cannot write a shard: " + s.message());
  }
  ~ShardDirectory() {
    for (const char *file : Files)
      ::unlink((path + "/" + file).c_str());
    ::rmdir(path.c_str());
  }
};

void checkIndex(const uint8_t *data, size_t size) {
  static const ShardDirectory shards;
  const std::string &dir = shards.path;
  std::string path = dir + "/model.safetensors.index.json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(data), std::streamsize(size));
  }
  Expected<Checkpoint> cp = Checkpoint::open(path);
  if (!cp) {
    if (cp.message().empty())
      finding(kTarget, "an index was refused without a message");
    return;
  }
  std::set<std::string> names;
  for (const Tensor &t : cp->tensors()) {
    const std::string &file = cp->pathOf(t);
    if (file != dir + "/a.safetensors" && file != dir + "/b.safetensors")
      finding(kTarget, "tensor '" + t.name + "' comes from '" + file +
                           "', not a shard beside the index");
    if (!names.insert(t.name).second)
      finding(kTarget, "tensor '" + t.name + "' is listed twice");
    if (cp->find(t.name) != &t)
      finding(kTarget, "find('" + t.name + "') is not the listed tensor");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  checkIndex(data, size);
  MemFile input(data, size);
  Expected<File> file = File::open(input.path());
  if (!file) {
    if (file.message().empty())
      finding(kTarget, "a file was refused without a message");
    return 0;
  }
  checkTensors(*file, size);
  roundTrip(*file);
  return 0;
}
