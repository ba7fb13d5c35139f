//===- AmxLinear.cpp - bf16 products on Intel AMX tiles -------------------===//
//
// Compiled with -mamx-tile -mamx-bf16 -mavx512bf16 (schedules/CMakeLists.txt);
// nothing here runs unless available() said yes, so the object links into
// every x86-64 build and the rest of the code never executes these
// instructions elsewhere.
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/AmxLinear.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#if defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_BF16__)
#define ATTN_AMX 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace attn::amx {

#ifdef ATTN_AMX
namespace {
constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureTileData = 18;

/// LDTILECFG's 64-byte operand (palette 1): every tile 16 rows x 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, startRow = 0, reserved[14] = {};
  uint16_t bytesPerRow[16] = {};
  uint8_t rows[16] = {};
};

bool askForTiles(std::string &why) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) ||
      !(d & (1u << 22))) {
    why = "this CPU has no AMX-TILE / AMX-BF16 (cpuid leaf 7)";
    return false;
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) != 0) {
    why = "Linux refused the AMX tile state (arch_prctl "
          "ARCH_REQ_XCOMP_PERM XFEATURE_XTILEDATA)";
    return false;
  }
  unsigned long granted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 ||
      !(granted & (1ul << kXfeatureTileData))) {
    why = "Linux did not grant the AMX tile state";
    return false;
  }
  return true;
}

/// Panel p's words re-paired along k: word (r, f) of the result holds
/// W[2r][f] (low half) and W[2r + 1][f] (high half), f < 32, as AMX's B
/// operand wants them; rows past `in` are zero.
void pairPanel(const uint32_t *panel, int in, int paddedIn, uint32_t *paired) {
  const __m512i low = _mm512_set1_epi32(0xffff);
  for (int r = 0; r < paddedIn / 2; r++) {
    const int k = 2 * r;
    // Row k holds features (f, f + 16) in word f; zero past the input.
    __m512i even = k < in ? _mm512_loadu_si512(panel + size_t(k) * 16)
                          : _mm512_setzero_si512();
    __m512i odd = k + 1 < in ? _mm512_loadu_si512(panel + size_t(k + 1) * 16)
                             : _mm512_setzero_si512();
    // Features 0-15: the low halves of rows k and k + 1; 16-31: the highs.
    __m512i first = _mm512_or_si512(_mm512_and_si512(even, low),
                                    _mm512_slli_epi32(odd, 16));
    __m512i second = _mm512_or_si512(_mm512_srli_epi32(even, 16),
                                     _mm512_andnot_si512(low, odd));
    _mm512_storeu_si512(paired + size_t(r) * 32, first);
    _mm512_storeu_si512(paired + size_t(r) * 32 + 16, second);
  }
}
} // namespace

bool available(std::string *why) {
  static std::once_flag once;
  static bool granted = false;
  static std::string reason;
  std::call_once(once, [] { granted = askForTiles(reason); });
  if (!granted && why)
    *why = reason;
  return granted;
}

void packTokensBf16(const float *x, int in, int m0, int m1, int paddedIn,
                    int xStride, uint16_t *xb) {
  for (int m = m0; m < m1; m++) {
    const float *row = x + size_t(m) * in;
    uint16_t *packed = xb + size_t(m) * xStride;
    for (int k = 0; k < paddedIn; k += 16) {
      const __mmask16 live = k + 16 <= in ? __mmask16(0xffff)
                             : k < in     ? __mmask16((1u << (in - k)) - 1)
                                          : __mmask16(0);
      __m512 values = _mm512_maskz_loadu_ps(live, row + k);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(packed + k),
                          (__m256i)_mm512_cvtneps_pbh(values));
    }
  }
}

void linearBf16Block(const uint16_t *xb, int xStride, int paddedIn, int in,
                     const uint32_t *panels, int out, int m0, int m1, int p0,
                     int p1, uint32_t *scratch, float *y, int yStride) {
  TileConfig config;
  for (int t = 0; t < 8; t++) {
    config.bytesPerRow[t] = 64;
    config.rows[t] = 16;
  }
  _tile_loadconfig(&config);
  // Tiles: 0-3 accumulators (token half i, feature half j at 2i + j),
  // 4-5 X's two 16-token halves, 6-7 the panel's two 16-feature halves.
  alignas(64) float edge[kTokenBlock][kPanelFeatures];
  const size_t xRowBytes = size_t(xStride) * 2;
  for (int p = p0; p < p1; p++) {
    pairPanel(panels + size_t(p) * in * 16, in, paddedIn, scratch);
    const int n0 = p * kPanelFeatures;
    for (int m = m0; m < m1; m += kTokenBlock) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      const uint16_t *x0 = xb + size_t(m) * xStride;
      const uint16_t *x1 = x0 + size_t(16) * xStride;
      for (int k = 0; k < paddedIn; k += kDepthStep) {
        const uint32_t *w = scratch + size_t(k / 2) * 32;
        _tile_loadd(4, x0 + k, xRowBytes);
        _tile_loadd(5, x1 + k, xRowBytes);
        _tile_loadd(6, w, 128);
        _tile_loadd(7, w + 16, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      const bool whole = m + kTokenBlock <= m1 && n0 + kPanelFeatures <= out;
      float *target = whole ? y + size_t(m) * yStride + n0 : &edge[0][0];
      const size_t stride = (whole ? yStride : kPanelFeatures) * sizeof(float);
      const size_t half = 16 * stride / sizeof(float);
      _tile_stored(0, target, stride);
      _tile_stored(1, target + 16, stride);
      _tile_stored(2, target + half, stride);
      _tile_stored(3, target + half + 16, stride);
      if (whole)
        continue;
      const int rows = std::min(kTokenBlock, m1 - m);
      const int columns = std::min(kPanelFeatures, out - n0);
      for (int r = 0; r < rows; r++)
        std::memcpy(y + size_t(m + r) * yStride + n0, edge[r],
                    columns * sizeof(float));
    }
  }
  _tile_release();
}

#else // no AMX in this build (not x86-64, or a compiler without it)

bool available(std::string *why) {
  if (why)
    *why = "this build has no AMX code (not x86-64, or the compiler "
           "lacks -mamx-tile)";
  return false;
}

void packTokensBf16(const float *, int, int, int, int, int, uint16_t *) {}

void linearBf16Block(const uint16_t *, int, int, int, const uint32_t *, int,
                     int, int, int, int, uint32_t *, float *, int) {}

#endif

} // namespace attn::amx
