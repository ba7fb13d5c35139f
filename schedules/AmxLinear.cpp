//===- AmxLinear.cpp - bf16 products on Intel AMX tiles -------------------===//
//
// Built for the baseline x86-64 ISA: the AMX and AVX-512 code is confined
// to functions carrying a target attribute, which run only after
// available() checked the CPU and the OS, so the object is safe to link
// (and to load) anywhere. Elsewhere (another architecture, a compiler
// without AMX intrinsics) available() is false and nothing else runs.
// It uses the C library only (pthread, malloc), no C++ runtime: C programs
// link model libraries that contain it.
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/AmxLinear.h"

#include "attn/runtime/Int4Weights.h"

#include "AmxTiles.h"
#include "HalideRuntime.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#ifdef ATTN_AMX
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace attn::amx {

#ifdef ATTN_AMX
namespace {
constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureTileData = 18;

/// Null if this process may use AMX-BF16 tiles, else why not.
const char *askForTiles() {
  unsigned a, b, c, d;
  const bool tiles = __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
                     (d & (1u << 24)) && (d & (1u << 22));
  const bool bf16 =
      tiles && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
  if (!tiles || !bf16)
    return "this CPU has no AMX-TILE / AMX-BF16 / AVX512-BF16 (cpuid leaf 7)";
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) != 0)
    return "Linux refused the AMX tile state (arch_prctl "
           "ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)";
  unsigned long granted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 ||
      !(granted & (1ul << kXfeatureTileData)))
    return "Linux did not grant the AMX tile state";
  return nullptr;
}

pthread_once_t gAsked = PTHREAD_ONCE_INIT;
const char *gUnavailable = "not asked";
void ask() { gUnavailable = askForTiles(); }

/// Panel words re-paired along k: word (r, f) of the result holds W[2r][f]
/// (low half) and W[2r + 1][f] (high half), f < 32, as AMX's B operand
/// wants them; rows past `in` are zero.
ATTN_AMX_CODE void pairPanel(const uint32_t *panel, int in, int paddedIn,
                             uint32_t *paired) {
  const __m512i low = _mm512_set1_epi32(0xffff);
  for (int r = 0; r < paddedIn / 2; r++) {
    const int k = 2 * r;
    // Row k holds features (f, f + 16) in word f.
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

/// bf16 bits of (u - z)·s for 16 values u in int32 lanes.
ATTN_AMX_CODE __m256i dequantize(__m512i u, __m512 zero, __m512 scale) {
  return (__m256i)_mm512_cvtneps_pbh(
      _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(u), zero), scale));
}

/// Product panel `p` (32 features) of int4 weights dequantized into the
/// layout pairPanel writes: word (r, f) holds bf16(W[2r][f]) low and
/// bf16(W[2r + 1][f]) high, W = (u - z)·s in fp32, rounded to nearest
/// even. An int4 row j (inputs 8j..8j + 7) gives paired rows 4j + t, its
/// words' nibbles t = 0..3; features past the int4 panels are 0.
ATTN_AMX_CODE void dequantizePanel(const Int4Source &w, int p, int paddedIn,
                                   uint32_t *paired) {
  const __m512i nibble = _mm512_set1_epi16(0xf),
                lowHalf = _mm512_set1_epi32(0xffff);
  for (int h = 0; h < 2; h++) {
    // Features 16h..16h + 15 of the product panel: int4 panel q, from its
    // feature f0.
    const int first = p * kPanelFeatures + 16 * h;
    const int q = first / int(kInt4Panel), f0 = first % int(kInt4Panel);
    if (q >= w.panels) {
      for (int r = 0; r < paddedIn / 2; r++)
        _mm512_storeu_si512(paired + size_t(r) * 32 + 16 * h,
                            _mm512_setzero_si512());
      continue;
    }
    const uint16_t *rows =
        w.weight + size_t(q) * w.rows * kInt4RowWords + 2 * f0;
    for (int j = 0; j < paddedIn / 8; j++) {
      const size_t at =
          (size_t(q) * w.groups + size_t(8 * j / w.group)) * kInt4Panel + f0;
      const __m512 scale = _mm512_loadu_ps(w.scales + at);
      const __m512 zero =
          w.zeros ? _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(
                        reinterpret_cast<const __m128i *>(w.zeros + at))))
                  : _mm512_set1_ps(8.0f);
      // 32 uint16 lanes, lane 2f + r: inputs 8j + 2t + r of feature f in
      // bits 4t..4t + 3.
      const __m512i words = _mm512_loadu_si512(rows + j * kInt4RowWords);
      for (int t = 0; t < 4; t++) {
        const __m512i u =
            _mm512_and_si512(_mm512_srli_epi16(words, unsigned(4 * t)), nibble);
        const __m512i even = _mm512_cvtepu16_epi32(
            dequantize(_mm512_and_si512(u, lowHalf), zero, scale));
        const __m512i odd = _mm512_cvtepu16_epi32(
            dequantize(_mm512_srli_epi32(u, 16), zero, scale));
        _mm512_storeu_si512(paired + size_t(4 * j + t) * 32 + 16 * h,
                            _mm512_or_si512(even, _mm512_slli_epi32(odd, 16)));
      }
    }
  }
}

/// Product panel `p` (32 features) of int8 panels in the layout pairPanel
/// writes, their values exactly: an int8 row j (inputs 2j, 2j + 1, byte
/// 2f + r) is paired row j; rows past the panels' and features past the
/// last panel are 0.
ATTN_AMX_CODE void unpackInt8Panel(const int8_t *panels, int panelCount,
                                   int in, int p, int paddedIn,
                                   uint32_t *paired) {
  const int rows = (in + 1) / 2;
  const __m512 one = _mm512_set1_ps(1.0f), none = _mm512_setzero_ps();
  for (int h = 0; h < 2; h++) {
    const int q = 2 * p + h; // 16-feature panels
    for (int r = 0; r < paddedIn / 2; r++) {
      uint32_t *to = paired + size_t(r) * 32 + 16 * h;
      if (q >= panelCount || r >= rows) {
        _mm512_storeu_si512(to, _mm512_setzero_si512());
        continue;
      }
      // 32 int16 lanes, lane 2f + r: input 2j + r of feature f.
      const __m512i v = _mm512_cvtepi8_epi16(_mm256_loadu_si256(
          reinterpret_cast<const __m256i *>(panels +
                                            (size_t(q) * rows + r) * 32)));
      const __m512i even = _mm512_cvtepu16_epi32(dequantize(
          _mm512_srai_epi32(_mm512_slli_epi32(v, 16), 16), none, one));
      const __m512i odd = _mm512_cvtepu16_epi32(
          dequantize(_mm512_srai_epi32(v, 16), none, one));
      _mm512_storeu_si512(to, _mm512_or_si512(even, _mm512_slli_epi32(odd, 16)));
    }
  }
}

/// Where product() takes W's panels from: bf16 pairs, int4 or int8.
struct PanelSource {
  const uint32_t *bf16 = nullptr; // [panel][in][16]
  const Int4Source *int4 = nullptr;
  const int8_t *int8 = nullptr; // [panel][(in + 1) / 2][32]
  int int8Panels = 0;
};

ATTN_AMX_CODE void packRows(const float *x, int in, int m0, int m1,
                            int paddedIn, int xStride, uint16_t *xb) {
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

ATTN_AMX_CODE void product(const uint16_t *xb, int xStride, int paddedIn,
                           int in, const PanelSource &panels, int rows,
                           int nBegin, int nEnd, uint32_t *scratch, float *y,
                           int yStride) {
  const TileConfig config = fullTiles();
  _tile_loadconfig(&config);
  // Tiles: 0-3 accumulators (token half i, feature half j at 2i + j),
  // 4-5 X's two 16-token halves, 6-7 the panel's two 16-feature halves.
  alignas(64) float edge[kTokenBlock][kPanelFeatures];
  const size_t xRowBytes = size_t(xStride) * 2;
  // Panels in groups whose re-paired rows take at most 1 MiB of L2 (4 at
  // 4096 inputs, 1 at 11008): a group's panels are re-paired, then per
  // block of 32 tokens each panel of the group in turn, so the block's rows
  // of X stay in L2 across the group instead of streaming from L3 once per
  // panel. (512 tokens, 2 vCPUs: 4096 -> 4096 in 2-panel groups 13.3 ->
  // 11.2 ms; 11008 inputs, where two panels and X's block overflow L2,
  // 39.5 ms one panel at a time, 44 ms in pairs.)
  const size_t pairedWords = size_t(pairedPanelWords(paddedIn));
  const int group = panelGroup(paddedIn);
  const int first = nBegin / kPanelFeatures,
            last = (nEnd + kPanelFeatures - 1) / kPanelFeatures;
  for (int p0 = first; p0 < last; p0 += group) {
    const int p1 = std::min(last, p0 + group);
    for (int p = p0; p < p1; p++)
      if (panels.int4)
        dequantizePanel(*panels.int4, p, paddedIn,
                        scratch + (p - p0) * pairedWords);
      else if (panels.int8)
        unpackInt8Panel(panels.int8, panels.int8Panels, in, p, paddedIn,
                        scratch + (p - p0) * pairedWords);
      else
        pairPanel(panels.bf16 + size_t(p) * in * 16, in, paddedIn,
                  scratch + (p - p0) * pairedWords);
    for (int m = 0; m < rows; m += kTokenBlock) {
      const uint16_t *x0 = xb + size_t(m) * xStride;
      const uint16_t *x1 = x0 + size_t(16) * xStride;
      for (int p = p0; p < p1; p++) {
        const uint32_t *paired = scratch + (p - p0) * pairedWords;
        const int n0 = p * kPanelFeatures;
        const int c0 = std::max(n0, nBegin), c1 = std::min(n0 + 32, nEnd);
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int k = 0; k < paddedIn; k += kDepthStep) {
          const uint32_t *w = paired + size_t(k / 2) * 32;
          _tile_loadd(4, x0 + k, xRowBytes);
          _tile_loadd(5, x1 + k, xRowBytes);
          _tile_loadd(6, w, 128);
          _tile_loadd(7, w + 16, 128);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        // Whole blocks go straight to Y; a block past the tokens or the
        // requested features goes through `edge`.
        const bool whole = m + kTokenBlock <= rows && c0 == n0 && c1 == n0 + 32;
        float *target =
            whole ? y + size_t(m) * yStride + (n0 - nBegin) : &edge[0][0];
        const size_t stride = whole ? size_t(yStride) : kPanelFeatures;
        _tile_stored(0, target, stride * 4);
        _tile_stored(1, target + 16, stride * 4);
        _tile_stored(2, target + 16 * stride, stride * 4);
        _tile_stored(3, target + 16 * stride + 16, stride * 4);
        if (whole)
          continue;
        for (int r = 0; r < std::min(kTokenBlock, rows - m); r++)
          std::memcpy(y + size_t(m + r) * yStride + (c0 - nBegin),
                      edge[r] + (c0 - n0), (c1 - c0) * sizeof(float));
      }
    }
  }
  _tile_release();
}

/// Per thread, reused across calls (a panel group's re-paired rows, an
/// attention block's scores), so no call allocates on the hot path.
struct Scratch {
  uint32_t *words = nullptr;
  size_t capacity = 0;
};
pthread_once_t gScratchKeyMade = PTHREAD_ONCE_INIT;
pthread_key_t gScratchKey;
void freeScratch(void *scratch) {
  std::free(static_cast<Scratch *>(scratch)->words);
  std::free(scratch);
}
void makeScratchKey() { pthread_key_create(&gScratchKey, freeScratch); }

} // namespace

__attribute__((weak)) uint32_t *threadScratch(size_t words) {
  pthread_once(&gScratchKeyMade, makeScratchKey);
  auto *scratch = static_cast<Scratch *>(pthread_getspecific(gScratchKey));
  if (!scratch) {
    scratch = static_cast<Scratch *>(std::calloc(1, sizeof(Scratch)));
    if (!scratch || pthread_setspecific(gScratchKey, scratch) != 0) {
      std::free(scratch);
      return nullptr;
    }
  }
  if (scratch->capacity < words) {
    std::free(scratch->words);
    scratch->words = static_cast<uint32_t *>(
        std::aligned_alloc(64, (words * 4 + 63) / 64 * 64));
    scratch->capacity = scratch->words ? words : 0;
  }
  return scratch->words;
}

} // namespace attn::amx

extern "C" __attribute__((weak)) const char *
attn_amx_unavailable_reason(void) {
  pthread_once(&attn::amx::gAsked, attn::amx::ask);
  return attn::amx::gUnavailable;
}

namespace attn::amx {

__attribute__((weak)) void packTokensBf16(const float *x, int in, int m0,
                                          int m1, int paddedIn, int xStride,
                                          uint16_t *xb) {
  if (!attn_amx_unavailable_reason())
    packRows(x, in, m0, m1, paddedIn, xStride, xb);
}

__attribute__((weak)) void
linearBf16Block(const uint16_t *xb, int xStride, int paddedIn, int in,
                const uint32_t *panels, int rows, int nBegin, int nEnd,
                uint32_t *scratch, float *y, int yStride) {
  if (!attn_amx_unavailable_reason())
    product(xb, xStride, paddedIn, in, PanelSource{panels, nullptr}, rows,
            nBegin, nEnd, scratch, y, yStride);
}

__attribute__((weak)) void
linearInt4Block(const uint16_t *xb, int xStride, int paddedIn, int in,
                const Int4Source &weights, int rows, int nBegin, int nEnd,
                uint32_t *scratch, float *y, int yStride) {
  if (!attn_amx_unavailable_reason())
    product(xb, xStride, paddedIn, in, PanelSource{nullptr, &weights}, rows,
            nBegin, nEnd, scratch, y, yStride);
}

__attribute__((weak)) void
linearInt8Block(const uint16_t *xb, int xStride, int paddedIn, int in,
                const int8_t *panels, int panelCount, int rows, int nBegin,
                int nEnd, uint32_t *scratch, float *y, int yStride) {
  if (!attn_amx_unavailable_reason()) {
    PanelSource source;
    source.int8 = panels, source.int8Panels = panelCount;
    product(xb, xStride, paddedIn, in, source, rows, nBegin, nEnd, scratch, y,
            yStride);
  }
}

#else // no AMX code in this build

} // namespace attn::amx

extern "C" __attribute__((weak)) const char *
attn_amx_unavailable_reason(void) {
  return "this build has no AMX code (not x86-64, or the compiler lacks "
         "AMX intrinsics)";
}

namespace attn::amx {
__attribute__((weak)) void packTokensBf16(const float *, int, int, int, int,
                                          int, uint16_t *) {}
__attribute__((weak)) void linearBf16Block(const uint16_t *, int, int, int,
                                           const uint32_t *, int, int, int,
                                           uint32_t *, float *, int) {}
__attribute__((weak)) void linearInt4Block(const uint16_t *, int, int, int,
                                           const Int4Source &, int, int, int,
                                           uint32_t *, float *, int) {}
__attribute__((weak)) void linearInt8Block(const uint16_t *, int, int, int,
                                           const int8_t *, int, int, int, int,
                                           uint32_t *, float *, int) {}
#endif

} // namespace attn::amx

// Every symbol this object defines is weak: every model library attnc
// writes carries a copy of it, and an application may link several (and
// attnc's own AttnSchedules beside them).
namespace {
/// Whether an extern call may run on `y`'s region: AMX available, the
/// region within the panels of `out` features, X and Y dense as the
/// product reads them, and the calling thread's scratch (null in a build
/// without AMX code, where nothing runs) in `scratch`.
bool prepare(const halide_buffer_t *xb, const halide_buffer_t *y, int out,
             int paddedIn, uint32_t *&scratch) {
  using namespace attn::amx;
  const int n0 = y->dim[0].min, nExtent = y->dim[0].extent;
  if (attn_amx_unavailable_reason() || n0 < 0 ||
      n0 + nExtent > panelCount(out) * kPanelFeatures ||
      xb->dim[0].stride != 1 || xb->dim[1].stride != xRowStride(paddedIn) ||
      y->dim[0].stride != 1)
    return false;
#ifdef ATTN_AMX
  scratch = threadScratch(scratchWords(paddedIn));
  return scratch != nullptr;
#else
  scratch = nullptr;
  return true;
#endif
}
/// A bounds query's answer for X: the region's tokens, rounded up to whole
/// blocks (`rows`), every input feature (padded to `xStride`).
void requestTokens(halide_buffer_t *xb, int m0, int rows, int xStride) {
  xb->dim[0].min = 0;
  xb->dim[0].extent = xStride;
  xb->dim[1].min = m0;
  xb->dim[1].extent = rows;
}

/// A bounds query's answer for a panel buffer: panels [p0, p1), whole.
void requestPanels(halide_buffer_t *b, int words, int rows, int p0, int p1) {
  b->dim[0].min = 0;
  b->dim[0].extent = words;
  b->dim[1].min = 0;
  b->dim[1].extent = rows;
  b->dim[2].min = p0;
  b->dim[2].extent = p1 - p0;
}

/// X's row of token m0 (the region's first).
const uint16_t *firstToken(const halide_buffer_t *xb, int m0, int xStride) {
  return reinterpret_cast<const uint16_t *>(xb->host) +
         size_t(m0 - xb->dim[1].min) * xStride;
}
} // namespace

extern "C" __attribute__((weak)) int attn_amx_ready(void) {
  return attn_amx_unavailable_reason() ? 0 : 1;
}

extern "C" __attribute__((weak)) int
attn_amx_linear_bf16(halide_buffer_t *xb, halide_buffer_t *weight, int32_t in,
                     int32_t out, halide_buffer_t *y) {
  using namespace attn::amx;
  const int paddedIn = paddedDepth(in), xStride = xRowStride(paddedIn);
  const int n0 = y->dim[0].min, nExtent = y->dim[0].extent;
  const int m0 = y->dim[1].min, mExtent = y->dim[1].extent;
  const int rows = paddedTokens(mExtent);
  if (xb->is_bounds_query() || weight->is_bounds_query()) {
    // The panels of the region's features, all rows.
    requestTokens(xb, m0, rows, xStride);
    requestPanels(weight, 16, in, n0 / kPanelFeatures,
                  (n0 + nExtent - 1) / kPanelFeatures + 1);
    return 0;
  }
  uint32_t *scratch = nullptr;
  if (!prepare(xb, y, out, paddedIn, scratch))
    return -1;
  const uint16_t *x = firstToken(xb, m0, xStride);
  // The panel buffer's host points at its first element (min 0 pinned).
  const auto *panels = reinterpret_cast<const uint32_t *>(weight->host) -
                       size_t(weight->dim[2].min) * in * 16;
  linearBf16Block(x, xStride, paddedIn, in, panels, mExtent, n0, n0 + nExtent,
                  scratch, reinterpret_cast<float *>(y->host),
                  y->dim[1].stride);
  return 0;
}

namespace {
/// attn_amx_linear_int4 with zero points or without (null).
int linearInt4(halide_buffer_t *xb, halide_buffer_t *weight,
               halide_buffer_t *scales, halide_buffer_t *zeros, int32_t in,
               int32_t out, int32_t group, halide_buffer_t *y) {
  using namespace attn::amx;
  using attn::kInt4Panel, attn::kInt4RowWords;
  const int paddedIn = paddedDepth(in), xStride = xRowStride(paddedIn);
  const int n0 = y->dim[0].min, nExtent = y->dim[0].extent;
  const int m0 = y->dim[1].min, mExtent = y->dim[1].extent;
  const int rows = paddedTokens(mExtent);
  const int groups = (in + group - 1) / group, weightRows = groups * group / 8,
            panels = (out + int(kInt4Panel) - 1) / int(kInt4Panel);
  // The int4 panels under the product panels (32 features) of the region,
  // within the buffers.
  const int q0 = n0 / kPanelFeatures * kPanelFeatures / int(kInt4Panel),
            q1 = std::min(panels, ((n0 + nExtent - 1) / kPanelFeatures + 1) *
                                      kPanelFeatures / int(kInt4Panel));
  if (xb->is_bounds_query() || weight->is_bounds_query() ||
      scales->is_bounds_query() || (zeros && zeros->is_bounds_query())) {
    requestTokens(xb, m0, rows, xStride);
    for (halide_buffer_t *b : {weight, scales, zeros})
      if (b)
        requestPanels(b, int(b == weight ? kInt4RowWords : kInt4Panel),
                      b == weight ? weightRows : groups, q0, q1);
    return 0;
  }
  uint32_t *scratch = nullptr;
  if (paddedIn > groups * group || !prepare(xb, y, out, paddedIn, scratch))
    return -1;
  // Each buffer's host points at panel dim[2].min (min 0 pinned for the
  // others): back to panel 0.
  auto base = [](halide_buffer_t *b, size_t panelBytes) {
    return b->host - size_t(b->dim[2].min) * panelBytes;
  };
  Int4Source source;
  source.group = group, source.groups = groups, source.rows = weightRows;
  source.panels = panels;
  source.weight = reinterpret_cast<const uint16_t *>(
      base(weight, size_t(weightRows) * kInt4RowWords * sizeof(uint16_t)));
  source.scales = reinterpret_cast<const float *>(
      base(scales, size_t(groups) * kInt4Panel * sizeof(float)));
  source.zeros = zeros ? base(zeros, size_t(groups) * kInt4Panel) : nullptr;
  const uint16_t *x = firstToken(xb, m0, xStride);
  linearInt4Block(x, xStride, paddedIn, in, source, mExtent, n0, n0 + nExtent,
                  scratch, reinterpret_cast<float *>(y->host),
                  y->dim[1].stride);
  return 0;
}
} // namespace

extern "C" __attribute__((weak)) int
attn_amx_linear_int4(halide_buffer_t *xb, halide_buffer_t *weight,
                     halide_buffer_t *scales, int32_t in, int32_t out,
                     int32_t group, halide_buffer_t *y) {
  return linearInt4(xb, weight, scales, nullptr, in, out, group, y);
}

extern "C" __attribute__((weak)) int
attn_amx_linear_int4_zeros(halide_buffer_t *xb, halide_buffer_t *weight,
                           halide_buffer_t *scales, halide_buffer_t *zeros,
                           int32_t in, int32_t out, int32_t group,
                           halide_buffer_t *y) {
  return linearInt4(xb, weight, scales, zeros, in, out, group, y);
}

extern "C" __attribute__((weak)) int
attn_amx_linear_int8(halide_buffer_t *xb, halide_buffer_t *weight, int32_t in,
                     int32_t out, halide_buffer_t *y) {
  using namespace attn::amx;
  const int paddedIn = paddedDepth(in), xStride = xRowStride(paddedIn);
  const int n0 = y->dim[0].min, nExtent = y->dim[0].extent;
  const int m0 = y->dim[1].min, mExtent = y->dim[1].extent;
  const int rows = paddedTokens(mExtent), weightRows = (in + 1) / 2;
  const int panels = (out + 15) / 16; // int8 panels of 16 features
  // The int8 panels under the product panels (32 features) of the region.
  const int q0 = n0 / kPanelFeatures * 2,
            q1 = std::min(panels, ((n0 + nExtent - 1) / kPanelFeatures + 1) * 2);
  if (xb->is_bounds_query() || weight->is_bounds_query()) {
    requestTokens(xb, m0, rows, xStride);
    requestPanels(weight, 32, weightRows, q0, q1);
    return 0;
  }
  uint32_t *scratch = nullptr;
  if (!prepare(xb, y, out, paddedIn, scratch))
    return -1;
  const uint16_t *x = firstToken(xb, m0, xStride);
  // The panel buffer's host points at panel dim[2].min: back to panel 0.
  const auto *weights = reinterpret_cast<const int8_t *>(weight->host) -
                        size_t(weight->dim[2].min) * weightRows * 32;
  linearInt8Block(x, xStride, paddedIn, in, weights, panels, mExtent, n0,
                  n0 + nExtent, scratch, reinterpret_cast<float *>(y->host),
                  y->dim[1].stride);
  return 0;
}
