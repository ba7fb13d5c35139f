//===- DevicePlacement.h - where a model's kernels run ---------*- C++ -*-===//
//
// ModelRunner's view of the device path: the Workspace's activations and
// the KV pools get device copies (DeviceShadows.h) when a model runs on a
// GPU, and copies between activations happen on the device. On the CPU
// (`device` null) every call is the plain host operation.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_DEVICEPLACEMENT_H
#define ATTN_RUNTIME_DEVICEPLACEMENT_H

#include "DeviceShadows.h"

#include "attn/runtime/KvCache.h"

#include <cstdint>
#include <vector>

namespace attn::runtime {

template <class Vector> auto *grow(Vector &v, size_t n) {
  if (v.size() < n)
    v.resize(n);
  return v.data();
}

/// Where a model's kernels run: the CPU (`device` null), or a GPU, where
/// the Workspace's activations get device shadows as they grow, and copies
/// between them happen on the device.
struct Placement {
  const DeviceApi *device = nullptr;

  /// grow() for an activation kernels write in place; `status` keeps the
  /// first failure (a device allocation).
  template <class Vector> float *activation(Vector &v, size_t n) {
    if (!device)
      return grow(v, n);
    if (v.size() < n) {
      shadows::forget(v.data()); // resize may move it
      v.resize(n);
    }
    if (status)
      status = shadows::track(*device, v.data(), v.size() * sizeof(float),
                              /*hostHasData=*/false);
    return v.data();
  }
  /// `rows` rows of `width` floats from `from` (rows `fromStride` apart,
  /// starting `fromOffset` floats into it) to dense `to`: std::memcpy on the
  /// CPU, a copy on the device (where kernels take no views into the middle
  /// of an allocation).
  Status copyRows(const float *from, int64_t fromOffset, int64_t fromStride,
                  float *to, int64_t width, int64_t rows) const;
  Status status;
};

/// On a device, gives `layer`'s pools of `cache` their device shadows.
Status placeCache(const Placement &place, const KvCache &cache, int layer);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_DEVICEPLACEMENT_H
