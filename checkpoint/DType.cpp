//===- DType.cpp - converting floats to and from storage element types ----===//

#include "attn/runtime/DType.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace attn::runtime {

namespace {
uint32_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits;
}
float floatOf(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

uint16_t toBf16(float x) {
  uint32_t bits = bitsOf(x);
  if (std::isnan(x))
    return uint16_t((bits >> 16) | 0x40); // keep it a (quiet) NaN
  return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

// IEEE binary16 by hand: the machine's baseline (x86-64 without F16C) has no
// conversion instruction we can rely on.
uint16_t toF16(float x) {
  uint32_t bits = bitsOf(x);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  float magnitude = std::fabs(x);
  if (std::isnan(x))
    return sign | 0x7e00;
  if (magnitude >= 65520.0f) // rounds to infinity
    return sign | 0x7c00;
  if (magnitude < 6.103515625e-05f) // subnormal: multiples of 2^-24
    return sign | uint16_t(std::nearbyint(magnitude * 16777216.0f));
  uint32_t m = bitsOf(magnitude);
  uint32_t rounded = m + 0xfff + ((m >> 13) & 1); // nearest even at 13 bits
  return sign | uint16_t(((rounded >> 13) - ((127 - 15) << 10)) & 0x7fff);
}

float fromF16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0) // zero or subnormal
    return std::copysign(float(mantissa) / 16777216.0f, sign ? -1.0f : 1.0f);
  if (exponent == 31)
    return floatOf(sign | 0x7f800000 | (mantissa << 13));
  return floatOf(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}
} // namespace

float quantizeRow(const float *source, int8_t *destination, size_t count) {
  float largest = 0.0f;
  for (size_t i = 0; i < count; i++)
    if (std::isfinite(source[i]))
      largest = std::max(largest, std::fabs(source[i]));
  const float scale = largest / 127.0f;
  // The division by the scale itself (not a multiply by its inverse) keeps
  // max|x| exactly at ±127. Infinities saturate; NaN (broken weights)
  // becomes 0 rather than an undefined conversion.
  for (size_t i = 0; i < count; i++) {
    float q = scale > 0.0f ? std::nearbyint(source[i] / scale) : 0.0f;
    destination[i] =
        std::isnan(q) ? int8_t(0) : int8_t(std::clamp(q, -127.0f, 127.0f));
  }
  return scale;
}

void dequantizeRow(const int8_t *source, float scale, float *destination,
                   size_t count) {
  for (size_t i = 0; i < count; i++)
    destination[i] = float(source[i]) * scale;
}

void encode(DType type, const float *source, void *destination, size_t count) {
  if (type == DType::F32) {
    std::memcpy(destination, source, count * 4);
    return;
  }
  auto *out = static_cast<uint16_t *>(destination);
  for (size_t i = 0; i < count; i++)
    out[i] = type == DType::F16 ? toF16(source[i]) : toBf16(source[i]);
}

void decode(DType type, const void *source, float *destination, size_t count) {
  if (type == DType::F32) {
    std::memcpy(destination, source, count * 4);
    return;
  }
  const auto *in = static_cast<const uint16_t *>(source);
  for (size_t i = 0; i < count; i++)
    destination[i] =
        type == DType::F16 ? fromF16(in[i]) : floatOf(uint32_t(in[i]) << 16);
}

} // namespace attn::runtime
