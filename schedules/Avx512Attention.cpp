//===- Avx512Attention.cpp - fp32 prefill attention micro-kernels ---------===//
//
// Per block of up to 128 query rows of one head, over chunks of keys:
//   S  = Q·Kᵀ                (12 rows x 32 keys per register tile, D deep)
//   m' = max(m, rowmax S), P = 2^(S - m') (0 past the keys the row sees),
//   l  = l·2^(m - m') + rowsum P, O = O·2^(m - m')
//   O += P·V                 (6 rows x 64 channels per register tile)
// then out = O / l. Q is scaled into the log2 domain as it is copied into
// the block, so the softmax is exp2, with the Halide kernels' floor
// (exp2Nonpositive, AttentionParts.h): exactly 0 below 2^-64, so no weight
// or sum here is subnormal.
//
// Both register tiles keep 24 accumulators and read one operand as vectors
// (a K panel's row of 32 keys; 64 channels of a V row) and the other as
// broadcasts (12 rows' Q element; 6 rows' weight), 2 to 4 loads and 6 to
// 12 broadcasts per 24 FMAs. Measured alone on one Sapphire Rapids core
// (H32 D128 S2048, one head): Q·Kᵀ 88% and P·V 92% of the FMA peak,
// softmax 9% of the block's time. The whole kernel on 2 Sapphire Rapids
// vCPUs: D128 S2048 full 68-69% of the FMA peak (Halide's schedule: 59%),
// D64 S512 57-58% (51%); 1.01x ONNX Runtime's MLAS on both
// (bench/README.md).
//
// Built like AmxLinear.cpp: baseline x86-64, AVX-512 only inside functions
// with a target attribute that run after attn_avx512_attention_ready(), C
// library only.
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/Avx512Attention.h"
#include "attn/schedules/CpuFamily.h"

#include "AmxTiles.h"
#include "ExternBuffers.h"
#include "OnlineSoftmax.h"
#include "HalideRuntime.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 11)
#define ATTN_AVX512 1
#include <cpuid.h>
#include <immintrin.h>
#define ATTN_AVX512_CODE __attribute__((target("avx512f")))
#endif

namespace attn::avx512 {

#ifdef ATTN_AVX512
namespace {
using externs::covers;
using externs::element;

/// Rows of a Q·Kᵀ register tile and of a P·V one. A block's last tiles take
/// fewer rows (multiples of 4 and 2), so a 128-row block computes no row
/// twice.
constexpr int kScoreRows = 12, kOutputRows = 6;

/// `rows` rounded up to a multiple of `step`.
constexpr int roundUp(int rows, int step) {
  return (rows + step - 1) / step * step;
}

/// Whether the CPU and the OS run AVX-512F code (cpuid leaf 7, and XCR0's
/// opmask and ZMM state).
bool hasAvx512() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) // OSXSAVE
    return false;
  unsigned xcr0Low, xcr0High;
  __asm__("xgetbv" : "=a"(xcr0Low), "=d"(xcr0High) : "c"(0));
  if ((xcr0Low & 0xe6) != 0xe6)
    return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 16));
}

/// One head's operands. Strides in floats.
struct HeadOperands {
  const float *panels; ///< K panel jb at panels + jb·panelStride, channel d
                       ///< of its 32 keys at + 32·d
  size_t panelStride;
  const float *value; ///< key j at value + j·valueStride, channels dense
  size_t valueStride;
  int headDim;
};

/// The block's scratch: Q rows (scaled), scores then weights, and the
/// accumulator, rows of headDim / scoreStride / headDim floats.
struct BlockScratch {
  float *query, *scores, *acc;
  int scoreStride;
};

/// The scratch floats for `keyChunk` and `headDim`: score rows one cache
/// line wider than a chunk (so a tile's rows do not share L1 sets).
size_t blockScratchFloats(int keyChunk, int headDim) {
  return size_t(kBlockRows) * (2 * headDim + keyChunk + 16);
}

BlockScratch carveScratch(float *floats, int keyChunk, int headDim) {
  BlockScratch s;
  s.scoreStride = keyChunk + 16;
  s.query = floats;
  s.scores = s.query + size_t(kBlockRows) * headDim;
  s.acc = s.scores + size_t(kBlockRows) * s.scoreStride;
  return s;
}

/// S[rt + r][kb, kb + 32) = Q(rt + r)·K(c0 + kb + ·), r < R: one register
/// tile.
template <int R>
ATTN_AVX512_CODE void scoreTile(const HeadOperands &h, const BlockScratch &s,
                                int rt, int c0, int kb) {
  const int headDim = h.headDim;
  const float *panel =
      h.panels + size_t((c0 + kb) / kPanelKeys) * h.panelStride;
  const float *q = s.query + size_t(rt) * headDim;
  __m512 acc[R][2];
  for (int r = 0; r < R; r++)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int d = 0; d < headDim; d++) {
    const __m512 k0 = _mm512_loadu_ps(panel + 32 * d),
                 k1 = _mm512_loadu_ps(panel + 32 * d + 16);
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
      const __m512 x = _mm512_set1_ps(q[size_t(r) * headDim + d]);
      acc[r][0] = _mm512_fmadd_ps(x, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, k1, acc[r][1]);
    }
  }
  float *row = s.scores + size_t(rt) * s.scoreStride + kb;
  for (int r = 0; r < R; r++) {
    _mm512_storeu_ps(row + size_t(r) * s.scoreStride, acc[r][0]);
    _mm512_storeu_ps(row + size_t(r) * s.scoreStride + 16, acc[r][1]);
  }
}

/// O[rt + r][d0, d0 + 64) += P[rt + r][0, nk)·V(c0 + ·), r < R: one
/// register tile over the chunk.
template <int R>
ATTN_AVX512_CODE void outputTile(const HeadOperands &h, const BlockScratch &s,
                                 int rt, int d0, int c0, int nk) {
  const int headDim = h.headDim;
  float *o = s.acc + size_t(rt) * headDim + d0;
  const float *p = s.scores + size_t(rt) * s.scoreStride;
  __m512 acc[R][4];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 4; v++)
      acc[r][v] = _mm512_loadu_ps(o + size_t(r) * headDim + 16 * v);
  const float *values = h.value + size_t(c0) * h.valueStride + d0;
  for (int k = 0; k < nk; k++) {
    const float *row = values + size_t(k) * h.valueStride;
    const __m512 v0 = _mm512_loadu_ps(row), v1 = _mm512_loadu_ps(row + 16),
                 v2 = _mm512_loadu_ps(row + 32), v3 = _mm512_loadu_ps(row + 48);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
      const __m512 x = _mm512_set1_ps(p[size_t(r) * s.scoreStride + k]);
      acc[r][0] = _mm512_fmadd_ps(x, v0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, v1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(x, v2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(x, v3, acc[r][3]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int v = 0; v < 4; v++)
      _mm512_storeu_ps(o + size_t(r) * headDim + 16 * v, acc[r][v]);
}

/// The online-softmax step of row r over the chunk's nk scores, of which
/// it sees [0, e): its weights in place of its scores (0 past e), and the
/// running max, sum and accumulator rescaled to the new max. `whole`: it
/// sees the whole chunk (e = nk), so no lane is masked.
template <bool whole>
ATTN_AVX512_CODE void softmaxRow(const BlockScratch &s, int r, int nk, int e,
                                 int headDim, float &m, float &l) {
  float *scores = s.scores + size_t(r) * s.scoreStride;
  auto live = [&](int j) {
    return whole ? __mmask16(0xffff) : softmax::lanes(j, 0, e);
  };
  __m512 rowMax = _mm512_set1_ps(-INFINITY);
  for (int j = 0; j < e; j += 16)
    rowMax = _mm512_mask_max_ps(rowMax, live(j), rowMax,
                                _mm512_loadu_ps(scores + j));
  const float newMax = std::max(m, _mm512_reduce_max_ps(rowMax));
  const __m512 shift = _mm512_set1_ps(newMax);
  __m512 sum = _mm512_setzero_ps();
  for (int j = 0; j < nk; j += 16) {
    const __m512 p = softmax::exp2Floor<6>(
        _mm512_sub_ps(_mm512_loadu_ps(scores + j), shift), live(j));
    sum = _mm512_add_ps(sum, p);
    _mm512_storeu_ps(scores + j, p);
  }
  softmax::updateRow(newMax, _mm512_reduce_add_ps(sum), m, l,
                     s.acc + size_t(r) * headDim, headDim);
}

/// `rows` (<= kBlockRows) query rows of one head, already in s.query
/// (zeros past them to whole tiles), over keys [0, keyEnd); writes out row
/// r at out + r·outStride.
ATTN_AVX512_CODE void attendBlock(const HeadOperands &h, int keyEnd, int rows,
                                  int keyChunk, const BlockScratch &s,
                                  float *out, size_t outStride) {
  const int headDim = h.headDim;
  const int scoreRows = roundUp(rows, 4), outputRows = roundUp(rows, 2);
  float m[kBlockRows], l[kBlockRows];
  for (int r = 0; r < rows; r++) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }
  std::memset(s.acc, 0, sizeof(float) * size_t(outputRows) * headDim);
  // Rows past `rows` (to whole tiles of 4 and 2) have zero queries: their
  // scores, used as weights, are 0 and add nothing.
  for (int c0 = 0; c0 < keyEnd; c0 += keyChunk) {
    const int nk = std::min(keyChunk, paddedKeys(keyEnd) - c0);
    const int e = std::min(keyEnd - c0, nk);
    for (int rt = 0; rt < scoreRows; rt += kScoreRows) {
      const int tile = std::min(kScoreRows, scoreRows - rt);
      for (int kb = 0; kb < nk; kb += kPanelKeys)
        tile == 12  ? scoreTile<12>(h, s, rt, c0, kb)
        : tile == 8 ? scoreTile<8>(h, s, rt, c0, kb)
                    : scoreTile<4>(h, s, rt, c0, kb);
    }
    for (int r = 0; r < rows; r++)
      e == nk ? softmaxRow<true>(s, r, nk, e, headDim, m[r], l[r])
              : softmaxRow<false>(s, r, nk, e, headDim, m[r], l[r]);
    for (int rt = 0; rt < outputRows; rt += kOutputRows) {
      const int tile = std::min(kOutputRows, outputRows - rt);
      for (int d0 = 0; d0 < headDim; d0 += kOutputChannels)
        tile == 6   ? outputTile<6>(h, s, rt, d0, c0, nk)
        : tile == 4 ? outputTile<4>(h, s, rt, d0, c0, nk)
                    : outputTile<2>(h, s, rt, d0, c0, nk);
    }
  }
  for (int r = 0; r < rows; r++)
    softmax::writeRow(s.acc + size_t(r) * headDim, l[r],
                      out + size_t(r) * outStride, headDim);
}

/// Rows [i, i + rows) of query head h, entry b, times `scale`, into the
/// block's Q (zeros past them to a whole score tile).
ATTN_AVX512_CODE void loadQueries(const halide_buffer_t *query, int h, int i,
                                  int b, int rows, float scale,
                                  const BlockScratch &s, int headDim) {
  const __m512 factor = _mm512_set1_ps(scale);
  const int scoreRows = roundUp(rows, 4);
  for (int r = 0; r < scoreRows; r++) {
    float *to = s.query + size_t(r) * headDim;
    if (r >= rows) {
      std::memset(to, 0, sizeof(float) * headDim);
      continue;
    }
    const float *from = element<const float>(query, {0, h, i + r, b});
    for (int d = 0; d < headDim; d += 16)
      _mm512_storeu_ps(to + d,
                       _mm512_mul_ps(_mm512_loadu_ps(from + d), factor));
  }
}

/// K (fp32 (d, hk, j, b)) in panels of 32 keys for the region of `panels`
/// (lane, d, jb, hk, b), the last key repeated past kv_len: one gather of
/// 16 keys' channel per vector.
ATTN_AVX512_CODE void packPanels(const halide_buffer_t *key, int kvLen,
                                 halide_buffer_t *panels) {
  const int headDim = panels->dim[1].extent;
  const int keyStride = key->dim[2].stride;
  const auto &jbs = panels->dim[2], &hks = panels->dim[3],
             &bs = panels->dim[4];
  for (int b = bs.min; b < bs.min + bs.extent; b++)
    for (int hk = hks.min; hk < hks.min + hks.extent; hk++)
      for (int jb = jbs.min; jb < jbs.min + jbs.extent; jb++) {
        const int first = std::min(jb * kPanelKeys, kvLen - 1);
        const float *base = element<const float>(key, {0, hk, first, b});
        alignas(64) int32_t offsets[kPanelKeys];
        for (int lane = 0; lane < kPanelKeys; lane++)
          offsets[lane] =
              (std::min(jb * kPanelKeys + lane, kvLen - 1) - first) *
              keyStride;
        const __m512i low = _mm512_load_si512(offsets),
                      high = _mm512_load_si512(offsets + 16);
        float *panel = element<float>(panels, {0, 0, jb, hk, b});
        for (int d = 0; d < headDim; d++) {
          _mm512_storeu_ps(panel + 32 * d,
                           _mm512_i32gather_ps(low, base + d, 4));
          _mm512_storeu_ps(panel + 32 * d + 16,
                           _mm512_i32gather_ps(high, base + d, 4));
        }
      }
}

ATTN_AVX512_CODE int attend(const halide_buffer_t *query,
                            const halide_buffer_t *panels,
                            const halide_buffer_t *value,
                            const halide_buffer_t *keyEnd, int group,
                            int kvLen, float scale, int chunk,
                            halide_buffer_t *out) {
  const int headDim = out->dim[0].extent;
  const int h0 = out->dim[1].min, hN = out->dim[1].extent;
  const int i0 = out->dim[2].min, iN = out->dim[2].extent;
  const int b0 = out->dim[3].min, bN = out->dim[3].extent;
  const int keys = paddedKeys(kvLen);
  if (headDim % kOutputChannels != 0 || headDim > kMaxHeadDim ||
      out->dim[0].min != 0 || out->dim[0].stride != 1 ||
      query->dim[0].stride != 1 || panels->dim[0].stride != 1 ||
      panels->dim[1].stride != kPanelKeys || value->dim[0].stride != 1 ||
      !covers(query, 0, 0, headDim) || !covers(query, 2, i0, iN) ||
      !covers(panels, 2, 0, keys / kPanelKeys) || !covers(value, 2, 0, keys))
    return -1;
  float *floats = reinterpret_cast<float *>(
      amx::threadScratch(blockScratchFloats(chunk, headDim)));
  if (!floats)
    return -1;
  const BlockScratch scratch = carveScratch(floats, chunk, headDim);
  for (int b = b0; b < b0 + bN; b++) {
    const int end = std::clamp(*element<int32_t>(keyEnd, {b}), 0, kvLen);
    for (int h = h0; h < h0 + hN; h++) {
      const int hk = h / group;
      HeadOperands operands;
      operands.panels = element<const float>(panels, {0, 0, 0, hk, b});
      operands.panelStride = size_t(panels->dim[2].stride);
      operands.value = element<const float>(value, {0, hk, 0, b});
      operands.valueStride = size_t(value->dim[2].stride);
      operands.headDim = headDim;
      for (int i = i0; i < i0 + iN; i += kBlockRows) {
        const int rows = std::min(kBlockRows, i0 + iN - i);
        loadQueries(query, h, i, b, rows, scale, scratch, headDim);
        attendBlock(operands, end, rows, chunk, scratch,
                    element<float>(out, {0, h, i, b}),
                    size_t(out->dim[2].stride));
      }
    }
  }
  return 0;
}

} // namespace
#endif

} // namespace attn::avx512

extern "C" __attribute__((weak)) int attn_avx512_attention_ready(void) {
#ifdef ATTN_AVX512
  // Asked once; racing first callers store the same answer (no C++
  // runtime: no function-local static guard).
  static int answer = -1;
  int ready = __atomic_load_n(&answer, __ATOMIC_RELAXED);
  if (ready < 0) {
    ready = attn_cpu_avx512_attention() && attn::avx512::hasAvx512() ? 1 : 0;
    __atomic_store_n(&answer, ready, __ATOMIC_RELAXED);
  }
  return ready;
#else
  return 0;
#endif
}

extern "C" __attribute__((weak)) int
attn_avx512_pack_key_panels(halide_buffer_t *key, int32_t kvLen,
                            halide_buffer_t *panels) {
  using namespace attn::avx512;
  const int headDim = panels->dim[1].extent;
  const int jb0 = panels->dim[2].min, jbN = panels->dim[2].extent;
  // Halide passes an input image itself, not a query, during bounds
  // inference: only the output then says it is one.
  if (key->is_bounds_query() || panels->is_bounds_query()) {
    if (key->is_bounds_query())
      attn::externs::askForKeys(key, headDim, jb0 * kPanelKeys,
                                (jb0 + jbN) * kPanelKeys, kvLen,
                                panels->dim[3], panels->dim[4]);
    return 0;
  }
#ifdef ATTN_AVX512
  if (!attn_avx512_attention_ready() || key->dim[0].stride != 1 ||
      panels->dim[0].stride != 1 || panels->dim[1].stride != kPanelKeys ||
      int64_t(key->dim[2].stride) * kPanelKeys > INT32_MAX)
    return -1;
  if (kvLen > 0) // with no keys, no row reads K
    packPanels(key, kvLen, panels);
  return 0;
#else
  (void)jb0, (void)jbN;
  return -1;
#endif
}

extern "C" __attribute__((weak)) int
attn_avx512_attention_f32(halide_buffer_t *query, halide_buffer_t *key,
                          halide_buffer_t *value, halide_buffer_t *keyEnd,
                          int32_t queryHeadsPerKvHead, int32_t kvLen,
                          float scale, int32_t keyChunk, halide_buffer_t *out) {
  using namespace attn::avx512;
  const int headDim = out->dim[0].extent;
  const int h0 = out->dim[1].min, hN = out->dim[1].extent;
  const int i0 = out->dim[2].min, iN = out->dim[2].extent;
  const int b0 = out->dim[3].min, bN = out->dim[3].extent;
  if (out->is_bounds_query() || query->is_bounds_query() ||
      key->is_bounds_query() || value->is_bounds_query() ||
      keyEnd->is_bounds_query()) {
    // Q: the region's rows; K and V: every key (padded to whole panels) of
    // the KV heads the region's heads read. Inputs that are images, not
    // queries, are left as they are.
    const int kv0 = h0 / queryHeadsPerKvHead,
              kvN = (h0 + hN - 1) / queryHeadsPerKvHead - kv0 + 1;
    const int keys = paddedKeys(kvLen);
    using attn::externs::ask;
    if (query->is_bounds_query()) {
      ask(query, 0, 0, headDim);
      ask(query, 1, h0, hN);
      ask(query, 2, i0, iN);
      ask(query, 3, b0, bN);
    }
    if (key->is_bounds_query()) {
      ask(key, 0, 0, kPanelKeys);
      ask(key, 1, 0, headDim);
      ask(key, 2, 0, keys / kPanelKeys);
      ask(key, 3, kv0, kvN);
      ask(key, 4, b0, bN);
    }
    if (value->is_bounds_query()) {
      ask(value, 0, 0, headDim);
      ask(value, 1, kv0, kvN);
      ask(value, 2, 0, keys);
      ask(value, 3, b0, bN);
    }
    if (keyEnd->is_bounds_query())
      ask(keyEnd, 0, b0, bN);
    return 0;
  }
#ifdef ATTN_AVX512
  if (!attn_avx512_attention_ready())
    return -1;
  return attend(query, key, value, keyEnd, queryHeadsPerKvHead, kvLen,
                scale * float(M_LOG2E), attn::avx512::keyChunk(keyChunk), out);
#else
  (void)i0, (void)iN, (void)b0, (void)bN, (void)scale, (void)keyChunk;
  return -1;
#endif
}
