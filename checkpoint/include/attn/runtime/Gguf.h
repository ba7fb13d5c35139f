//===- Gguf.h - GGUF model files, validated and memory-mapped ---*- C++ -*-===//
//
// A GGUF file (ggml's docs/gguf.md, versions 2 and 3; version 1 had 32-bit
// counts and is refused) is, all little-endian:
//   "GGUF", uint32 version, uint64 tensor count, uint64 metadata count,
//   metadata: string key, uint32 value type, value;
//   tensor infos: string name, uint32 dimensions n (1..4), uint64 ne[n]
//     (ne[0] the fastest-varying), uint32 ggml type, uint64 offset;
//   padding to `general.alignment` (default 32), then the tensor data, each
//   tensor at its offset from there, a multiple of the alignment.
// Strings are a uint64 length and that many bytes (UTF-8, no NUL). A value
// is a scalar of one of the value types or an array: uint32 element type,
// uint64 count, the elements.
//
// open() validates all of it before anything is used — the magic, the
// version, every count and length against the bytes left (so nothing is
// allocated for a count the file cannot hold), value types, tensor
// dimensions and types, byte sizes without overflow, offsets aligned and
// inside the file, no two tensors overlapping, no duplicate key or tensor
// name — and each error names the file, the byte offset and the key or
// tensor at fault.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_GGUF_H
#define ATTN_RUNTIME_GGUF_H

#include "attn/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn::runtime {

/// The metadata value types, numbered as in the file.
enum class GgufValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char *name(GgufValueType type);

/// One metadata value. Integers of every width are kept as `integer`
/// (uint64 values above INT64_MAX as `unsignedInteger` only), floats as
/// `real`; arrays hold their elements in `items`, all of `elementType`.
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  int64_t integer = 0;
  uint64_t unsignedInteger = 0;
  double real = 0;
  bool boolean = false;
  std::string string;
  GgufValueType elementType = GgufValueType::U8; // arrays
  std::vector<GgufValue> items;                   // arrays

  bool isInteger() const;
  bool isReal() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }
};

/// ggml's tensor types, numbered as in the file, with the size of a block
/// of `blockElements` values (ggml-common.h). Types ggml no longer defines
/// (4, 5: Q4_2, Q4_3) are not in the table and are refused.
enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
  Q8_1 = 9, Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14,
  Q8_K = 15, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19,
  IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25,
  I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34,
  TQ2_0 = 35, MXFP4 = 39,
};
struct GgmlTypeInfo {
  GgmlType type;
  const char *name;
  int64_t blockElements, blockBytes;
};
/// Null for a number no ggml type has.
const GgmlTypeInfo *ggmlTypeInfo(uint32_t type);
const char *name(GgmlType type);

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  /// ne[0] (the contiguous one) first, as in the file.
  std::vector<int64_t> dims;
  uint64_t offset = 0; // from the data section's start
  const uint8_t *data = nullptr;
  size_t bytes = 0;

  int64_t elements() const;
  /// The shape with the contiguous dimension last ([rows][columns], as
  /// PyTorch and safetensors write it).
  std::vector<int64_t> shape() const;
};

/// Whether readRows decodes `type`: F32, F16, BF16, Q8_0, Q6_K, Q5_0,
/// Q4_0, Q4_1 and Q4_K (the other types are refused by the loaders, naming
/// the tensor).
bool ggmlReadable(GgmlType type);
/// "F32, F16, … and Q4_K": the readable types, for messages.
std::string ggmlReadableNames();
/// The values per scale of a type whose blocks are attnc's int8 in groups
/// as stored (readInt8Rows): Q8_0 and Q5_0 32, Q6_K 16; 0 for any other.
int ggmlInt8Group(GgmlType type);
/// `values` values of `type` stored at `data` (whole blocks) as floats,
/// exactly (every value of these types is a float).
void decodeValues(GgmlType type, const uint8_t *data, int64_t values,
                  float *out);
/// The bytes `values` values of `type` take (whole blocks).
size_t storedBytes(GgmlType type, int64_t values);
/// Rows [first, first + count) of `tensor` (rows of dims[0] values) as
/// floats (decodeValues).
void readRows(const GgufTensor &tensor, int64_t first, int64_t count,
              float *out);
/// The same rows of a Q4_0 tensor as they are stored, without rounding:
/// u [count][dims[0]] in 0..15 and scales [count][dims[0] / 32], each value
/// (u - 8) · scale — attnc's symmetric int4 in groups of 32.
void readQ4_0Rows(const GgufTensor &tensor, int64_t first, int64_t count,
                  uint8_t *u, float *scales);
/// The same rows of a tensor of an int8-group type (ggmlInt8Group) as they
/// are stored, without rounding: q [count][dims[0]] and scales
/// [count][dims[0] / group], each value q · scale — Q8_0's q, Q5_0's 5-bit
/// value less 16, Q6_K's 6-bit value less 32 with each sub-block's
/// d · scale (exact in fp32) as its scale.
void readInt8Rows(const GgufTensor &tensor, int64_t first, int64_t count,
                  int8_t *q, float *scales);
/// The same rows of a Q4_1 or Q4_K tensor: u [count][dims[0]] in 0..15, and
/// per group of 32 scales and mins [count][dims[0] / 32] (Q4_K: each
/// sub-block's d · sc and -dmin · m, exact in fp32), each value u · scale
/// + min — attnc's int4 with minimums in groups of 32.
void readQ4MinRows(const GgufTensor &tensor, int64_t first, int64_t count,
                   uint8_t *u, float *scales, float *mins);

class GgufFile {
public:
  GgufFile() = default;
  GgufFile(GgufFile &&other) noexcept;
  GgufFile &operator=(GgufFile &&other) noexcept;
  GgufFile(const GgufFile &) = delete;
  GgufFile &operator=(const GgufFile &) = delete;
  ~GgufFile();

  /// Maps and validates `path`; on failure `file` is left empty.
  static Status open(const std::string &path, GgufFile &file);
  /// Validates `size` bytes at `data`, which must outlive `file` (tests,
  /// fuzzing); `path` names them in messages.
  static Status parse(const void *data, size_t size, const std::string &path,
                      GgufFile &file);
  /// Whether `bytes` start as a GGUF file does.
  static bool hasMagic(std::string_view bytes);

  const std::string &path() const { return path_; }
  /// The bytes before the tensor data: the header, metadata and tensor
  /// infos (what a cache of anything derived from the file keys on).
  std::string_view header() const { return header_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  /// Keys in file order.
  const std::vector<std::pair<std::string, GgufValue>> &metadata() const {
    return metadata_;
  }
  const GgufValue *find(const std::string &key) const;
  /// Tensors in file order.
  const std::vector<GgufTensor> &tensors() const { return tensors_; }
  const GgufTensor *tensor(const std::string &name) const;
  size_t tensorBytes() const;

  /// Typed reads of one key: NotFound when absent, InvalidArgument naming
  /// the key and both types when the value has another type (integers of
  /// any width read as integers; an integer does not read as a float).
  Status getInteger(const std::string &key, int64_t &value) const;
  Status getReal(const std::string &key, double &value) const;
  Status getBool(const std::string &key, bool &value) const;
  Status getString(const std::string &key, std::string &value) const;
  /// An array of `element` (any integer type for U32/I32/… requests).
  Status getArray(const std::string &key, GgufValueType element,
                  const std::vector<GgufValue> *&items) const;

private:
  void unmap();

  std::string path_;
  std::string_view header_;
  void *mapping_ = nullptr;
  size_t mappedBytes_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t> keyIndex_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensorIndex_;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_GGUF_H
