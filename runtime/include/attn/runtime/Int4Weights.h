//===- Int4Weights.h - where an int4 weight lives in its panels -*- C++ -*-===//
//
// The one statement of the I4 weight layout (KernelSpec.h's LinearSpec
// describes it for kernel users; schedules/Linear.cpp reads it in Halide),
// shared by every writer: the runtime's packer (Model.cpp), the tests' and
// benchmarks' (packLinearWeights) and the GPTQ/AWQ repackers. Header-only,
// like DType.h, so the layers above use it without linking the runtime.
//
//   weight  uint16 [panels][groups · group / 8][32]: word 2p + r of row j
//           of panel q holds u of feature 16q + p for inputs 8j + 2t + r
//           in its bits 4t..4t + 3, t = 0..3, so a 64-byte row gives four
//           vpdpwssd operands of input pairs by a shift and a mask each.
//           (Panels of 64 features, so that a one-token register tile
//           streams one contiguous row after another instead of four
//           streams 16 KiB apart, decoded TinyLlama at 57% of the read
//           bandwidth instead of 77%: the separate streams keep more
//           lines in flight.);
//   scales  fp32  [panels][groups][16]: s of (group g, feature 16q + p);
//   zeros   uint8 [panels][groups][16]: z of the same (absent: 8);
//   W(k, n) = (u - z) · s. Padding is u = 0: inputs past `in` meet zero
//   inputs in the kernel, features past `out` have s = 0.
//
// MXFP4 weights (DType.h) take the same layout in groups of 32 with the
// E2M1 code as u and, instead of scales and zeros,
//   exponents uint8 [panels][groups][16]: the block's E8M0 byte e,
//   W(k, n) = e2m1Value(u) · 2^(e - 127). Padding is u = 0 (+0.0).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_INT4WEIGHTS_H
#define ATTN_RUNTIME_INT4WEIGHTS_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace attn {

/// Output features per panel, inputs per packed row, uint16 words per
/// row.
inline constexpr int64_t kInt4Panel = 16, kInt4RowInputs = 8,
                         kInt4RowWords = 2 * kInt4Panel;
/// The zero point of symmetric int4 weights (u - 8 in [-8, 7]).
inline constexpr uint8_t kInt4SymmetricZero = 8;
/// The groups of inputs per scale the kernels take (GPTQ's and AWQ's
/// usual ones), and how messages name them.
constexpr bool isInt4Group(int64_t group) {
  return group == 32 || group == 64 || group == 128;
}
inline constexpr char kInt4Groups[] = "32, 64 or 128";
/// int8 weights take one scale per output feature (group 0), or one per
/// group of inputs and feature as GGUF's Q8_0 (32) and Q6_K (16) blocks
/// hold them, placed as int4's scales are (Int4Layout::scaleOf).
constexpr bool isInt8Group(int64_t group) {
  return group == 16 || group == 32;
}
inline constexpr char kInt8Groups[] = "16 or 32";

/// How a published checkpoint stores int4 weights that attnc reads as they
/// are (its zero points become the kernels' own): GPTQ (quantization_config
/// checkpoint_format "gptq": qweight packed 8 inputs an int32, zero points
/// stored less 1), GPTQ v2 ("gptq_v2": the zero points as they are), AWQ
/// (version "gemm": qweight packed 8 output features an int32 in the order
/// 0 2 4 6 1 3 5 7). Plans and the attn IR spell them so.
enum class Int4Format { Gptq, GptqV2, Awq };
inline constexpr const char *int4FormatName(Int4Format format) {
  return format == Int4Format::Gptq     ? "gptq"
         : format == Int4Format::GptqV2 ? "gptq_v2"
                                        : "awq";
}
inline constexpr char kInt4Formats[] = "gptq, gptq_v2 or awq";
inline bool parseInt4Format(const std::string &text, Int4Format &format) {
  for (Int4Format candidate :
       {Int4Format::Gptq, Int4Format::GptqV2, Int4Format::Awq})
    if (text == int4FormatName(candidate)) {
      format = candidate;
      return true;
    }
  return false;
}

struct Int4Layout {
  int64_t in = 0, out = 0, group = 0;

  int64_t panels() const { return (out + kInt4Panel - 1) / kInt4Panel; }
  int64_t groups() const { return (in + group - 1) / group; }
  int64_t rows() const { return groups() * group / kInt4RowInputs; }
  size_t weightWords() const {
    return size_t(panels() * rows() * kInt4RowWords);
  }
  /// Entries of the scale (and zero point) arrays.
  size_t scaleCount() const { return size_t(panels() * groups() * kInt4Panel); }

  /// The word holding W(k, n)'s u, and the shift of its nibble.
  size_t wordOf(int64_t k, int64_t n) const {
    const int64_t q = n / kInt4Panel, p = n % kInt4Panel;
    const int64_t j = k / kInt4RowInputs, r = k % 2;
    return size_t((q * rows() + j) * kInt4RowWords + 2 * p + r);
  }
  static int shiftOf(int64_t k) { return int(k % kInt4RowInputs / 2 * 4); }
  /// The index of (group g, feature n) in the scales and zeros.
  size_t scaleOf(int64_t g, int64_t n) const {
    return size_t((n / kInt4Panel * groups() + g) * kInt4Panel +
                  n % kInt4Panel);
  }
  /// Stores `u` (0..15) as W(k, n)'s nibble of `weight`.
  void put(uint16_t *weight, int64_t k, int64_t n, uint8_t u) const {
    uint16_t &word = weight[wordOf(k, n)];
    const int shift = shiftOf(k);
    word = uint16_t((word & ~(0xf << shift)) | ((u & 0xf) << shift));
  }
  uint8_t get(const uint16_t *weight, int64_t k, int64_t n) const {
    return uint8_t((weight[wordOf(k, n)] >> shiftOf(k)) & 0xf);
  }
  /// Quantizes feature n's weights `values` [in] group by group
  /// (quantizeInt4Group, below) into its nibbles of `weight` and its entries
  /// of `scales`.
  inline void quantizeFeature(const float *values, int64_t n, uint16_t *weight,
                              float *scales) const;
};

/// Symmetric int4 of one group's `count` values: s = max |x| / 7 (0 when
/// every value is 0 or the largest is below the smallest normal float, so
/// no scale is subnormal), u = clamp(round(x / s), -8, 7) + 8 (NaN: 8, so
/// 0; infinities saturate). |x - (u - 8) · s| <= s / 2 for finite x.
/// Returns s.
inline float quantizeInt4Group(const float *x, int64_t count, uint8_t *u) {
  float largest = 0.0f;
  for (int64_t i = 0; i < count; i++)
    if (std::isfinite(x[i]))
      largest = std::max(largest, std::fabs(x[i]));
  float scale = largest / 7.0f;
  if (!(scale >= 1.17549435e-38f)) // FLT_MIN
    scale = 0.0f;
  for (int64_t i = 0; i < count; i++) {
    const float q = scale > 0.0f ? std::nearbyint(x[i] / scale) : 0.0f;
    u[i] = std::isnan(q) ? kInt4SymmetricZero
                         : uint8_t(std::clamp(q, -8.0f, 7.0f) + 8.0f);
  }
  return scale;
}

/// Asymmetric int4 of one group's `count` values, as GGUF's Q4_1 stores
/// them: m = the least finite value, s = (the largest - m) / 15 (0 when
/// they are equal), u = clamp(round((x - m) / s), 0, 15) (NaN: 0), so
/// W = u · s + m. Returns s and m.
inline void quantizeInt4MinGroup(const float *x, int64_t count, uint8_t *u,
                                 float &s, float &m) {
  float lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < count; i++)
    if (std::isfinite(x[i]))
      lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  if (!(lo <= hi))
    lo = hi = 0.0f;
  s = (hi - lo) / 15.0f;
  m = lo;
  for (int64_t i = 0; i < count; i++) {
    const float q = s > 0.0f ? std::nearbyint((x[i] - m) / s) : 0.0f;
    u[i] = std::isnan(q) ? 0 : uint8_t(std::clamp(q, 0.0f, 15.0f));
  }
}

void Int4Layout::quantizeFeature(const float *values, int64_t n,
                                 uint16_t *weight, float *scales) const {
  uint8_t u[128]; // the largest group isInt4Group allows
  for (int64_t g = 0; g < groups(); g++) {
    const int64_t k0 = g * group, count = std::min(group, in - k0);
    scales[scaleOf(g, n)] = quantizeInt4Group(values + k0, count, u);
    for (int64_t i = 0; i < count; i++)
      put(weight, k0 + i, n, u[i]);
  }
}

/// MXFP4's block: inputs per shared exponent (the OCP Microscaling spec's k).
inline constexpr int64_t kMxBlock = 32;
/// E2M1's value of a 4-bit code: sign (bit 3), exponent (bits 1-2, bias
/// 1), mantissa (bit 0); exponent 0 is subnormal (0 and 0.5).
inline float e2m1Value(uint8_t code) {
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f,
                                          2.0f, 3.0f, 4.0f, 6.0f};
  const float magnitude = kMagnitude[code & 7];
  return code & 8 ? -magnitude : magnitude;
}
/// E8M0's scale of byte e: 2^(e - 127) (255 is NaN).
inline float e8m0Scale(uint8_t e) {
  return e == 255 ? NAN : std::ldexp(1.0f, int(e) - 127);
}
/// MXFP4 of one block's `count` values (the spec's conversion): the shared
/// exponent floor(log2(max |x|)) - 2 (E2M1's largest exponent), each
/// x / 2^shared rounded to the nearest E2M1 value (ties to the even code),
/// saturating at ±6; NaN and an all-zero block give code 0 (+0). Returns the
/// E8M0 byte (0 for an all-zero block). tools/quantize_checkpoint.py writes
/// checkpoints by the same rule.
inline uint8_t quantizeMxfp4Block(const float *x, int64_t count,
                                  uint8_t *codes) {
  float largest = 0.0f;
  for (int64_t i = 0; i < count; i++)
    if (std::isfinite(x[i]))
      largest = std::max(largest, std::fabs(x[i]));
  const int shared =
      largest > 0.0f ? std::clamp(std::ilogb(largest) - 2, -127, 127) : -127;
  for (int64_t i = 0; i < count; i++) {
    const float v = std::isnan(x[i]) ? 0.0f : std::ldexp(std::fabs(x[i]), -shared);
    uint8_t best = 0;
    for (uint8_t c = 1; c < 8; c++) {
      const float d = std::fabs(v - e2m1Value(c)),
                  b = std::fabs(v - e2m1Value(best));
      if (d < b || (d == b && c % 2 == 0))
        best = c;
    }
    codes[i] = uint8_t(best | (x[i] < 0.0f ? 8 : 0));
  }
  return uint8_t(shared + 127);
}

} // namespace attn

#endif // ATTN_RUNTIME_INT4WEIGHTS_H
