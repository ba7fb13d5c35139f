//===- DevicePlacement.cpp - where a model's kernels run ------------------===//

#include "DevicePlacement.h"

#include "attn/runtime/KernelCall.h"

#include <cstring>

namespace attn::runtime {

Status Placement::copyRows(const float *from, int64_t fromOffset,
                           int64_t fromStride, float *to, int64_t width,
                           int64_t rows) const {
  if (!device) {
    for (int64_t r = 0; r < rows; r++)
      std::memcpy(to + r * width, from + fromOffset + r * fromStride,
                  width * sizeof(float));
    return Status::ok();
  }
  // `to` holds columns [fromOffset, fromOffset + width) of `from`'s
  // coordinates: Halide copies the region of `to` found in `from`.
  halide_dimension_t fromDims[2] = {{0, int32_t(fromOffset + width), 1, 0},
                                    {0, int32_t(rows), int32_t(fromStride), 0}};
  halide_dimension_t toDims[2] = {{int32_t(fromOffset), int32_t(width), 1, 0},
                                  {0, int32_t(rows), int32_t(width), 0}};
  halide_buffer_t source{}, target{};
  source.host = reinterpret_cast<uint8_t *>(const_cast<float *>(from));
  target.host = reinterpret_cast<uint8_t *>(to);
  source.type = target.type = float32Type();
  source.dimensions = target.dimensions = 2;
  source.dim = fromDims;
  target.dim = toDims;
  return shadows::copyOnDevice(*device, source, target);
}

Status placeCache(const Placement &place, const KvCache &cache, int layer) {
  if (!place.device)
    return Status::ok();
  const KvCacheConfig &c = cache.config();
  const size_t rows = size_t(c.numPages) * c.pageSize * c.numKvHeads;
  const size_t pool = rows * c.headDim * byteSize(c.dtype);
  // The host may have written the pools (KvCache::write) before this first
  // device use: their contents go up once.
  auto track = [&](const void *pool, size_t bytes) {
    return shadows::track(*place.device, pool, bytes, /*hostHasData=*/true);
  };
  Status s = track(cache.keyPages(layer), pool);
  if (s)
    s = track(cache.valuePages(layer), pool);
  if (s && cache.keyScales(layer))
    s = track(cache.keyScales(layer), rows * sizeof(float));
  if (s && cache.valueScales(layer))
    s = track(cache.valueScales(layer), rows * sizeof(float));
  return s;
}

} // namespace attn::runtime
