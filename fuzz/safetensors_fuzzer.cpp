//===- fuzz/safetensors_fuzzer.cpp - The safetensors reader ---------------===//
//
// Any bytes as a weights file. File::open either refuses them with a message
// or returns tensors whose every byte lies inside the file and whose sizes
// match their shapes; a file it accepts is written back by Writer and reads
// back the same.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzFiles.h"

#include "attn/safetensors.h"

#include <cstring>

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

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
