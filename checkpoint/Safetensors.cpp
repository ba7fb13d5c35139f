//===- Safetensors.cpp - memory-mapped, validated weight files ------------===//

#include "attn/runtime/Safetensors.h"

#include "attn/runtime/DType.h"
#include "attn/runtime/Gguf.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::runtime {

namespace {
/// Headers beyond this are not weight files (the format's own limit).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct TypeInfo {
  const char *name;
  TensorType type;
  size_t bytes;
};
constexpr TypeInfo kTypes[] = {
    {"F64", TensorType::F64, 8}, {"F32", TensorType::F32, 4},
    {"F16", TensorType::F16, 2}, {"BF16", TensorType::BF16, 2},
    {"I64", TensorType::I64, 8}, {"I32", TensorType::I32, 4},
    {"I16", TensorType::I16, 2}, {"I8", TensorType::I8, 1},
    {"U8", TensorType::U8, 1},   {"BOOL", TensorType::Bool, 1}};

/// GGUF's block types that attnc reads, as ggml numbers them.
constexpr std::pair<TensorType, GgmlType> kBlockTypes[] = {
    {TensorType::Q8_0, GgmlType::Q8_0}, {TensorType::Q6_K, GgmlType::Q6_K},
    {TensorType::Q5_0, GgmlType::Q5_0}, {TensorType::Q4_0, GgmlType::Q4_0},
    {TensorType::Q4_1, GgmlType::Q4_1}, {TensorType::Q4_K, GgmlType::Q4_K}};

/// A block type's ggml number; none for safetensors' types.
std::optional<GgmlType> blockType(TensorType type) {
  for (const auto &[tensor, block] : kBlockTypes)
    if (tensor == type)
      return block;
  return std::nullopt;
}

Status invalid(const std::string &path, const std::string &message) {
  return Status(StatusCode::InvalidArgument, path + ": " + message);
}
} // namespace

std::string describeShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); i++)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

const char *name(TensorType type) {
  if (std::optional<GgmlType> block = blockType(type))
    return runtime::name(*block);
  for (const TypeInfo &info : kTypes)
    if (info.type == type)
      return info.name;
  return "?";
}

std::optional<TensorType> tensorTypeOf(GgmlType type) {
  switch (type) {
  case GgmlType::F32:
    return TensorType::F32;
  case GgmlType::F16:
    return TensorType::F16;
  case GgmlType::BF16:
    return TensorType::BF16;
  default:
    for (const auto &[tensor, block] : kBlockTypes)
      if (block == type)
        return tensor;
    return std::nullopt;
  }
}

size_t byteSize(TensorType type) {
  for (const TypeInfo &info : kTypes)
    if (info.type == type)
      return info.bytes;
  return 0;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile &&other) noexcept {
  *this = std::move(other);
}

SafetensorsFile &SafetensorsFile::operator=(SafetensorsFile &&other) noexcept {
  if (this != &other) {
    unmap();
    mapping_ = other.mapping_;
    size_ = other.size_;
    headerBytes_ = other.headerBytes_;
    tensors_ = std::move(other.tensors_);
    metadata_ = std::move(other.metadata_);
    other.mapping_ = nullptr;
    other.size_ = 0;
    other.headerBytes_ = 0;
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { unmap(); }

void SafetensorsFile::unmap() {
  if (mapping_)
    munmap(mapping_, size_);
  mapping_ = nullptr;
  size_ = 0;
  headerBytes_ = 0;
  tensors_.clear();
  metadata_.clear();
}

const TensorView *SafetensorsFile::find(const std::string &name) const {
  for (const TensorView &tensor : tensors_)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

Status SafetensorsFile::open(const std::string &path, SafetensorsFile &file) {
  file.unmap();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status(StatusCode::IoError,
                  path + ": cannot open: " + std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0) {
    ::close(fd);
    return Status(StatusCode::IoError, path + ": cannot stat");
  }
  size_t size = size_t(info.st_size);
  if (size < 8) {
    ::close(fd);
    return invalid(path, "truncated: " + std::to_string(size) +
                             " bytes, shorter than the 8-byte header length");
  }
  void *mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED)
    return Status(StatusCode::IoError, path + ": cannot map the file");
  SafetensorsFile parsed;
  parsed.mapping_ = mapping;
  parsed.size_ = size;

  const auto *bytes = static_cast<const uint8_t *>(mapping);
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; i--) // little-endian, whatever the host
    headerBytes = headerBytes << 8 | bytes[i];
  if (headerBytes > kMaxHeaderBytes || headerBytes > size - 8)
    return invalid(path, "header length " + std::to_string(headerBytes) +
                             " exceeds the file (" + std::to_string(size) +
                             " bytes) or the 100 MiB limit");
  parsed.headerBytes_ = size_t(8 + headerBytes);
  const char *headerText = reinterpret_cast<const char *>(bytes + 8);
  nlohmann::json header =
      nlohmann::json::parse(headerText, headerText + headerBytes, nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return invalid(path, "the header is not a JSON object");

  const uint8_t *data = bytes + 8 + headerBytes;
  const uint64_t dataBytes = size - 8 - headerBytes;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto &[key, entry] : header.items()) {
    if (key == "__metadata__") {
      if (!entry.is_object())
        return invalid(path, "__metadata__ must be an object of strings");
      for (auto &[metaKey, value] : entry.items()) {
        if (!value.is_string())
          return invalid(path, "__metadata__." + metaKey + " is not a string");
        parsed.metadata_[metaKey] = value.get<std::string>();
      }
      continue;
    }
    const std::string &name = key; // (a lambda cannot capture a binding)
    auto bad = [&](const std::string &what) {
      return invalid(path, "tensor '" + name + "': " + what);
    };
    if (!entry.is_object() || !entry.contains("dtype") ||
        !entry.contains("shape") || !entry.contains("data_offsets"))
      return bad("needs dtype, shape and data_offsets");
    TensorView tensor;
    tensor.name = key;
    const TypeInfo *type = nullptr;
    if (entry["dtype"].is_string())
      for (const TypeInfo &info : kTypes)
        if (entry["dtype"].get<std::string>() == info.name)
          type = &info;
    if (!type)
      return bad("unsupported dtype " + entry["dtype"].dump());
    tensor.type = type->type;
    uint64_t elements = 1;
    if (!entry["shape"].is_array())
      return bad("shape must be an array");
    for (const nlohmann::json &extent : entry["shape"]) {
      if (!extent.is_number_unsigned() || extent.get<uint64_t>() > (1ull << 40))
        return bad("shape must hold non-negative integers");
      tensor.shape.push_back(int64_t(extent.get<uint64_t>()));
      elements *= extent.get<uint64_t>();
      if (elements > (1ull << 48))
        return bad("shape is too large");
    }
    const nlohmann::json &offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 ||
        !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      return bad("data_offsets must be [begin, end]");
    uint64_t begin = offsets[0].get<uint64_t>(),
             end = offsets[1].get<uint64_t>();
    if (begin > end || end > dataBytes)
      return bad("data_offsets [" + std::to_string(begin) + ", " +
                 std::to_string(end) + ") outside the " +
                 std::to_string(dataBytes) + " data bytes (truncated file?)");
    if (end - begin != elements * type->bytes)
      return bad("holds " + std::to_string(end - begin) + " bytes, but " +
                 type->name + " " + describeShape(tensor.shape) + " needs " +
                 std::to_string(elements * type->bytes));
    tensor.data = data + begin;
    tensor.bytes = end - begin;
    ranges.emplace_back(begin, end);
    parsed.tensors_.push_back(std::move(tensor));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); i++)
    if (ranges[i].first < ranges[i - 1].second)
      return invalid(path, "two tensors overlap at data offset " +
                               std::to_string(ranges[i].first));
  file = std::move(parsed);
  return Status::ok();
}

size_t storedBytes(TensorType type, int64_t elements) {
  if (std::optional<GgmlType> block = blockType(type))
    return runtime::storedBytes(*block, elements);
  return size_t(elements) * byteSize(type);
}

size_t elementCount(const TensorView &tensor) {
  if (std::optional<GgmlType> block = blockType(tensor.type)) {
    const GgmlTypeInfo &info = *ggmlTypeInfo(uint32_t(*block));
    return tensor.bytes / size_t(info.blockBytes) * size_t(info.blockElements);
  }
  return tensor.bytes / byteSize(tensor.type);
}

bool readableAs(TensorType stored, TensorType expected) {
  return stored == expected ||
         (expected == TensorType::F32 &&
          (stored == TensorType::F16 || stored == TensorType::BF16 ||
           blockType(stored)));
}

std::vector<float> readFloats(const TensorView &tensor) {
  if (!readableAs(tensor.type, TensorType::F32))
    return {}; // callers check readableAs first
  std::vector<float> values(elementCount(tensor));
  readFloats(tensor, values.data());
  return values;
}

void readFloats(const TensorView &tensor, float *destination) {
  const size_t count = elementCount(tensor);
  if (std::optional<GgmlType> block = blockType(tensor.type)) {
    decodeValues(*block,
                 static_cast<const uint8_t *>(tensor.data), int64_t(count),
                 destination);
    return;
  }
  if (tensor.type == TensorType::F32) { // no alignment promised: copied
    std::memcpy(destination, tensor.data, tensor.bytes);
    return;
  }
  if (tensor.type != TensorType::F16 && tensor.type != TensorType::BF16)
    return;
  // decode() reads uint16 elements; the view may be unaligned: a block at
  // a time through an aligned copy.
  const DType type = tensor.type == TensorType::F16 ? DType::F16 : DType::BF16;
  uint16_t bits[4096];
  const auto *bytes = static_cast<const uint8_t *>(tensor.data);
  for (size_t done = 0; done < count; done += 4096) {
    const size_t n = std::min<size_t>(4096, count - done);
    std::memcpy(bits, bytes + 2 * done, 2 * n);
    decode(type, bits, destination + done, n);
  }
}

Status writeSafetensors(const std::string &path,
                        const std::vector<ExpectedTensor> &tensors,
                        const std::vector<const float *> &data) {
  if (tensors.size() != data.size())
    return Status(StatusCode::InvalidArgument,
                  "writeSafetensors: one data pointer per tensor");
  nlohmann::json header = nlohmann::json::object();
  size_t offset = 0;
  std::vector<size_t> bytes;
  for (const ExpectedTensor &tensor : tensors) {
    if (tensor.type != TensorType::F32 && tensor.type != TensorType::F16 &&
        tensor.type != TensorType::BF16)
      return Status(StatusCode::InvalidArgument,
                    "writeSafetensors: " + tensor.name +
                        " is not F32, F16 or BF16");
    size_t count = 1;
    for (int64_t extent : tensor.shape)
      count *= size_t(extent);
    bytes.push_back(count * byteSize(tensor.type));
    header[tensor.name] = {{"dtype", name(tensor.type)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes.back()}}};
    offset += bytes.back();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // 8-byte aligned data
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return Status(StatusCode::IoError, "cannot write " + path);
  uint64_t length = text.size(); // little-endian hosts only, as mmap reads
  bool ok = std::fwrite(&length, 8, 1, file) == 1 &&
            std::fwrite(text.data(), 1, text.size(), file) == text.size();
  std::vector<uint16_t> narrow;
  for (size_t i = 0; ok && i < tensors.size(); i++) {
    const void *stored = data[i];
    if (tensors[i].type != TensorType::F32) {
      narrow.resize(bytes[i] / 2);
      encode(tensors[i].type == TensorType::F16 ? DType::F16 : DType::BF16,
             data[i], narrow.data(), narrow.size());
      stored = narrow.data();
    }
    ok = std::fwrite(stored, 1, bytes[i], file) == bytes[i];
  }
  ok = std::fclose(file) == 0 && ok;
  return ok ? Status::ok()
            : Status(StatusCode::IoError, "cannot write " + path);
}

} // namespace attn::runtime
