//===- SafetensorsTest.cpp - weight files: valid, corrupt, mismatched -----===//

#include "attn/runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace attn::runtime;

namespace {

/// Writes `header` (JSON text) and `data` as a .safetensors file; the length
/// field may be overridden to corrupt it.
std::string writeFile(const std::string &name, const std::string &header,
                      const std::vector<uint8_t> &data,
                      int64_t lengthOverride = -1) {
  std::string path = testing::TempDir() + "/" + name + ".safetensors";
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

  EXPECT_TRUE(checkTensors(file, {{"q.weight", TensorType::F32, {2, 3}},
                                  {"norm", TensorType::BF16, {4}}}));
  Status mismatch = checkTensors(file, {{"q.weight", TensorType::F32, {3, 2}},
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
  std::string path = testing::TempDir() + "/short.safetensors";
  std::ofstream(path, std::ios::binary) << "abc";
  Status status = SafetensorsFile::open(path, file);
  EXPECT_EQ(status.code(), StatusCode::InvalidArgument);
  EXPECT_NE(status.message().find("truncated: 3 bytes"), std::string::npos);
  status =
      SafetensorsFile::open(testing::TempDir() + "/nope.safetensors", file);
  EXPECT_EQ(status.code(), StatusCode::IoError);
}

} // namespace
