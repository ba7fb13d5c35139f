//===- DType.h - storage element types of KV caches -------------*- C++ -*-===//

#ifndef ATTN_RUNTIME_DTYPE_H
#define ATTN_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace attn::runtime {

/// How a cache stores its elements; kernels accumulate in fp32 whatever it is.
/// I8: symmetric int8 with one fp32 scale per (token, head) row, the row's
/// largest magnitude / 127 (the cache keeps the scales beside the pages).
enum class DType { F32, F16, BF16, I8 };

inline size_t byteSize(DType type) {
  return type == DType::F32 ? 4 : type == DType::I8 ? 1 : 2;
}
/// Bytes of scale per (token, head) row: 4 for I8, else 0.
inline size_t scaleBytes(DType type) { return type == DType::I8 ? 4 : 0; }
/// "f32", "f16", "bf16", "i8": MLIR's spelling, which plans use.
const char *name(DType type);
/// The inverse of name(); false (and `type` unchanged) for anything else.
bool parseDType(const std::string &text, DType &type);

/// Converts `count` floats into `type` (round to nearest even) and back.
/// Not for I8, whose rows carry a scale: see quantizeRow.
void encode(DType type, const float *source, void *destination, size_t count);
void decode(DType type, const void *source, float *destination, size_t count);

/// One int8 row: q = round(x / scale) with scale = max|x| / 127 (0 for an
/// all-zero row), so every q is in [-127, 127] and |x - q·scale| <=
/// scale / 2. Returns the scale.
float quantizeRow(const float *source, int8_t *destination, size_t count);
void dequantizeRow(const int8_t *source, float scale, float *destination,
                   size_t count);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_DTYPE_H
