//===- SafetensorsTest.cpp - weight files: valid, corrupt, mismatched -----===//

#include "attn/runtime/Checkpoint.h"
#include "attn/runtime/Safetensors.h"

#include "TestDirectory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace attn::runtime;

namespace {

using attn::test::freshDirectory;
using attn::test::testDirectory;

/// Writes `header` (JSON text) and `data` as a .safetensors file; the length
/// field may be overridden to corrupt it.
std::string writeFile(const std::string &name, const std::string &header,
                      const std::vector<uint8_t> &data,
                      int64_t lengthOverride = -1) {
  std::string path = testDirectory() + "/" + name + ".safetensors";
  std::ofstream out(path, std::ios::binary);
  uint64_t length =
      lengthOverride >= 0 ? uint64_t(lengthOverride) : header.size();
  for (int i = 0; i < 8; i++)
    out.put(char((length >> (8 * i)) & 0xff));
  out << header;
  out.write(reinterpret_cast<const char *>(data.data()), data.size());
  return path;
}

const char *kHeader =
    R"({"__metadata__": {"format": "pt"},
        "q.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "norm": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]}})";

std::vector<uint8_t> payload() {
  std::vector<uint8_t> data(32);
  float values[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(data.data(), values, sizeof values);
  return data;
}

TEST(Safetensors, MapsAValidFile) {
  SafetensorsFile file;
  Status status =
      SafetensorsFile::open(writeFile("valid", kHeader, payload()), file);
  ASSERT_TRUE(status) << status.message();
  ASSERT_EQ(file.tensors().size(), 2u);
  const TensorView *q = file.find("q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, TensorType::F32);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{2, 3}));
  // The format does not align tensor data (this header's length is odd):
  // element reads go through memcpy.
  float last;
  std::memcpy(&last, static_cast<const char *>(q->data) + 5 * sizeof(float),
              sizeof last);
  EXPECT_EQ(last, 6.0f);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.find("missing"), nullptr);

  Checkpoint checkpoint;
  ASSERT_TRUE(Checkpoint::open(writeFile("valid", kHeader, payload()),
                               checkpoint));
  // A BF16 tensor stands where F32 is expected (read exactly as floats).
  EXPECT_TRUE(checkTensors(checkpoint, {{"q.weight", TensorType::F32, {2, 3}},
                                        {"norm", TensorType::F32, {4}}}));
  Status mismatch =
      checkTensors(checkpoint, {{"q.weight", TensorType::F32, {3, 2}},
                                {"k.weight", TensorType::F32, {2, 3}}});
  EXPECT_EQ(mismatch.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(mismatch.message(),
            "weights: q.weight is F32 [2, 3], expected F32 [3, 2]; missing "
            "k.weight; unexpected norm");
}

struct CorruptCase {
  const char *name;
  std::string header;
  size_t dataBytes;
  int64_t lengthOverride;
  const char *message;
};

class SafetensorsCorrupt : public testing::TestWithParam<CorruptCase> {};

TEST_P(SafetensorsCorrupt, IsAnErrorNamingTheProblem) {
  const CorruptCase &c = GetParam();
  std::vector<uint8_t> data = payload();
  data.resize(c.dataBytes);
  SafetensorsFile file;
  Status status = SafetensorsFile::open(
      writeFile(c.name, c.header, data, c.lengthOverride), file);
  EXPECT_FALSE(status);
  EXPECT_NE(status.message().find(c.message), std::string::npos)
      << status.message();
  EXPECT_TRUE(file.tensors().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SafetensorsCorrupt,
    testing::Values(
        CorruptCase{"truncated_data", kHeader, 20, -1,
                    "tensor 'norm': data_offsets [24, 32) outside the 20 data "
                    "bytes (truncated file?)"},
        CorruptCase{"huge_length", kHeader, 32, int64_t(1) << 40,
                    "header length 1099511627776 exceeds the file"},
        CorruptCase{"not_json", "{\"a\": [1, 2", 32, -1,
                    "the header is not a JSON object"},
        CorruptCase{
            "bad_dtype",
            R"({"x": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}})",
            32, -1, "tensor 'x': unsupported dtype \"F8\""},
        CorruptCase{
            "wrong_size",
            R"({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
            32, -1, "tensor 'x': holds 8 bytes, but F32 [3] needs 12"},
        CorruptCase{
            "overlap",
            R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                        "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
            32, -1, "two tensors overlap at data offset 4"},
        CorruptCase{
            "negative_shape",
            R"({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})",
            32, -1, "shape must hold non-negative integers"},
        CorruptCase{"missing_fields", R"({"x": {"dtype": "F32"}})", 32, -1,
                    "needs dtype, shape and data_offsets"}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Safetensors, ShortAndMissingFiles) {
  SafetensorsFile file;
  std::string path = testDirectory() + "/short.safetensors";
  std::ofstream(path, std::ios::binary) << "abc";
  Status status = SafetensorsFile::open(path, file);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("truncated: 3 bytes"), std::string::npos);
  status =
      SafetensorsFile::open(testDirectory() + "/nope.safetensors", file);
  EXPECT_EQ(status.code(), StatusCode::IoError);
}


TEST(Safetensors, SixteenBitFloatsReadExactly) {
  // Values exact in every type, and values each type rounds (to nearest
  // even): what is read back is what the file holds, widened exactly.
  std::vector<float> values = {1.0f, -2.5f, 0.0f, 65504.0f, 1.0f / 3.0f,
                               3.14159265f, 1e-7f, -1e30f};
  const std::vector<int64_t> shape = {int64_t(values.size())};
  std::string path = testDirectory() + "/sixteen.safetensors";
  ASSERT_TRUE(writeSafetensors(path,
                               {{"f32", TensorType::F32, shape},
                                {"f16", TensorType::F16, shape},
                                {"bf16", TensorType::BF16, shape}},
                               {values.data(), values.data(), values.data()}));
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(path, file));
  EXPECT_EQ(file.find("f16")->bytes, values.size() * 2);
  std::vector<float> f32 = readFloats(*file.find("f32")),
                     f16 = readFloats(*file.find("f16")),
                     bf16 = readFloats(*file.find("bf16"));
  EXPECT_EQ(f32, values);
  // bf16: the top 16 bits, rounded to nearest even.
  EXPECT_EQ(bf16[0], 1.0f);
  EXPECT_EQ(bf16[1], -2.5f);
  EXPECT_EQ(bf16[4], 0.333984375f); // 0x3EAB
  EXPECT_EQ(bf16[5], 3.140625f);    // 0x4049
  EXPECT_NEAR(bf16[7], -1e30f, 1e30f * 0.004f);
  // f16: 11 significant bits; 1e-7 is a subnormal, -1e30 overflows.
  EXPECT_EQ(f16[3], 65504.0f);
  EXPECT_EQ(f16[4], 0.333251953125f); // 0x3555
  EXPECT_EQ(f16[5], 3.140625f);       // 0x4248
  EXPECT_EQ(f16[6], 1.0f / 16777216.0f * 2); // nearest multiple of 2^-24
  EXPECT_TRUE(std::isinf(f16[7]) && f16[7] < 0);
  for (size_t i = 0; i < values.size(); i++) {
    if (i != 6 && i != 7)
      EXPECT_NEAR(f16[i], values[i], std::fabs(values[i]) / 1024) << i;
    EXPECT_NEAR(bf16[i], values[i], std::fabs(values[i]) / 128) << i;
  }
}

/// Three tensors written as a checkpoint of `shards` shards in a fresh
/// folder; returns the folder.
std::string shardedCheckpoint(const std::string &name, int shards,
                              std::vector<std::vector<float>> &values) {
  values = {{1, 2, 3, 4, 5, 6}, {7, 8}, {9, 10, 11}};
  std::string dir = freshDirectory(name);
  Status s = writeCheckpoint(dir,
                             {{"a.weight", TensorType::F32, {2, 3}},
                              {"b.weight", TensorType::BF16, {2}},
                              {"c.bias", TensorType::F16, {3}}},
                             {values[0].data(), values[1].data(),
                              values[2].data()},
                             shards);
  EXPECT_TRUE(s) << s.message();
  return dir;
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(Checkpoint, FolderFileAndIndexOpenTheSameTensors) {
  std::vector<std::vector<float>> values;
  for (int shards : {1, 2, 3}) {
    std::string dir = shardedCheckpoint("shards" + std::to_string(shards),
                                        shards, values);
    // The folder, and what is in it by name.
    for (std::string path :
         {dir, dir + (shards == 1 ? "/model.safetensors"
                                  : "/model.safetensors.index.json")}) {
      Checkpoint checkpoint;
      Status s = Checkpoint::open(path, checkpoint);
      ASSERT_TRUE(s) << s.message();
      EXPECT_EQ(checkpoint.files().size(), size_t(shards));
      EXPECT_EQ(checkpoint.tensors().size(), 3u);
      EXPECT_EQ(checkpoint.tensorBytes(), 6u * 4 + 2 * 2 + 3 * 2);
      EXPECT_EQ(readFloats(*checkpoint.find("a.weight")), values[0]);
      EXPECT_EQ(readFloats(*checkpoint.find("b.weight")), values[1]);
      EXPECT_EQ(readFloats(*checkpoint.find("c.bias")), values[2]);
      EXPECT_EQ(checkpoint.find("d"), nullptr);
      EXPECT_TRUE(checkTensors(checkpoint,
                               {{"a.weight", TensorType::F32, {2, 3}},
                                {"b.weight", TensorType::F32, {2}},
                                {"c.bias", TensorType::F32, {3}}}));
    }
  }
  Checkpoint checkpoint;
  ASSERT_TRUE(Checkpoint::open(shardedCheckpoint("names", 3, values),
                               checkpoint));
  EXPECT_NE(checkpoint.fileOf("a.weight").find("model-00001-of-00003"),
            std::string::npos);
  EXPECT_NE(checkpoint.fileOf("c.bias").find("model-00003-of-00003"),
            std::string::npos);
}

struct BrokenIndex {
  const char *name;
  std::string index; // replaces model.safetensors.index.json
  const char *message;
};

class CheckpointBroken : public testing::TestWithParam<BrokenIndex> {};

TEST_P(CheckpointBroken, IsAnErrorNamingTensorAndFile) {
  std::vector<std::vector<float>> values;
  std::string dir = shardedCheckpoint(GetParam().name, 3, values);
  writeText(dir + "/model.safetensors.index.json", GetParam().index);
  Checkpoint checkpoint;
  Status s = Checkpoint::open(dir, checkpoint);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find(GetParam().message), std::string::npos)
      << s.message();
  EXPECT_TRUE(checkpoint.tensors().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckpointBroken,
    testing::Values(
        BrokenIndex{"missing_shard",
                    R"({"weight_map": {"a.weight": "model-00001-of-00003.safetensors",
                         "b.weight": "model-00002-of-00003.safetensors",
                         "c.bias": "model-00004-of-00003.safetensors"}})",
                    "shard model-00004-of-00003.safetensors (holding c.bias, "
                    "among others) is missing"},
        BrokenIndex{"wrong_shard",
                    R"({"weight_map": {"a.weight": "model-00001-of-00003.safetensors",
                         "b.weight": "model-00002-of-00003.safetensors",
                         "c.bias": "model-00002-of-00003.safetensors",
                         "x": "model-00003-of-00003.safetensors"}})",
                    "the index puts c.bias in model-00002-of-00003.safetensors, "
                    "but it is in"},
        BrokenIndex{"absent_tensor",
                    R"({"weight_map": {"a.weight": "model-00001-of-00003.safetensors",
                         "b.weight": "model-00002-of-00003.safetensors",
                         "c.bias": "model-00003-of-00003.safetensors",
                         "d.weight": "model-00003-of-00003.safetensors"}})",
                    "the index puts d.weight in model-00003-of-00003.safetensors, "
                    "which lacks it"},
        BrokenIndex{"unlisted_tensor",
                    R"({"weight_map": {"a.weight": "model-00001-of-00003.safetensors",
                         "b.weight": "model-00002-of-00003.safetensors",
                         "x": "model-00003-of-00003.safetensors"}})",
                    "model-00003-of-00003.safetensors holds c.bias, which the "
                    "index does not list"},
        BrokenIndex{"escaping_path",
                    R"({"weight_map": {"a.weight": "../model-00001-of-00003.safetensors"}})",
                    "not a file beside the index"},
        BrokenIndex{"no_map", R"({"metadata": {}})", "needs \"weight_map\""},
        BrokenIndex{"not_json", "{\"weight_map\": ", "not a JSON object"}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(Checkpoint, TensorInTwoShardsIsAnError) {
  std::vector<std::vector<float>> values;
  std::string dir = shardedCheckpoint("twice", 2, values);
  // The second shard gets a copy of the first shard's tensor too.
  std::vector<float> a = values[0];
  ASSERT_TRUE(writeSafetensors(dir + "/model-00002-of-00002.safetensors",
                               {{"a.weight", TensorType::F32, {2, 3}},
                                {"c.bias", TensorType::F16, {3}}},
                               {a.data(), values[2].data()}));
  Checkpoint checkpoint;
  Status s = Checkpoint::open(dir, checkpoint);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("tensor 'a.weight' is in two shards"),
            std::string::npos)
      << s.message();
}

TEST(Checkpoint, FolderWithoutWeightsIsAnError) {
  Checkpoint checkpoint;
  Status s = Checkpoint::open(freshDirectory("empty"), checkpoint);
  EXPECT_EQ(s.code(), StatusCode::NotFound);
  EXPECT_NE(s.message().find("a model folder needs "
                             "model.safetensors.index.json or "
                             "model.safetensors"),
            std::string::npos)
      << s.message();
}

} // namespace
