//===- GgufTest.cpp - the GGUF reader against an independent writer -------===//
//
// Files come from tools/gguf_writer.py (written from the format's published
// description): metadata of every value type and tensors of every type the
// reader decodes, whose values its float64 decoder prints; and small files
// each broken in one way, which must be refused with the defect named.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Gguf.h"

#include "TestCommand.h"
#include "TestDirectory.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace attn::runtime;

namespace {

/// Runs the writer with `arguments`; its standard output.
std::string writer(const std::string &arguments) {
  return attn::test::commandOutput(std::string(ATTN_REFERENCE_PYTHON) + " " +
                                   ATTN_GGUF_WRITER + " " + arguments);
}

TEST(GgufTest, MetadataOfEveryTypeAndTensorsOfEveryReadableType) {
  const std::string path = attn::test::testDirectory() + "/values.gguf";
  nlohmann::json decoded = nlohmann::json::parse(writer("values " + path));
  GgufFile file;
  Status s = GgufFile::open(path, file);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 64u);

  int64_t integer;
  for (auto [key, want] :
       {std::pair<const char *, int64_t>{"u8", 200}, {"i8", -100},
        {"u16", 60000}, {"i16", -30000}, {"u32", 4000000000}, {"i32", -2000000000},
        {"i64", -(int64_t(1) << 62)}}) {
    ASSERT_TRUE(file.getInteger(key, integer)) << key;
    EXPECT_EQ(integer, want) << key;
  }
  // 2^64 - 1 is a uint64 no int64 holds: kept, and refused as an integer.
  EXPECT_EQ(file.find("u64")->unsignedInteger, ~uint64_t(0));
  EXPECT_FALSE(file.getInteger("u64", integer));
  double real;
  ASSERT_TRUE(file.getReal("f32", real));
  EXPECT_EQ(real, 0.25);
  ASSERT_TRUE(file.getReal("f64", real));
  EXPECT_EQ(real, -1.5);
  bool flag = false;
  ASSERT_TRUE(file.getBool("bool", flag));
  EXPECT_TRUE(flag);
  std::string text;
  ASSERT_TRUE(file.getString("string", text));
  EXPECT_EQ(text, "h\xc3\xa9llo");
  const std::vector<GgufValue> *items = nullptr;
  ASSERT_TRUE(file.getArray("array", GgufValueType::String, items));
  ASSERT_EQ(items->size(), 3u);
  EXPECT_EQ((*items)[2].string, "ccc");
  EXPECT_EQ((*items)[1].string, "");
  ASSERT_TRUE(file.getArray("nested", GgufValueType::Array, items));
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].items[1].integer, 2);
  EXPECT_TRUE((*items)[1].items.empty());

  // Wrong types and absent keys name the key and both types.
  s = file.getInteger("string", integer);
  EXPECT_NE(s.message().find("metadata 'string' is a string; expected an "
                             "integer"),
            std::string::npos)
      << s.message();
  s = file.getReal("u8", real); // an integer is not a float
  EXPECT_FALSE(s);
  s = file.getString("absent", text);
  EXPECT_EQ(s.code(), StatusCode::NotFound);
  EXPECT_NE(s.message().find("'absent' is missing"), std::string::npos);

  ASSERT_EQ(file.tensors().size(), decoded.size());
  for (const auto &[name, values] : decoded.items()) {
    const GgufTensor *tensor = file.tensor(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(tensor->shape(), (std::vector<int64_t>{3, 256})) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor->data) % 64, 0u) << name;
    ASSERT_TRUE(ggmlReadable(tensor->type)) << name;
    std::vector<float> got(size_t(tensor->elements()));
    readRows(*tensor, 0, 3, got.data());
    ASSERT_EQ(values.size(), got.size());
    // Each value as the float64 decoder's, rounded once to fp32 (Q6_K's
    // d · scale · q may need 25 bits; every other type's value is a float).
    for (size_t i = 0; i < got.size(); i++)
      ASSERT_EQ(got[i], float(values[i].get<double>())) << name << " " << i;
    // A row at a time reads the same values.
    std::vector<float> row(256);
    readRows(*tensor, 2, 1, row.data());
    for (size_t i = 0; i < 256; i++)
      ASSERT_EQ(row[i], got[512 + i]) << name;
  }
  // Q8_0, Q5_0, Q6_K and Q4_0 rows as stored, what the int8 and int4
  // kernels take: per group of 32 (Q6_K: 16) a scale, q · scale and
  // (u - 8) · d being the decoded values, q within the type's bits.
  std::vector<float> values(2 * 256), scales(2 * 16);
  std::vector<int8_t> q(2 * 256);
  std::vector<uint8_t> u(2 * 256);
  struct Int8Type {
    const char *name;
    int group, least, most;
  };
  for (const Int8Type &type : {Int8Type{"q8_0", 32, -128, 127},
                               Int8Type{"q5_0", 32, -16, 15},
                               Int8Type{"q6_k", 16, -32, 31}}) {
    const GgufTensor &tensor = *file.tensor(type.name);
    ASSERT_EQ(ggmlInt8Group(tensor.type), type.group) << type.name;
    readRows(tensor, 1, 2, values.data());
    readInt8Rows(tensor, 1, 2, q.data(), scales.data());
    for (size_t i = 0; i < q.size(); i++) {
      ASSERT_GE(q[i], type.least) << type.name << " " << i;
      ASSERT_LE(q[i], type.most) << type.name << " " << i;
      ASSERT_EQ(float(q[i]) * scales[i / size_t(type.group)], values[i])
          << type.name << " " << i;
    }
  }
  EXPECT_EQ(ggmlInt8Group(file.tensor("q4_0")->type), 0);
  // Q4_1 and Q4_K: u · scale + min per group of 32.
  for (const char *type : {"q4_1", "q4_k"}) {
    std::vector<float> mins(2 * 8);
    readRows(*file.tensor(type), 1, 2, values.data());
    readQ4MinRows(*file.tensor(type), 1, 2, u.data(), scales.data(),
                  mins.data());
    for (size_t i = 0; i < u.size(); i++) {
      ASSERT_LT(u[i], 16) << type << " " << i;
      ASSERT_EQ(float(u[i]) * scales[i / 32] + mins[i / 32], values[i])
          << type << " " << i;
    }
  }
  readRows(*file.tensor("q4_0"), 1, 2, values.data());
  readQ4_0Rows(*file.tensor("q4_0"), 1, 2, u.data(), scales.data());
  for (size_t i = 0; i < u.size(); i++) {
    ASSERT_LT(u[i], 16) << i;
    ASSERT_EQ(float(int(u[i]) - 8) * scales[i / 32], values[i]) << i;
  }
}

struct Broken {
  const char *kind, *message;
};

class GgufBrokenTest : public testing::TestWithParam<Broken> {};

TEST_P(GgufBrokenTest, IsRefusedNamingTheDefect) {
  const Broken &b = GetParam();
  const std::string path =
      attn::test::testDirectory() + "/" + b.kind + ".gguf";
  writer(std::string("broken ") + b.kind + " " + path);
  GgufFile file;
  Status s = GgufFile::open(path, file);
  ASSERT_FALSE(s) << b.kind;
  EXPECT_NE(s.message().find(path + ": byte "), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find(b.message), std::string::npos) << s.message();
  EXPECT_TRUE(file.tensors().empty());
  EXPECT_TRUE(file.metadata().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Files, GgufBrokenTest,
    testing::Values(
        Broken{"magic", "not a GGUF file"},
        Broken{"version", "GGUF version 1 (attnc reads versions 2 and 3)"},
        Broken{"truncated", "'t': its data (32 bytes at offset 0) runs past"},
        Broken{"key-overflow", "a metadata key of 9223372036854775808 bytes "
                               "runs past the end of the file"},
        Broken{"array-overflow", "metadata 'general.architecture': an array "
                                 "of 4611686018427387904 uint64 values"},
        Broken{"tensor-range", "tensor 't': its 1048576 F32 values take more "
                               "bytes than the file has"},
        Broken{"misaligned", "offset 4 is not a multiple of the alignment 32"},
        Broken{"duplicate-key", "metadata key 'general.architecture' appears "
                                "twice"},
        Broken{"duplicate-tensor", "tensor 't': the name appears twice"},
        Broken{"bool", "a bool of value 2"},
        Broken{"type", "tensor 't': unknown ggml type 5"},
        Broken{"dims", "tensor 't': 9 dimensions (1 to 4)"},
        Broken{"overlap", "tensors 't' and 'u' overlap"},
        Broken{"alignment", "'general.alignment' must be a power of two"}),
    [](const testing::TestParamInfo<Broken> &info) {
      std::string name = info.param.kind;
      for (char &c : name)
        if (c == '-')
          c = '_';
      return name;
    });

TEST(GgufTest, EveryPrefixOfAValidFileIsRefusedOrReadWhole) {
  const std::string path = attn::test::testDirectory() + "/prefix.gguf";
  writer("values " + path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  for (size_t size = 0; size < bytes.size(); size++) {
    GgufFile file;
    Status s = GgufFile::parse(bytes.data(), size, "prefix", file);
    // The last tensor's padding is not data: a file cut inside it reads.
    if (s)
      EXPECT_GE(size, bytes.size() - 64) << size;
  }
  GgufFile file;
  EXPECT_TRUE(GgufFile::parse(bytes.data(), bytes.size(), "whole", file));
}

// An independent parser (npm's @huggingface/gguf, tools/gguf-peer.mjs
// dump) reads the same fields from the same files: every key with its type
// and value, every tensor's name, dimensions, type and offset, and where
// the data starts.
void expectSameValue(const GgufValue &value, uint32_t type,
                     const nlohmann::json &peer, const std::string &key) {
  ASSERT_EQ(uint32_t(value.type), type) << key;
  switch (value.type) {
  case GgufValueType::String:
    EXPECT_EQ(value.string, peer.get<std::string>()) << key;
    break;
  case GgufValueType::Bool:
    EXPECT_EQ(value.boolean, peer.get<bool>()) << key;
    break;
  case GgufValueType::F32:
  case GgufValueType::F64:
    EXPECT_EQ(value.real, peer.get<double>()) << key;
    break;
  case GgufValueType::U64:
    EXPECT_EQ(std::to_string(value.unsignedInteger), peer.get<std::string>())
        << key;
    break;
  case GgufValueType::I64:
    EXPECT_EQ(std::to_string(value.integer), peer.get<std::string>()) << key;
    break;
  case GgufValueType::Array:
    ASSERT_EQ(value.items.size(), peer.size()) << key;
    for (size_t i = 0; i < value.items.size(); i++)
      expectSameValue(value.items[i], uint32_t(value.elementType), peer[i],
                      key + "[" + std::to_string(i) + "]");
    break;
  default: // the narrower integers
    EXPECT_EQ(value.integer, peer.get<int64_t>()) << key;
  }
}

TEST(GgufPeer, AnIndependentParserReadsTheSameFields) {
  const std::string dir = attn::test::testDirectory();
  writer("values " + dir + "/peer-values.gguf");
  writer(std::string("random ") + ATTN_GGUF_TEST_CONFIG + " " + dir +
         "/peer-model.gguf --type q4_0");
  for (const char *name : {"peer-values.gguf", "peer-model.gguf"}) {
    const std::string path = dir + "/" + name;
    nlohmann::json peer = nlohmann::json::parse(
        attn::test::commandOutput(std::string("NODE_PATH=") +
                                  ATTN_LLAMACPP_DATA + "/node_modules node " +
                                  ATTN_GGUF_PEER + " dump " + path),
        nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(peer.is_object()) << "no JSON from tools/gguf-peer.mjs";
    GgufFile file;
    Status s = GgufFile::open(path, file);
    ASSERT_TRUE(s) << s.message();
    EXPECT_EQ(file.version(), peer["version"].get<uint32_t>()) << name;
    EXPECT_EQ(std::to_string(file.header().size()),
              peer["data_offset"].get<std::string>())
        << name;
    ASSERT_EQ(file.metadata().size(), peer["metadata"].size()) << name;
    for (const auto &[key, value] : file.metadata()) {
      ASSERT_TRUE(peer["metadata"].contains(key)) << name << ": " << key;
      const nlohmann::json &entry = peer["metadata"][key];
      expectSameValue(value, entry["type"].get<uint32_t>(), entry["value"],
                      key);
      if (value.type == GgufValueType::Array)
        EXPECT_EQ(uint32_t(value.elementType), entry["element"].get<uint32_t>())
            << key;
    }
    ASSERT_EQ(file.tensors().size(), peer["tensors"].size()) << name;
    for (size_t i = 0; i < file.tensors().size(); i++) {
      const GgufTensor &tensor = file.tensors()[i];
      const nlohmann::json &other = peer["tensors"][i];
      EXPECT_EQ(tensor.name, other["name"].get<std::string>());
      std::vector<std::string> dims;
      for (int64_t dim : tensor.dims)
        dims.push_back(std::to_string(dim));
      EXPECT_EQ(dims, other["ne"].get<std::vector<std::string>>())
          << tensor.name;
      EXPECT_EQ(uint32_t(tensor.type), other["type"].get<uint32_t>())
          << tensor.name;
      EXPECT_EQ(std::to_string(tensor.offset),
                other["offset"].get<std::string>())
          << tensor.name;
    }
    std::printf("%s: %zu keys and %zu tensors read alike\n", name,
                file.metadata().size(), file.tensors().size());
  }
}

} // namespace
