//===- ExternBuffers.h - halide_buffer_t access for extern stages -*- C++ -*-===//
//
// Private to the x86-64 object's micro-kernels (AmxAttention.cpp,
// Avx512Attention.cpp): addressing the buffers Halide hands an extern
// stage, and answering a packing stage's bounds query. C library only.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_EXTERNBUFFERS_H
#define ATTN_SCHEDULES_EXTERNBUFFERS_H

#include "HalideRuntime.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace attn::externs {

/// The address of `buffer`'s element at `coords` (one per dimension).
template <typename T>
T *element(const halide_buffer_t *buffer, std::initializer_list<int> coords) {
  int64_t offset = 0;
  int k = 0;
  for (int c : coords) {
    offset += int64_t(c - buffer->dim[k].min) * buffer->dim[k].stride;
    k++;
  }
  return reinterpret_cast<T *>(buffer->host) + offset;
}

/// Whether `buffer` holds [min, min + extent) of dimension k.
inline bool covers(const halide_buffer_t *buffer, int k, int min,
                   int extent) {
  return buffer->dim[k].min <= min &&
         min + extent <= buffer->dim[k].min + buffer->dim[k].extent;
}

/// Sets dimension k of a bounds query to [min, min + extent).
inline void ask(halide_buffer_t *query, int k, int min, int extent) {
  query->dim[k].min = min;
  query->dim[k].extent = extent;
}

/// Answers a packing stage's bounds query on its fp32 input (d, hk, j, b):
/// every channel, the region's KV heads and batch entries, and the keys
/// [first, end) that exist (the last key stands in for those past kv_len).
inline void askForKeys(halide_buffer_t *input, int headDim, int first,
                       int end, int kvLen, const halide_dimension_t &heads,
                       const halide_dimension_t &batch) {
  first = std::max(0, std::min(first, kvLen - 1));
  end = std::min(kvLen, end);
  ask(input, 0, 0, headDim);
  ask(input, 1, heads.min, heads.extent);
  ask(input, 2, first, std::max(0, end - first));
  ask(input, 3, batch.min, batch.extent);
}

} // namespace attn::externs

#endif // ATTN_SCHEDULES_EXTERNBUFFERS_H
