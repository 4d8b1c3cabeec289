//===- test/unit/runtime/safetensors_test.cpp - safetensors tests ---------===//
//
// Round trips through the writer and reader, and hand-made broken files that
// the reader must reject with a message naming the tensor and the problem.
//
//===----------------------------------------------------------------------===//
#include "attn/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/resource.h>
#include <tuple>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace attn::safetensors;
using ::testing::HasSubstr;

namespace {

class SafetensorsTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "attn_st_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    fs::permissions(dir, fs::perms::owner_all);
    fs::remove_all(dir);
  }

  std::string path(const std::string &name) const {
    return (dir / name).string();
  }

  /// Writes `header` with a length field of `length` (default: its size),
  /// then `dataBytes` bytes of data.
  std::string writeRaw(const std::string &header, std::size_t dataBytes,
                       std::optional<uint64_t> length = std::nullopt) {
    std::string p = path("raw.safetensors");
    std::ofstream out(p, std::ios::binary);
    uint64_t n = length.value_or(header.size());
    for (int i = 0; i < 8; ++i)
      out.put(char(n >> (8 * i)));
    out << header << std::string(dataBytes, '\0');
    return p;
  }

  std::vector<std::string> listDir() const {
    std::vector<std::string> names;
    for (const auto &e : fs::directory_iterator(dir))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir;
};

::testing::AssertionResult failsWith(const Expected<File> &file,
                                     const std::vector<std::string> &parts) {
  if (file.ok())
    return ::testing::AssertionFailure() << "the file opened";
  for (const std::string &part : parts)
    if (file.message().find(part) == std::string::npos)
      return ::testing::AssertionFailure()
             << "'" << file.message() << "' lacks '" << part << "'";
  return ::testing::AssertionSuccess();
}

TEST_F(SafetensorsTest, RoundTrip) {
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -8.5f};
  std::vector<int32_t> b = {1, -2, 3, 2147483647};
  Writer w;
  ASSERT_TRUE(w.add("a", DType::F32, {2, 3}, a.data(), a.size() * 4).ok());
  ASSERT_TRUE(w.add("b", DType::I32, {4}, b.data(), b.size() * 4).ok());
  ASSERT_TRUE(w.add("empty", DType::F32, {0, 5}, nullptr, 0).ok());
  w.setMetadata("format", "pt");
  Status s = w.write(path("t.safetensors"));
  ASSERT_TRUE(s.ok()) << s.message();

  Expected<File> f = File::open(path("t.safetensors"));
  ASSERT_TRUE(f.ok()) << f.message();
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->tensorNames(), "a, b, empty");

  const Tensor *ta = f->find("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->dtype, DType::F32);
  EXPECT_EQ(ta->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ta->numElements(), 6);
  EXPECT_EQ(0, std::memcmp(ta->data, a.data(), a.size() * 4));
  // The writer pads the header so data starts 64-byte aligned in the map.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ta->data) % 64, 0u);

  const Tensor *tb = f->find("b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->dtype, DType::I32);
  EXPECT_EQ(0, std::memcmp(tb->data, b.data(), b.size() * 4));
  EXPECT_EQ(f->find("empty")->numElements(), 0);
  EXPECT_EQ(f->find("missing"), nullptr);
}

TEST_F(SafetensorsTest, ReadsHandWrittenFile) {
  // The layout Python's safetensors writes: no padding, unsorted keys.
  std::string p =
      writeRaw(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
               R"("s":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
               12);
  Expected<File> f = File::open(p);
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(f->tensors()[0].name, "s"); // listed in data order
  EXPECT_EQ(f->tensors()[0].numElements(), 1);
  EXPECT_EQ(f->tensors()[1].sizeBytes, 8u);
}

TEST_F(SafetensorsTest, MissingFile) {
  EXPECT_TRUE(failsWith(File::open(path("nope.safetensors")),
                        {"nope.safetensors", "cannot open"}));
}

TEST_F(SafetensorsTest, FileShorterThanLength) {
  std::ofstream(path("short.safetensors")) << "abc";
  EXPECT_TRUE(failsWith(File::open(path("short.safetensors")),
                        {"short.safetensors", "too short"}));
}

TEST_F(SafetensorsTest, HeaderLengthTooLong) {
  std::string p = writeRaw("{}", 0, 1000);
  EXPECT_TRUE(failsWith(File::open(p), {"1000", "truncated"}));
}

TEST_F(SafetensorsTest, HeaderLengthTooShort) {
  std::string p = writeRaw("{}", 0, 1);
  EXPECT_TRUE(failsWith(File::open(p), {"header length is 1"}));
}

TEST_F(SafetensorsTest, MalformedJson) {
  std::string p = writeRaw(R"({"a": {"dtype": )", 0);
  EXPECT_TRUE(failsWith(File::open(p), {"malformed"}));
  p = writeRaw("[1, 2]", 0);
  EXPECT_TRUE(failsWith(File::open(p), {"not an object"}));
}

TEST_F(SafetensorsTest, MissingFieldsAndBadShape) {
  EXPECT_TRUE(failsWith(
      File::open(writeRaw(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", 4)),
      {"tensor 't'", "dtype"}));
  EXPECT_TRUE(
      failsWith(File::open(writeRaw(R"({"t":{"dtype":"F32","shape":[-1],)"
                                    R"("data_offsets":[0,4]}})",
                                    4)),
                {"tensor 't'", "-1"}));
  EXPECT_TRUE(
      failsWith(File::open(writeRaw(R"({"t":{"dtype":"F32","shape":[1],)"
                                    R"("data_offsets":[4]}})",
                                    4)),
                {"tensor 't'", "data_offsets"}));
}

TEST_F(SafetensorsTest, EmptyTensorNameIsRefused) {
  // What Writer refuses to write, File refuses to read (a fuzzer's find).
  EXPECT_TRUE(failsWith(
      File::open(writeRaw(
          R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4)),
      {"empty name", "corrupt"}));
}

TEST_F(SafetensorsTest, UnknownDtypeIsNamed) {
  std::string p =
      writeRaw(R"({"h":{"dtype":"F12","shape":[2],"data_offsets":[0,4]}})", 4);
  EXPECT_TRUE(failsWith(File::open(p), {"tensor 'h'", "F12", "corrupt"}));
}

// A checkpoint holds more than attn computes on (an I64 position buffer, BF16
// copies): the file opens, sizes are checked with each dtype's item size, and
// the readers of a tensor check its dtype.
TEST_F(SafetensorsTest, OtherDtypesAreReadAndSized) {
  std::string p =
      writeRaw(R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
               R"("h":{"dtype":"BF16","shape":[2],"data_offsets":[16,20]}})",
               20);
  Expected<File> f = File::open(p);
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(f->find("ids")->dtype, DType::I64);
  EXPECT_STREQ(dtypeName(f->find("h")->dtype), "BF16");
  std::string wrong = writeRaw(
      R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,8]}})", 8);
  EXPECT_TRUE(failsWith(File::open(wrong), {"tensor 'ids'", "needs 16"}));
}

TEST_F(SafetensorsTest, OffsetsDisagreeWithShape) {
  std::string p = writeRaw(
      R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}})", 16);
  EXPECT_TRUE(failsWith(File::open(p), {"tensor 't'", "needs 16", "hold 12"}));
}

TEST_F(SafetensorsTest, OffsetsOutOfRange) {
  std::string p = writeRaw(
      R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[100,116]}})", 16);
  EXPECT_TRUE(failsWith(File::open(p), {"tensor 't'", "[100, 116)"}));
  p = writeRaw(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 16);
  EXPECT_TRUE(failsWith(File::open(p), {"tensor 't'", "end before"}));
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  std::string p =
      writeRaw(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
               R"("b":{"dtype":"I32","shape":[4],"data_offsets":[8,24]}})",
               24);
  EXPECT_TRUE(failsWith(File::open(p), {"'a'", "'b'", "overlap"}));
}

TEST_F(SafetensorsTest, TruncatedDataNamesTensorAndSizes) {
  std::vector<float> a(8, 1.0f), b(16, 2.0f);
  Writer w;
  ASSERT_TRUE(w.add("first", DType::F32, {8}, a.data(), 32).ok());
  ASSERT_TRUE(w.add("second", DType::F32, {4, 4}, b.data(), 64).ok());
  std::string p = path("cut.safetensors");
  ASSERT_TRUE(w.write(p).ok());
  auto full = fs::file_size(p);
  fs::resize_file(p, full - 10);
  EXPECT_TRUE(
      failsWith(File::open(p), {"cut.safetensors", "tensor 'second'",
                                "truncated", "at least " + std::to_string(full),
                                "it has " + std::to_string(full - 10)}));
}

TEST_F(SafetensorsTest, EveryPrefixOfAFileIsRejected) {
  std::vector<float> a(6, 1.0f);
  std::vector<int32_t> b(3, 7);
  Writer w;
  ASSERT_TRUE(w.add("a", DType::F32, {2, 3}, a.data(), 24).ok());
  ASSERT_TRUE(w.add("b", DType::I32, {3}, b.data(), 12).ok());
  std::string p = path("full.safetensors");
  ASSERT_TRUE(w.write(p).ok());
  auto size = fs::file_size(p);
  for (auto n = size; n-- > 0;) {
    fs::resize_file(p, n);
    EXPECT_FALSE(File::open(p).ok()) << "a prefix of " << n << " bytes";
  }
}

TEST_F(SafetensorsTest, WriterRejectsBadTensors) {
  float x[4] = {};
  Writer w;
  EXPECT_THAT(w.add("x", DType::F32, {3}, x, 16).message(),
              HasSubstr("needs 12 bytes"));
  ASSERT_TRUE(w.add("x", DType::F32, {4}, x, 16).ok());
  EXPECT_THAT(w.add("x", DType::F32, {4}, x, 16).message(),
              HasSubstr("already added"));
  EXPECT_FALSE(w.add("y", DType::F32, {-1}, x, 0).ok());
  EXPECT_FALSE(w.add("", DType::F32, {1}, x, 4).ok());
}

TEST_F(SafetensorsTest, AtomicWriteLeavesOnlyTheFile) {
  float x[2] = {1, 2}, y[2] = {3, 4};
  Writer w1, w2;
  ASSERT_TRUE(w1.add("x", DType::F32, {2}, x, 8).ok());
  ASSERT_TRUE(w2.add("y", DType::F32, {2}, y, 8).ok());
  std::string p = path("out.safetensors");
  ASSERT_TRUE(w1.write(p).ok());
  ASSERT_TRUE(w2.write(p).ok()); // replaces the old file
  EXPECT_EQ(listDir(), std::vector<std::string>{"out.safetensors"});
  Expected<File> f = File::open(p);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tensorNames(), "y");
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::others_read,
            fs::perms::others_read);
}

TEST_F(SafetensorsTest, FailedWriteKeepsOldFileAndNoTemp) {
  std::vector<float> big(4096, 1.0f);
  float x[1] = {5};
  Writer small, large;
  ASSERT_TRUE(small.add("old", DType::F32, {1}, x, 4).ok());
  ASSERT_TRUE(large.add("new", DType::F32, {4096}, big.data(), 16384).ok());
  std::string p = path("keep.safetensors");
  ASSERT_TRUE(small.write(p).ok());

  // A file-size limit makes write(2) fail halfway, even for root.
  std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit limited = old;
  limited.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  Status s = large.write(p);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, SIG_DFL);

  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("keep.safetensors"));
  EXPECT_THAT(s.message(), HasSubstr("untouched"));
  EXPECT_EQ(listDir(), std::vector<std::string>{"keep.safetensors"});
  Expected<File> f = File::open(p);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tensorNames(), "old");
}

TEST_F(SafetensorsTest, WriteIntoMissingOrUnwritableDirectory) {
  float x[1] = {5};
  Writer w;
  ASSERT_TRUE(w.add("x", DType::F32, {1}, x, 4).ok());
  Status s = w.write(path("no/such/dir/out.safetensors"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("writable"));

  // A directory in the way: the rename fails after the data is written.
  fs::create_directory(path("taken"));
  fs::create_directory(path("taken/inside"));
  s = w.write(path("taken"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("renaming"));
  EXPECT_EQ(listDir(), std::vector<std::string>{"taken"});

  if (::geteuid() != 0) {
    fs::create_directory(path("ro"));
    std::ofstream(path("ro/f.safetensors")) << "old";
    fs::permissions(path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_FALSE(w.write(path("ro/f.safetensors")).ok());
    fs::permissions(path("ro"), fs::perms::owner_all);
    std::ifstream in(path("ro/f.safetensors"));
    std::string content((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(content, "old");
  }
}

//===----------------------------------------------------------------------===//
// Sharded checkpoints: model.safetensors.index.json and its shards
//===----------------------------------------------------------------------===//

class CheckpointTest : public SafetensorsTest {
protected:
  /// Writes shard `name` holding one F32 [2] tensor per name in `tensors`,
  /// tensor i filled with `first` + i.
  void shard(const std::string &name, const std::vector<std::string> &tensors,
             float first = 0) {
    Writer w;
    for (const std::string &t : tensors) {
      float v[2] = {first, first};
      first += 1;
      ASSERT_TRUE(w.add(t, DType::F32, {2}, v, sizeof v).ok());
    }
    Status s = w.write(path(name));
    ASSERT_TRUE(s.ok()) << s.message();
  }
  /// Writes the index with `weightMap`, a JSON object's members.
  std::string index(const std::string &weightMap) {
    std::string p = path("model.safetensors.index.json");
    std::ofstream(p) << R"({"metadata": {"total_size": 24}, "weight_map": {)"
                     << weightMap << "}}";
    return p;
  }
  /// The usual layout: a and b in the first shard, c in the second.
  std::string twoShards() {
    shard("model-00001-of-00002.safetensors", {"a", "b"}, 1);
    shard("model-00002-of-00002.safetensors", {"c"}, 3);
    return index(R"("a": "model-00001-of-00002.safetensors",)"
                 R"("b": "model-00001-of-00002.safetensors",)"
                 R"("c": "model-00002-of-00002.safetensors")");
  }
};

::testing::AssertionResult failsWith(const Expected<Checkpoint> &cp,
                                     const std::vector<std::string> &parts) {
  if (cp.ok())
    return ::testing::AssertionFailure() << "the checkpoint opened";
  for (const std::string &part : parts)
    if (cp.message().find(part) == std::string::npos)
      return ::testing::AssertionFailure()
             << "'" << cp.message() << "' lacks '" << part << "'";
  return ::testing::AssertionSuccess();
}

TEST_F(CheckpointTest, OneFileIsACheckpointOfOne) {
  shard("model.safetensors", {"x", "y"});
  Expected<Checkpoint> cp = Checkpoint::open(path("model.safetensors"));
  ASSERT_TRUE(cp.ok()) << cp.message();
  EXPECT_FALSE(cp->sharded());
  EXPECT_EQ(cp->files().size(), 1u);
  EXPECT_EQ(cp->tensorNames(), "x, y");
  ASSERT_NE(cp->find("y"), nullptr);
  EXPECT_EQ(cp->pathOf(*cp->find("y")), path("model.safetensors"));
  EXPECT_TRUE(failsWith(Checkpoint::open(path("nope.safetensors")),
                        {"nope.safetensors", "cannot open"}));
}

TEST_F(CheckpointTest, ReadsTensorsAcrossShards) {
  Expected<Checkpoint> cp = Checkpoint::open(twoShards());
  ASSERT_TRUE(cp.ok()) << cp.message();
  EXPECT_TRUE(cp->sharded());
  EXPECT_EQ(cp->path(), path("model.safetensors.index.json"));
  ASSERT_EQ(cp->files().size(), 2u);
  EXPECT_EQ(cp->tensors().size(), 3u);
  EXPECT_EQ(cp->tensorNames(), "a, b, c");
  for (auto [name, value, file] :
       {std::tuple{"a", 1.0f, "model-00001-of-00002.safetensors"},
        std::tuple{"b", 2.0f, "model-00001-of-00002.safetensors"},
        std::tuple{"c", 3.0f, "model-00002-of-00002.safetensors"}}) {
    const Tensor *t = cp->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(static_cast<const float *>(t->data)[1], value) << name;
    EXPECT_EQ(cp->pathOf(*t), path(file)) << name;
  }
  EXPECT_EQ(cp->find("d"), nullptr);
}

TEST_F(CheckpointTest, ShardsMayBeLinksAndDotted) {
  // The Hub's cache: each snapshot file a link into ../../blobs.
  fs::create_directories(path("blobs"));
  fs::create_directories(path("snap"));
  shard("blobs/1234", {"a"});
  fs::create_symlink("../blobs/1234", path("snap/model-1.safetensors"));
  std::string p = path("snap/model.safetensors.index.json");
  std::ofstream(p) << R"({"weight_map": {"a": "./model-1.safetensors"}})";
  Expected<Checkpoint> cp = Checkpoint::open(p);
  ASSERT_TRUE(cp.ok()) << cp.message();
  EXPECT_NE(cp->find("a"), nullptr);
}

TEST_F(CheckpointTest, UnlistedTensorsOfAShardAreRead) {
  shard("s1.safetensors", {"a", "extra"});
  Expected<Checkpoint> cp = Checkpoint::open(index(R"("a": "s1.safetensors")"));
  ASSERT_TRUE(cp.ok()) << cp.message();
  EXPECT_NE(cp->find("extra"), nullptr);
}

TEST_F(CheckpointTest, MissingShardNamesIndexShardAndTensor) {
  shard("model-00001-of-00002.safetensors", {"a"});
  std::string p = index(R"("a": "model-00001-of-00002.safetensors",)"
                        R"("b": "model-00002-of-00002.safetensors",)"
                        R"("c": "model-00002-of-00002.safetensors")");
  EXPECT_TRUE(failsWith(Checkpoint::open(p),
                        {"safetensors index '" + p + "'",
                         "shard 'model-00002-of-00002.safetensors'",
                         "holds tensor 'b' and 1 more", "cannot open it",
                         "download the checkpoint's shards again"}));
}

TEST_F(CheckpointTest, CorruptShardIsRefusedWithTheReadersMessage) {
  twoShards();
  std::ofstream(path("model-00002-of-00002.safetensors")) << "garbage";
  EXPECT_TRUE(failsWith(Checkpoint::open(path("model.safetensors.index.json")),
                        {"shard 'model-00002-of-00002.safetensors'",
                         "holds tensor 'c')", "too short"}));
}

TEST_F(CheckpointTest, TensorTheShardLacks) {
  shard("s1.safetensors", {"a"});
  shard("s2.safetensors", {"b"});
  EXPECT_TRUE(
      failsWith(Checkpoint::open(
                    index(R"("a": "s1.safetensors", "b": "s1.safetensors")")),
                {"maps tensor 'b' to shard 's1.safetensors', which lacks it",
                 "the index and its shards disagree"}));
}

TEST_F(CheckpointTest, TensorInTwoShards) {
  shard("s1.safetensors", {"a", "b"});
  shard("s2.safetensors", {"b"});
  EXPECT_TRUE(failsWith(Checkpoint::open(index(
                            R"("a": "s1.safetensors", "b": "s2.safetensors")")),
                        {"tensor 'b' is in two shards", path("s1.safetensors"),
                         path("s2.safetensors"), "holds each tensor once"}));
}

TEST_F(CheckpointTest, ShardNamesMustStayBesideTheIndex) {
  fs::create_directories(path("sub"));
  shard("outside.safetensors", {"a"});
  std::string p = path("sub/model.safetensors.index.json");
  for (std::string name :
       {path("outside.safetensors"), std::string("../outside.safetensors"),
        std::string("x/../../outside.safetensors"), std::string(""),
        std::string(".")}) {
    std::ofstream(p) << R"({"weight_map": {"a": ")" << name << R"("}})";
    EXPECT_TRUE(failsWith(Checkpoint::open(p),
                          {"tensor 'a' maps to shard '" + name + "'",
                           "not a file name inside the index's directory",
                           "shards must lie beside their index"}))
        << name;
  }
}

TEST_F(CheckpointTest, MalformedIndexes) {
  std::string p = path("model.safetensors.index.json");
  auto with = [&](const std::string &text) {
    std::ofstream(p) << text;
    return Checkpoint::open(p);
  };
  EXPECT_TRUE(failsWith(with(R"({"weight_map": {"a": )"),
                        {"safetensors index '" + p + "'", "not valid JSON",
                         "restore the index"}));
  EXPECT_TRUE(failsWith(with("[]"), {"no \"weight_map\" object"}));
  EXPECT_TRUE(
      failsWith(with(R"({"weight_map": []})"),
                {"no \"weight_map\" object", "model.safetensors.index.json?"}));
  EXPECT_TRUE(failsWith(with(R"({"weight_map": {}})"), {"maps no tensors"}));
  EXPECT_TRUE(failsWith(with(R"({"weight_map": {"a": 3}})"),
                        {"tensor 'a' maps to 3, not a shard file name"}));
  EXPECT_TRUE(failsWith(Checkpoint::open(path("none.index.json")),
                        {"none.index.json", "cannot open it"}));
  fs::create_directories(path("dir.json"));
  EXPECT_TRUE(
      failsWith(Checkpoint::open(path("dir.json")), {"not a regular file"}));
}

} // namespace
