//===- Gguf.cpp - GGUF model files, validated and memory-mapped -----------===//

#include "attn/runtime/Gguf.h"

#include "attn/runtime/DType.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::runtime {

namespace {
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {GgmlType::F32, "F32", 1, 4},         {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", 32, 18},     {GgmlType::Q4_1, "Q4_1", 32, 20},
    {GgmlType::Q5_0, "Q5_0", 32, 22},     {GgmlType::Q5_1, "Q5_1", 32, 24},
    {GgmlType::Q8_0, "Q8_0", 32, 34},     {GgmlType::Q8_1, "Q8_1", 32, 36},
    {GgmlType::Q2_K, "Q2_K", 256, 84},    {GgmlType::Q3_K, "Q3_K", 256, 110},
    {GgmlType::Q4_K, "Q4_K", 256, 144},   {GgmlType::Q5_K, "Q5_K", 256, 176},
    {GgmlType::Q6_K, "Q6_K", 256, 210},   {GgmlType::Q8_K, "Q8_K", 256, 292},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66},
    {GgmlType::IQ2_XS, "IQ2_XS", 256, 74},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98},
    {GgmlType::IQ1_S, "IQ1_S", 256, 50},  {GgmlType::IQ4_NL, "IQ4_NL", 32, 18},
    {GgmlType::IQ3_S, "IQ3_S", 256, 110}, {GgmlType::IQ2_S, "IQ2_S", 256, 82},
    {GgmlType::IQ4_XS, "IQ4_XS", 256, 136},
    {GgmlType::I8, "I8", 1, 1},           {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},         {GgmlType::I64, "I64", 1, 8},
    {GgmlType::F64, "F64", 1, 8},         {GgmlType::IQ1_M, "IQ1_M", 256, 56},
    {GgmlType::BF16, "BF16", 1, 2},       {GgmlType::TQ1_0, "TQ1_0", 256, 54},
    {GgmlType::TQ2_0, "TQ2_0", 256, 66},  {GgmlType::MXFP4, "MXFP4", 32, 17},
};

constexpr uint32_t kMinVersion = 2, kMaxVersion = 3;
constexpr uint32_t kMaxDimensions = 4;
/// Arrays inside arrays: the format allows them; no model file nests
/// deeper than one level, and a bound keeps recursion finite.
constexpr int kMaxNesting = 8;

/// Reads the file's fields in order, each bounded by the bytes left.
class Cursor {
public:
  Cursor(const uint8_t *data, size_t size, const std::string &path)
      : data_(data), size_(size), path_(path) {}

  size_t offset() const { return offset_; }
  size_t left() const { return size_ - offset_; }
  Status error(const std::string &message, size_t at) const {
    return Status(StatusCode::InvalidArgument,
                  path_ + ": byte " + std::to_string(at) + ": " + message);
  }
  Status error(const std::string &message) const {
    return error(message, offset_);
  }
  template <typename T> Status read(T &value, const char *what) {
    if (left() < sizeof(T))
      return error(std::string("the file ends inside ") + what);
    std::memcpy(&value, data_ + offset_, sizeof(T));
    offset_ += sizeof(T);
    return Status::ok();
  }
  Status readString(std::string &value, const char *what) {
    uint64_t length;
    const size_t at = offset_;
    if (Status status = read(length, what); !status)
      return status;
    if (length > left())
      return error(std::string(what) + " of " + std::to_string(length) +
                       " bytes runs past the end of the file (" +
                       std::to_string(left()) + " bytes left)",
                   at);
    value.assign(reinterpret_cast<const char *>(data_ + offset_),
                 size_t(length));
    offset_ += size_t(length);
    return Status::ok();
  }
  Status skipTo(size_t offset) {
    if (offset > size_)
      return error("the file ends before byte " + std::to_string(offset));
    offset_ = offset;
    return Status::ok();
  }

private:
  const uint8_t *data_;
  size_t size_, offset_ = 0;
  const std::string &path_;
};

bool validValueType(uint32_t type) { return type <= 12; }

/// The fewest bytes one value of `type` takes in the file: arrays are
/// checked against them before their elements are allocated.
size_t minimumBytes(GgufValueType type) {
  switch (type) {
  case GgufValueType::U8:
  case GgufValueType::I8:
  case GgufValueType::Bool:
    return 1;
  case GgufValueType::U16:
  case GgufValueType::I16:
    return 2;
  case GgufValueType::U32:
  case GgufValueType::I32:
  case GgufValueType::F32:
    return 4;
  case GgufValueType::String:
  case GgufValueType::U64:
  case GgufValueType::I64:
  case GgufValueType::F64:
    return 8;
  case GgufValueType::Array:
    return 12; // element type and count
  }
  return 1;
}

Status readValue(Cursor &cursor, GgufValueType type, GgufValue &value,
                 const std::string &key, int depth) {
  value.type = type;
  auto integer = [&](auto raw) {
    Status status = cursor.read(raw, "a metadata value");
    value.integer = int64_t(raw);
    value.unsignedInteger = uint64_t(raw);
    return status;
  };
  switch (type) {
  case GgufValueType::U8:
    return integer(uint8_t());
  case GgufValueType::I8:
    return integer(int8_t());
  case GgufValueType::U16:
    return integer(uint16_t());
  case GgufValueType::I16:
    return integer(int16_t());
  case GgufValueType::U32:
    return integer(uint32_t());
  case GgufValueType::I32:
    return integer(int32_t());
  case GgufValueType::I64:
    return integer(int64_t());
  case GgufValueType::U64: {
    uint64_t raw;
    if (Status status = cursor.read(raw, "a metadata value"); !status)
      return status;
    value.unsignedInteger = raw;
    value.integer = raw > uint64_t(std::numeric_limits<int64_t>::max())
                        ? std::numeric_limits<int64_t>::max()
                        : int64_t(raw);
    return Status::ok();
  }
  case GgufValueType::F32: {
    float raw;
    Status status = cursor.read(raw, "a metadata value");
    value.real = raw;
    return status;
  }
  case GgufValueType::F64:
    return cursor.read(value.real, "a metadata value");
  case GgufValueType::Bool: {
    const size_t at = cursor.offset();
    uint8_t raw;
    if (Status status = cursor.read(raw, "a metadata value"); !status)
      return status;
    if (raw > 1)
      return cursor.error("metadata '" + key + "': a bool of value " +
                              std::to_string(raw) + " (0 or 1)",
                          at);
    value.boolean = raw == 1;
    return Status::ok();
  }
  case GgufValueType::String:
    return cursor.readString(value.string, "a metadata string");
  case GgufValueType::Array: {
    const size_t at = cursor.offset();
    uint32_t element;
    uint64_t count;
    if (Status status = cursor.read(element, "an array's element type");
        !status)
      return status;
    if (!validValueType(element))
      return cursor.error("metadata '" + key + "': unknown array element type " +
                              std::to_string(element),
                          at);
    if (Status status = cursor.read(count, "an array's length"); !status)
      return status;
    value.elementType = GgufValueType(element);
    if (value.elementType == GgufValueType::Array && depth >= kMaxNesting)
      return cursor.error("metadata '" + key + "': arrays nested deeper than " +
                              std::to_string(kMaxNesting),
                          at);
    if (count > cursor.left() / minimumBytes(value.elementType))
      return cursor.error("metadata '" + key + "': an array of " +
                              std::to_string(count) + " " +
                              name(value.elementType) +
                              " values runs past the end of the file",
                          at);
    value.items.resize(size_t(count));
    for (GgufValue &item : value.items)
      if (Status status =
              readValue(cursor, value.elementType, item, key, depth + 1);
          !status)
        return status;
    return Status::ok();
  }
  }
  return cursor.error("metadata '" + key + "': unknown value type");
}

bool multiplyOverflows(uint64_t a, uint64_t b, uint64_t &product) {
  return __builtin_mul_overflow(a, b, &product);
}
} // namespace

const char *name(GgufValueType type) {
  static const char *const kNames[] = {"uint8",  "int8",   "uint16", "int16",
                                       "uint32", "int32",  "float32", "bool",
                                       "string", "array",  "uint64", "int64",
                                       "float64"};
  const uint32_t index = uint32_t(type);
  return index < std::size(kNames) ? kNames[index] : "?";
}

bool GgufValue::isInteger() const {
  switch (type) {
  case GgufValueType::U8:
  case GgufValueType::I8:
  case GgufValueType::U16:
  case GgufValueType::I16:
  case GgufValueType::U32:
  case GgufValueType::I32:
  case GgufValueType::U64:
  case GgufValueType::I64:
    return true;
  default:
    return false;
  }
}

const GgmlTypeInfo *ggmlTypeInfo(uint32_t type) {
  for (const GgmlTypeInfo &info : kGgmlTypes)
    if (uint32_t(info.type) == type)
      return &info;
  return nullptr;
}

const char *name(GgmlType type) {
  const GgmlTypeInfo *info = ggmlTypeInfo(uint32_t(type));
  return info ? info->name : "?";
}

int64_t GgufTensor::elements() const {
  int64_t count = 1;
  for (int64_t dim : dims)
    count *= dim;
  return count;
}

std::vector<int64_t> GgufTensor::shape() const {
  return std::vector<int64_t>(dims.rbegin(), dims.rend());
}

namespace {
/// The float16 at `bytes` (any alignment), as DType.h decodes it.
float halfToFloat(const uint8_t *bytes) {
  uint16_t bits;
  std::memcpy(&bits, bytes, 2);
  float value;
  decode(DType::F16, &bits, &value, 1);
  return value;
}
/// A Q4_1 block (float16 d, float16 m, uint8 qs[16]: value j < 16 in the
/// low nibble of byte j, j + 16 in its high nibble) as its 32 values u and
/// its scale d and minimum m: x = u · d + m.
void q4_1Block(const uint8_t *block, uint8_t *u, float *scale, float *min) {
  *scale = halfToFloat(block);
  *min = halfToFloat(block + 2);
  for (int j = 0; j < 16; j++) {
    u[j] = block[4 + j] & 15;
    u[j + 16] = block[4 + j] >> 4;
  }
}

/// A Q4_K super-block (ggml-common.h's block_q4_K: float16 d, float16
/// dmin, uint8 scales[12], uint8 qs[128]) as its 256 values u and its 8
/// sub-blocks' scale d · sc and minimum -dmin · m: x = u · scale + min.
/// Sub-block j's 6-bit sc and m: for j < 4 the low 6 bits of scales[j] and
/// scales[j + 4]; for j >= 4 the low and high nibbles of scales[j + 4],
/// with the top 2 bits of scales[j - 4] and scales[j] as their bits 4-5.
/// Values 64c + l (l < 32) are the low nibbles of qs[32c + l], sub-block
/// 2c; values 64c + 32 + l their high nibbles, sub-block 2c + 1.
void q4_KBlock(const uint8_t *block, uint8_t *u, float *scales,
               float *mins) {
  const float d = halfToFloat(block), dmin = halfToFloat(block + 2);
  const uint8_t *packed = block + 4, *qs = block + 16;
  for (int j = 0; j < 8; j++) {
    const int sc = j < 4 ? packed[j] & 63
                         : (packed[j + 4] & 15) | ((packed[j - 4] >> 6) << 4);
    const int m = j < 4 ? packed[j + 4] & 63
                        : (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
    scales[j] = d * float(sc);
    mins[j] = -(dmin * float(m));
  }
  for (int c = 0; c < 4; c++)
    for (int l = 0; l < 32; l++) {
      u[64 * c + l] = qs[32 * c + l] & 15;
      u[64 * c + 32 + l] = qs[32 * c + l] >> 4;
    }
}

/// A Q6_K super-block (ggml-common.h's block_q6_K: uint8 ql[128], uint8
/// qh[64], int8 scales[16], float16 d) as its 256 values q - 32 and its 16
/// sub-blocks' d · scale. In each half h of 128 values, value 128h + 32t +
/// l (t < 4, l < 32) takes its low 4 bits from ql[64h + 32(t % 2) + l]
/// (the low nibble for t < 2, else the high one) and its high 2 from bits
/// 2t and 2t + 1 of qh[32h + l]; sub-block j is values 16j .. 16j + 15.
void q6_KBlock(const uint8_t *block, int8_t *q, float *scales) {
  const uint8_t *ql = block, *qh = block + 128;
  const float d = halfToFloat(block + 208);
  for (int j = 0; j < 16; j++)
    scales[j] = d * float(int8_t(block[192 + j]));
  for (int h = 0; h < 2; h++)
    for (int t = 0; t < 4; t++)
      for (int l = 0; l < 32; l++) {
        const uint8_t low = ql[64 * h + 32 * (t % 2) + l];
        const int bits = (t < 2 ? low & 15 : low >> 4) |
                         (((qh[32 * h + l] >> (2 * t)) & 3) << 4);
        q[128 * h + 32 * t + l] = int8_t(bits - 32);
      }
}

/// A Q5_0 block (ggml-common.h's block_q5_0: float16 d, uint8 qh[4],
/// uint8 qs[16]) as its 32 values q - 16 and its scale d: value j < 16
/// takes its low 4 bits from the low nibble of qs[j], value j + 16 from its
/// high nibble, and each value j its bit 4 from bit j of qh (little-endian).
void q5_0Block(const uint8_t *block, int8_t *q, float *scale) {
  *scale = halfToFloat(block);
  uint32_t high;
  std::memcpy(&high, block + 2, 4);
  for (int j = 0; j < 16; j++) {
    q[j] = int8_t(((block[6 + j] & 15) | (((high >> j) & 1) << 4)) - 16);
    q[j + 16] =
        int8_t(((block[6 + j] >> 4) | (((high >> (j + 16)) & 1) << 4)) - 16);
  }
}

/// The types attnc runs, in the order messages name them.
constexpr GgmlType kReadable[] = {
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16,
    GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q5_0,
    GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q4_K};
} // namespace

bool ggmlReadable(GgmlType type) {
  return std::find(std::begin(kReadable), std::end(kReadable), type) !=
         std::end(kReadable);
}

std::string ggmlReadableNames() {
  std::string names;
  for (GgmlType type : kReadable) {
    if (!names.empty())
      names += type == std::end(kReadable)[-1] ? " and " : ", ";
    names += name(type);
  }
  return names;
}

int ggmlInt8Group(GgmlType type) {
  switch (type) {
  case GgmlType::Q8_0:
  case GgmlType::Q5_0:
    return 32;
  case GgmlType::Q6_K:
    return 16;
  default:
    return 0;
  }
}

size_t storedBytes(GgmlType type, int64_t values) {
  const GgmlTypeInfo &info = *ggmlTypeInfo(uint32_t(type));
  return size_t(values / info.blockElements * info.blockBytes);
}

namespace {
/// `values` values of an int8-group type (ggmlInt8Group) at `data` as
/// they are stored: q [values] and one scale per group.
void int8Blocks(GgmlType type, const uint8_t *data, int64_t values, int8_t *q,
                float *scales) {
  switch (type) {
  case GgmlType::Q8_0: // float16 d, int8 q[32]: d · q
    for (int64_t b = 0; b < values / 32; b++) {
      const uint8_t *block = data + b * 34;
      scales[b] = halfToFloat(block);
      std::memcpy(q + b * 32, block + 2, 32);
    }
    return;
  case GgmlType::Q5_0:
    for (int64_t b = 0; b < values / 32; b++)
      q5_0Block(data + b * 22, q + b * 32, scales + b);
    return;
  case GgmlType::Q6_K:
    for (int64_t b = 0; b < values / 256; b++)
      q6_KBlock(data + b * 210, q + b * 256, scales + b * 16);
    return;
  default:
    std::fill_n(q, values, int8_t(0)); // not ggmlInt8Group: callers refuse
  }
}
} // namespace

void decodeValues(GgmlType type, const uint8_t *data, int64_t values,
                  float *out) {
  switch (type) {
  case GgmlType::F32:
    std::memcpy(out, data, size_t(values) * 4);
    return;
  case GgmlType::F16:
  case GgmlType::BF16: {
    // DType.h's conversions read uint16 elements: copied first where
    // `data` is not 2-aligned.
    const DType element = type == GgmlType::F16 ? DType::F16 : DType::BF16;
    if (reinterpret_cast<uintptr_t>(data) % 2 == 0) {
      decode(element, data, out, size_t(values));
      return;
    }
    std::vector<uint16_t> bits(static_cast<size_t>(values));
    std::memcpy(bits.data(), data, size_t(values) * 2);
    decode(element, bits.data(), out, size_t(values));
    return;
  }
  case GgmlType::Q8_0:
  case GgmlType::Q5_0:
  case GgmlType::Q6_K: {
    // q · scale per group (int8Blocks), a block at a time.
    const int group = ggmlInt8Group(type);
    const int64_t block = type == GgmlType::Q6_K ? 256 : 32;
    const size_t bytes = storedBytes(type, block);
    int8_t q[256];
    float scales[16];
    for (int64_t b = 0; b < values / block; b++) {
      int8Blocks(type, data + b * bytes, block, q, scales);
      for (int64_t j = 0; j < block; j++)
        out[b * block + j] = scales[j / group] * float(q[j]);
    }
    return;
  }
  case GgmlType::Q4_0:
    // float16 d, uint8 qs[16]: value j in the low nibble of byte j, value
    // j + 16 in its high nibble; (q - 8) · d.
    for (int64_t b = 0; b < values / 32; b++) {
      const uint8_t *block = data + b * 18;
      const float d = halfToFloat(block);
      for (int j = 0; j < 16; j++) {
        out[b * 32 + j] = float(int(block[2 + j] & 15) - 8) * d;
        out[b * 32 + j + 16] = float(int(block[2 + j] >> 4) - 8) * d;
      }
    }
    return;
  case GgmlType::Q4_1:
  case GgmlType::Q4_K: {
    // u · s + m per group of 32 (q4_1Block, q4_KBlock).
    const bool k = type == GgmlType::Q4_K;
    const int64_t block = k ? 256 : 32, bytes = k ? 144 : 20;
    std::vector<uint8_t> u(static_cast<size_t>(block));
    float scales[8], mins[8];
    for (int64_t b = 0; b < values / block; b++) {
      if (k)
        q4_KBlock(data + b * bytes, u.data(), scales, mins);
      else
        q4_1Block(data + b * bytes, u.data(), scales, mins);
      for (int64_t j = 0; j < block; j++)
        out[b * block + j] = float(u[size_t(j)]) * scales[j / 32] + mins[j / 32];
    }
    return;
  }
  default:
    std::fill_n(out, values, 0.0f); // not ggmlReadable: callers refuse
  }
}

void readRows(const GgufTensor &tensor, int64_t first, int64_t count,
              float *out) {
  const int64_t columns = tensor.dims[0];
  decodeValues(tensor.type,
               tensor.data + first * storedBytes(tensor.type, columns),
               count * columns, out);
}

void readQ4_0Rows(const GgufTensor &tensor, int64_t first, int64_t count,
                  uint8_t *u, float *scales) {
  const int64_t blocks = count * tensor.dims[0] / 32;
  const uint8_t *row =
      tensor.data + first * storedBytes(GgmlType::Q4_0, tensor.dims[0]);
  for (int64_t b = 0; b < blocks; b++) { // the layout: decodeValues
    const uint8_t *block = row + b * 18;
    scales[b] = halfToFloat(block);
    for (int j = 0; j < 16; j++) {
      u[b * 32 + j] = block[2 + j] & 15;
      u[b * 32 + j + 16] = block[2 + j] >> 4;
    }
  }
}

void readInt8Rows(const GgufTensor &tensor, int64_t first, int64_t count,
                  int8_t *q, float *scales) {
  const int64_t columns = tensor.dims[0];
  int8Blocks(tensor.type,
             tensor.data + first * storedBytes(tensor.type, columns),
             count * columns, q, scales);
}

void readQ4MinRows(const GgufTensor &tensor, int64_t first, int64_t count,
                   uint8_t *u, float *scales, float *mins) {
  const bool k = tensor.type == GgmlType::Q4_K;
  const int64_t block = k ? 256 : 32, bytes = k ? 144 : 20;
  const int64_t blocks = count * tensor.dims[0] / block;
  const uint8_t *row =
      tensor.data + first * storedBytes(tensor.type, tensor.dims[0]);
  for (int64_t b = 0; b < blocks; b++) {
    const int64_t groups = block / 32;
    if (k)
      q4_KBlock(row + b * bytes, u + b * block, scales + b * groups,
                mins + b * groups);
    else
      q4_1Block(row + b * bytes, u + b * block, scales + b, mins + b);
  }
}

GgufFile::GgufFile(GgufFile &&other) noexcept { *this = std::move(other); }

GgufFile &GgufFile::operator=(GgufFile &&other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    header_ = other.header_;
    mapping_ = other.mapping_;
    mappedBytes_ = other.mappedBytes_;
    version_ = other.version_;
    alignment_ = other.alignment_;
    metadata_ = std::move(other.metadata_);
    keyIndex_ = std::move(other.keyIndex_);
    tensors_ = std::move(other.tensors_);
    tensorIndex_ = std::move(other.tensorIndex_);
    other.mapping_ = nullptr;
    other.mappedBytes_ = 0;
  }
  return *this;
}

GgufFile::~GgufFile() { unmap(); }

void GgufFile::unmap() {
  if (mapping_)
    munmap(mapping_, mappedBytes_);
  mapping_ = nullptr;
  mappedBytes_ = 0;
}

bool GgufFile::hasMagic(std::string_view bytes) {
  return bytes.substr(0, 4) == "GGUF";
}

Status GgufFile::open(const std::string &path, GgufFile &file) {
  file = GgufFile();
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0)
    return Status(StatusCode::NotFound, path + ": cannot open the file");
  struct stat info;
  if (fstat(descriptor, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(descriptor);
    return Status(StatusCode::IoError, path + ": not a regular file");
  }
  const size_t size = size_t(info.st_size);
  void *mapping = nullptr;
  if (size > 0) {
    mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, descriptor, 0);
    if (mapping == MAP_FAILED) {
      ::close(descriptor);
      return Status(StatusCode::IoError, path + ": cannot map the file");
    }
  }
  ::close(descriptor);
  GgufFile parsed;
  if (Status status = parse(mapping, size, path, parsed); !status) {
    if (mapping)
      munmap(mapping, size);
    return status;
  }
  parsed.mapping_ = mapping;
  parsed.mappedBytes_ = size;
  file = std::move(parsed);
  return Status::ok();
}

Status GgufFile::parse(const void *data, size_t size, const std::string &path,
                       GgufFile &file) {
  file = GgufFile();
  GgufFile result;
  result.path_ = path;
  const auto *bytes = static_cast<const uint8_t *>(data);
  Cursor cursor(bytes, size, result.path_);
  if (size < 4 || !hasMagic({reinterpret_cast<const char *>(bytes), 4}))
    return cursor.error("not a GGUF file (it does not start with \"GGUF\")",
                        0);
  if (Status status = cursor.skipTo(4); !status)
    return status;
  if (Status status = cursor.read(result.version_, "the header"); !status)
    return status;
  if (result.version_ < kMinVersion || result.version_ > kMaxVersion)
    return cursor.error("GGUF version " + std::to_string(result.version_) +
                            " (attnc reads versions 2 and 3)",
                        4);
  uint64_t tensorCount, metadataCount;
  if (Status status = cursor.read(tensorCount, "the header"); !status)
    return status;
  if (Status status = cursor.read(metadataCount, "the header"); !status)
    return status;
  // A key takes at least 12 bytes (length, type) and a tensor info 24.
  if (metadataCount > cursor.left() / 12)
    return cursor.error("a metadata count of " + std::to_string(metadataCount) +
                            " that the file cannot hold",
                        16);
  if (tensorCount > cursor.left() / 24)
    return cursor.error("a tensor count of " + std::to_string(tensorCount) +
                            " that the file cannot hold",
                        8);

  result.metadata_.reserve(size_t(metadataCount));
  for (uint64_t k = 0; k < metadataCount; k++) {
    const size_t at = cursor.offset();
    std::string key;
    if (Status status = cursor.readString(key, "a metadata key"); !status)
      return status;
    if (result.keyIndex_.count(key))
      return cursor.error("metadata key '" + key + "' appears twice", at);
    uint32_t type;
    const size_t typeAt = cursor.offset();
    if (Status status = cursor.read(type, "a metadata value type"); !status)
      return status;
    if (!validValueType(type))
      return cursor.error("metadata '" + key + "': unknown value type " +
                              std::to_string(type),
                          typeAt);
    GgufValue value;
    if (Status status = readValue(cursor, GgufValueType(type), value, key, 0);
        !status)
      return status;
    result.keyIndex_[key] = result.metadata_.size();
    result.metadata_.emplace_back(std::move(key), std::move(value));
  }
  if (const GgufValue *alignment = result.find("general.alignment")) {
    if (!alignment->isInteger() || alignment->integer <= 0 ||
        (alignment->integer & (alignment->integer - 1)) != 0 ||
        alignment->integer > (1 << 20))
      return cursor.error("metadata 'general.alignment' must be a power of "
                          "two of at most 1 MiB",
                          0);
    result.alignment_ = uint64_t(alignment->integer);
  }

  result.tensors_.resize(size_t(tensorCount));
  for (GgufTensor &tensor : result.tensors_) {
    const size_t at = cursor.offset();
    if (Status status = cursor.readString(tensor.name, "a tensor name");
        !status)
      return status;
    auto tensorError = [&](const std::string &message) {
      return cursor.error("tensor '" + tensor.name + "': " + message, at);
    };
    if (result.tensorIndex_.count(tensor.name))
      return tensorError("the name appears twice");
    uint32_t dimensions;
    if (Status status = cursor.read(dimensions, "a tensor info"); !status)
      return status;
    if (dimensions < 1 || dimensions > kMaxDimensions)
      return tensorError(std::to_string(dimensions) +
                         " dimensions (1 to 4)");
    uint64_t elements = 1;
    for (uint32_t i = 0; i < dimensions; i++) {
      uint64_t dim;
      if (Status status = cursor.read(dim, "a tensor info"); !status)
        return status;
      if (dim == 0 || dim > uint64_t(std::numeric_limits<int64_t>::max()) ||
          multiplyOverflows(elements, dim, elements) ||
          elements > uint64_t(std::numeric_limits<int64_t>::max()))
        return tensorError("dimension " + std::to_string(i) + " of " +
                           std::to_string(dim) + " is empty or too large");
      tensor.dims.push_back(int64_t(dim));
    }
    uint32_t type;
    if (Status status = cursor.read(type, "a tensor info"); !status)
      return status;
    const GgmlTypeInfo *info = ggmlTypeInfo(type);
    if (!info)
      return tensorError("unknown ggml type " + std::to_string(type));
    tensor.type = info->type;
    if (tensor.dims[0] % info->blockElements != 0)
      return tensorError("rows of " + std::to_string(tensor.dims[0]) + " " +
                         info->name + " values are not whole blocks of " +
                         std::to_string(info->blockElements));
    uint64_t bytes;
    if (multiplyOverflows(elements / uint64_t(info->blockElements),
                          uint64_t(info->blockBytes), bytes) ||
        bytes > size)
      return tensorError("its " + std::to_string(elements) + " " + info->name +
                         " values take more bytes than the file has");
    tensor.bytes = size_t(bytes);
    if (Status status = cursor.read(tensor.offset, "a tensor info"); !status)
      return status;
    if (tensor.offset % result.alignment_ != 0)
      return tensorError("offset " + std::to_string(tensor.offset) +
                         " is not a multiple of the alignment " +
                         std::to_string(result.alignment_));
    result.tensorIndex_[tensor.name] =
        size_t(&tensor - result.tensors_.data());
  }

  // The data section: after the infos, at the next multiple of the
  // alignment.
  const uint64_t infoEnd = cursor.offset(),
                 dataStart = (infoEnd + result.alignment_ - 1) /
                             result.alignment_ * result.alignment_;
  if (result.tensors_.empty())
    ; // metadata only (a vocabulary file): the padding may be absent
  else if (dataStart > size)
    return cursor.error("the file ends before its tensor data (at byte " +
                        std::to_string(dataStart) + ")");
  const uint64_t dataBytes = size - std::min<uint64_t>(dataStart, size);
  result.header_ = {reinterpret_cast<const char *>(bytes),
                    size_t(std::min<uint64_t>(dataStart, size))};
  std::vector<const GgufTensor *> byOffset;
  for (GgufTensor &tensor : result.tensors_) {
    if (tensor.offset > dataBytes || tensor.bytes > dataBytes - tensor.offset)
      return cursor.error("tensor '" + tensor.name + "': its data (" +
                              std::to_string(tensor.bytes) +
                              " bytes at offset " +
                              std::to_string(tensor.offset) +
                              ") runs past the end of the file",
                          infoEnd);
    tensor.data = bytes + dataStart + tensor.offset;
    byOffset.push_back(&tensor);
  }
  std::stable_sort(byOffset.begin(), byOffset.end(),
            [](const GgufTensor *a, const GgufTensor *b) {
              return a->offset < b->offset;
            });
  for (size_t i = 1; i < byOffset.size(); i++)
    if (byOffset[i - 1]->offset + byOffset[i - 1]->bytes >
        byOffset[i]->offset)
      return cursor.error("tensors '" + byOffset[i - 1]->name + "' and '" +
                              byOffset[i]->name + "' overlap",
                          infoEnd);
  file = std::move(result);
  return Status::ok();
}

const GgufValue *GgufFile::find(const std::string &key) const {
  auto it = keyIndex_.find(key);
  return it == keyIndex_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensor *GgufFile::tensor(const std::string &name) const {
  auto it = tensorIndex_.find(name);
  return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

size_t GgufFile::tensorBytes() const {
  size_t total = 0;
  for (const GgufTensor &tensor : tensors_)
    total += tensor.bytes;
  return total;
}

namespace {
Status missing(const GgufFile &file, const std::string &key) {
  return Status(StatusCode::NotFound,
                file.path() + ": metadata '" + key + "' is missing");
}
Status mistyped(const GgufFile &file, const std::string &key,
                const GgufValue &value, const char *expected) {
  return Status(StatusCode::InvalidArgument,
                file.path() + ": metadata '" + key + "' is " +
                    (value.type == GgufValueType::Array
                         ? std::string("an array of ") + name(value.elementType)
                         : std::string("a ") + name(value.type)) +
                    "; expected " + expected);
}
} // namespace

Status GgufFile::getInteger(const std::string &key, int64_t &value) const {
  const GgufValue *found = find(key);
  if (!found)
    return missing(*this, key);
  if (!found->isInteger())
    return mistyped(*this, key, *found, "an integer");
  if (found->type == GgufValueType::U64 &&
      found->unsignedInteger > uint64_t(std::numeric_limits<int64_t>::max()))
    return Status(StatusCode::InvalidArgument,
                  path_ + ": metadata '" + key + "' of " +
                      std::to_string(found->unsignedInteger) +
                      " is out of range");
  value = found->integer;
  return Status::ok();
}

Status GgufFile::getReal(const std::string &key, double &value) const {
  const GgufValue *found = find(key);
  if (!found)
    return missing(*this, key);
  if (!found->isReal())
    return mistyped(*this, key, *found, "a float");
  value = found->real;
  return Status::ok();
}

Status GgufFile::getBool(const std::string &key, bool &value) const {
  const GgufValue *found = find(key);
  if (!found)
    return missing(*this, key);
  if (found->type != GgufValueType::Bool)
    return mistyped(*this, key, *found, "a bool");
  value = found->boolean;
  return Status::ok();
}

Status GgufFile::getString(const std::string &key, std::string &value) const {
  const GgufValue *found = find(key);
  if (!found)
    return missing(*this, key);
  if (found->type != GgufValueType::String)
    return mistyped(*this, key, *found, "a string");
  value = found->string;
  return Status::ok();
}

Status GgufFile::getArray(const std::string &key, GgufValueType element,
                          const std::vector<GgufValue> *&items) const {
  const GgufValue *found = find(key);
  if (!found)
    return missing(*this, key);
  GgufValue probe;
  probe.type = found->elementType;
  probe.elementType = found->elementType;
  GgufValue wanted;
  wanted.type = element;
  const bool matches =
      found->type == GgufValueType::Array &&
      (found->elementType == element ||
       (wanted.isInteger() && probe.isInteger()) ||
       (wanted.isReal() && probe.isReal()));
  if (!matches)
    return mistyped(*this, key, *found,
                    (std::string("an array of ") + name(element)).c_str());
  items = &found->items;
  return Status::ok();
}

} // namespace attn::runtime
