//===- Safetensors.h - memory-mapped, validated weight files ----*- C++ -*-===//
//
// A .safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}), then the tensor bytes. open() maps the file and
// validates all of it before anything is used: header bounds, JSON, dtypes,
// shapes, offsets inside the data and consistent with shape x dtype, no two
// tensors overlapping. checkTensors() then compares the contents with what a
// model expects and names every missing, extra, mistyped or misshaped tensor.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_SAFETENSORS_H
#define ATTN_RUNTIME_SAFETENSORS_H

#include "attn/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace attn::runtime {

enum class GgmlType : uint32_t; // Gguf.h

/// Element types of checkpoint tensors: safetensors' dtypes, and GGUF's
/// block types that attnc reads (Gguf.h: blocks of 32 or 256 values with
/// float16 scales), which readFloats decodes.
enum class TensorType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool, Q8_0, Q4_0, Q6_K, Q4_1,
                        Q4_K, Q5_0 };

const char *name(TensorType type);
/// The TensorType of a GGUF tensor type that attnc reads (ggmlReadable);
/// none for any other.
std::optional<TensorType> tensorTypeOf(GgmlType type);
/// Bytes an element (0 for block types: storedBytes).
size_t byteSize(TensorType type);
/// Bytes `elements` elements take (whole blocks for block types).
size_t storedBytes(TensorType type, int64_t elements);
/// "[2, 3]": a shape in messages.
std::string describeShape(const std::vector<int64_t> &shape);

/// One tensor inside a mapped file; `data` points into the mapping. The
/// format guarantees no alignment (writers usually pad the header to 8
/// bytes): copy out with memcpy, or check the address before casting.
struct TensorView {
  std::string name;
  TensorType type;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  size_t bytes = 0;
};

class SafetensorsFile {
public:
  SafetensorsFile() = default;
  SafetensorsFile(SafetensorsFile &&other) noexcept;
  SafetensorsFile &operator=(SafetensorsFile &&other) noexcept;
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;
  ~SafetensorsFile();

  /// Maps and validates `path`; on failure `file` is left empty and the
  /// status says what is wrong, and where.
  static Status open(const std::string &path, SafetensorsFile &file);

  /// Tensors in file order; null when `name` is absent.
  const std::vector<TensorView> &tensors() const { return tensors_; }
  const TensorView *find(const std::string &name) const;
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// The file's first bytes: the header's length and its JSON (what names,
  /// types, shapes and offsets the tensors have).
  std::string_view header() const {
    return {static_cast<const char *>(mapping_), headerBytes_};
  }

private:
  void unmap();

  void *mapping_ = nullptr;
  size_t size_ = 0;
  size_t headerBytes_ = 0; // 8 + the JSON's length
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// What a model needs from a weight file.
struct ExpectedTensor {
  std::string name;
  TensorType type;
  std::vector<int64_t> shape;
};

/// Writes tensors as a safetensors file (exporting weights, making random
/// ones): `data[i]` holds the product of `tensors[i].shape` floats, stored
/// as `tensors[i].type` (F32, or F16 / BF16 rounded to nearest even).
Status writeSafetensors(const std::string &path,
                        const std::vector<ExpectedTensor> &tensors,
                        const std::vector<const float *> &data);

/// Whether a tensor stored as `stored` can stand where a model expects
/// `expected`: the same type, or a 16-bit float or a block type where F32
/// is expected (each of their values is exactly a float).
bool readableAs(TensorType stored, TensorType expected);

/// The elements a tensor (or a slice of one) holds.
size_t elementCount(const TensorView &tensor);
/// A F32, F16, BF16 or GGUF block type's tensor's elements as floats (as
/// ggml computes them: exact but for Q6_K's d · scale · q and Q4_1/Q4_K's
/// u · scale + min, rounded once).
std::vector<float> readFloats(const TensorView &tensor);
/// The same into `destination` (elementCount(tensor) floats).
void readFloats(const TensorView &tensor, float *destination);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_SAFETENSORS_H
