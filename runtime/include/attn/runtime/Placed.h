//===- Placed.h - memory and the device copy its owner keeps ----*- C++ -*-===//
//
// A kernel argument's memory names its owner's device copy (a weight
// array's, a KV pool's, an execution context's activation), so that the
// device path needs no lookup by address (DeviceCopy.h, runtime-private).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_PLACED_H
#define ATTN_RUNTIME_PLACED_H

#include <cstdint>
#include <type_traits>

namespace attn::runtime {

class DeviceCopy; // runtime-private (DeviceCopy.h)

/// Where a kernel argument's memory lives: `data` on the host and, where
/// the memory's owner keeps one (a model on a GPU), the owner's device copy
/// of the allocation `data` points into; null: plain host memory, copied
/// in (and out) for a device call.
template <class T> struct Placed {
  T *data = nullptr;
  DeviceCopy *copy = nullptr;
  Placed() = default;
  Placed(T *data, DeviceCopy *copy = nullptr) : data(data), copy(copy) {}
  template <class U, class = std::enable_if_t<std::is_convertible_v<U *, T *>>>
  Placed(const Placed<U> &other) : data(other.data), copy(other.copy) {}
  /// `offset` elements further into the same allocation.
  Placed operator+(int64_t offset) const { return {data + offset, copy}; }
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_PLACED_H
