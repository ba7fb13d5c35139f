//===- DType.h - storage element types of KV caches -------------*- C++ -*-===//

#ifndef ATTN_RUNTIME_DTYPE_H
#define ATTN_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>

namespace attn::runtime {

/// How a cache stores its elements; kernels accumulate in fp32 whatever it is.
enum class DType { F32, F16, BF16 };

inline size_t byteSize(DType type) { return type == DType::F32 ? 4 : 2; }
const char *name(DType type);

/// Converts `count` floats into `type` (round to nearest even) and back.
void encode(DType type, const float *source, void *destination, size_t count);
void decode(DType type, const void *source, float *destination, size_t count);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_DTYPE_H
