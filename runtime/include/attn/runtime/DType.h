//===- DType.h - element types of KV caches and weights ---------*- C++ -*-===//
//
// The one statement of the storage element types every layer shares: attnc
// (descriptions, attn IR, the plan it writes), the kernel specs of
// schedules/ and the runtime. The enum and its spelling are header-only, so
// the layers above use it without linking the runtime (as PlanSchema.h);
// the conversions at the end are libattn_runtime's.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_DTYPE_H
#define ATTN_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace attn {

/// How a KV cache (or a linear kernel's weight) stores its elements; kernels
/// accumulate in fp32 whatever it is. I8: symmetric int8 with one fp32 scale
/// per row (a cache's (token, head) row: its largest magnitude / 127, the
/// scales in pools beside the pages; a weight's output feature). I4 (weights
/// only, never a cache): unsigned 4-bit values u with an fp32 scale s and a
/// zero point z per group of inputs and output feature, W = (u - z) · s
/// (KernelSpec.h's LinearSpec has the layout). MXFP4 (weights only: a
/// checkpoint's, gpt-oss's experts): the OCP Microscaling format's FP4,
/// 4-bit E2M1 values (sign, 2 exponent bits, 1 mantissa bit: 0, ±0.5 …
/// ±6) whose every block of 32 inputs of an output feature shares a
/// power-of-two scale, stored as its E8M0 byte e: W = value · 2^(e - 127);
/// laid out as I4 with the code as the nibble and the byte per (group,
/// feature) (Int4Weights.h). The C API's attn_dtype mirrors the cache
/// types, F32 to I8.
enum class DType { F32, F16, BF16, I8, I4, MXFP4 };
constexpr DType kLastDType = DType::MXFP4;
/// The element types a KV cache may have: every DType before this one.
constexpr DType kLastCacheDType = DType::I8;
constexpr bool isCacheDType(DType type) { return type <= kLastCacheDType; }

/// "f32", "f16", "bf16", "i8", "i4": MLIR's spelling, which the attn IR and
/// plans use (descriptions and attnc's options say "int8", as users do);
/// "mxfp4" (the attn IR's !attn.mxfp4).
constexpr const char *dtypeName(DType type) {
  return type == DType::F32    ? "f32"
         : type == DType::F16  ? "f16"
         : type == DType::BF16 ? "bf16"
         : type == DType::I8   ? "i8"
         : type == DType::I4   ? "i4"
                               : "mxfp4";
}
/// The inverse of dtypeName; false (and `type` unchanged) for anything else.
inline bool parseDType(const std::string &text, DType &type) {
  for (DType candidate : {DType::F32, DType::F16, DType::BF16, DType::I8,
                          DType::I4, DType::MXFP4})
    if (text == dtypeName(candidate)) {
      type = candidate;
      return true;
    }
  return false;
}
/// parseDType of a cache's type (not I4).
inline bool parseCacheDType(const std::string &text, DType &type) {
  DType parsed = type;
  if (!parseDType(text, parsed) || !isCacheDType(parsed))
    return false;
  type = parsed;
  return true;
}

/// Bytes per element of a cache type (I4 packs two to a byte: 1 here, for
/// the cache sizes that never meet it).
constexpr size_t byteSize(DType type) {
  return type == DType::F32 ? 4 : type >= DType::I8 ? 1 : 2;
}
/// Bytes of scale per row: 4 for I8, else 0.
constexpr size_t scaleBytes(DType type) { return type == DType::I8 ? 4 : 0; }
/// Bytes of K plus V for one token of one layer of a cache in `type`:
/// 2 · KV heads · (head size · element bytes + the row's scale), or half
/// that for a cache whose values are its keys (`keysOnly`: a latent
/// attention layer's rows, #attn.latent). attnc's KV budget (the attn IR's
/// #attn.kv_cache) and the runtime's pools both.
constexpr size_t kvBytesPerToken(DType type, size_t kvHeads, size_t headDim,
                                 bool keysOnly = false) {
  return (keysOnly ? 1 : 2) * kvHeads *
         (headDim * byteSize(type) + scaleBytes(type));
}

/// The inputs per scale of a linear kernel whose weights are `kernel` in a
/// model whose linear weights are `model` in groups of `modelGroup` (0:
/// none): the model's group goes with int4 weights and with int8 weights
/// of the model's own type; any other kernel (an int8 head beside int4
/// blocks: a scale per output feature) takes none. attnc's kernels
/// (--attn-specialize-kernels) and the runtime's packing both.
constexpr int64_t kernelWeightGroup(DType kernel, DType model,
                                    int64_t modelGroup) {
  return kernel == DType::I4 || (kernel == DType::I8 && model == DType::I8)
             ? modelGroup
             : 0;
}

/// Pages of `pageSize` tokens a sequence holds in one layer's cache at most:
/// every page up to `maxLength`, or, for a layer sliding over `window` keys
/// (0: none), the pages the positions [L - window, L) of any length L can
/// span, since a query at position L reads no key before L - window + 1 and
/// the pages wholly before it are released. attnc's KV budget and the
/// runtime's pools both.
constexpr int64_t kvPagesPerSequence(int64_t maxLength, int64_t pageSize,
                                     int64_t window) {
  const int64_t all = (maxLength + pageSize - 1) / pageSize;
  const int64_t spanned = (window + pageSize - 1) / pageSize + 1;
  return window > 0 && spanned < all ? spanned : all;
}

/// Bytes of a linear kernel's W of `in` x `out` stored as `type`, with its
/// scales (I8: an fp32 per output feature, or per group of `group` inputs
/// and output feature; I4: an fp32 per group; MXFP4: a byte per 32 inputs
/// and output feature), before panel padding: what a decoded token streams
/// per matrix.
constexpr size_t linearWeightBytes(DType type, size_t in, size_t out,
                                   size_t group) {
  if (type == DType::I4)
    return (in + 1) / 2 * out + (in + group - 1) / group * out * 4;
  if (type == DType::I8 && group > 0)
    return in * out + (in + group - 1) / group * out * 4;
  if (type == DType::MXFP4)
    return (in + 1) / 2 * out + (in + 31) / 32 * out;
  return (in * byteSize(type) + scaleBytes(type)) * out;
}

namespace runtime {

using attn::DType; // the runtime's API says attn::runtime::DType

/// Converts `count` floats into `type` (round to nearest even) and back.
/// Not for I8 or I4, whose values carry scales: see quantizeRow.
void encode(DType type, const float *source, void *destination, size_t count);
void decode(DType type, const void *source, float *destination, size_t count);

/// One int8 row: q = round(x / scale) with scale = max|x| / 127 (0 for an
/// all-zero row), so every q is in [-127, 127] and |x - q·scale| <=
/// scale / 2. Returns the scale.
float quantizeRow(const float *source, int8_t *destination, size_t count);
void dequantizeRow(const int8_t *source, float scale, float *destination,
                   size_t count);

} // namespace runtime
} // namespace attn

#endif // ATTN_RUNTIME_DTYPE_H
