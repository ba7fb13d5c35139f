//===- AmxAttention.cpp - prefill attention on Intel AMX tiles ------------===//
//
// Per block of 32 query rows of one head, over chunks of keys:
//   S  = Q·Kᵀ                (tiles: 32 rows x 32 keys per step, D deep)
//   m' = max(m, rowmax S), P = 2^(S - m') (0 where masked), l = l·2^(m - m')
//        + rowsum P, O = O·2^(m - m')          (AVX-512, fp32)
//   O += bf16(P)·V           (tiles: 32 rows x 32 channels, 32 keys deep)
// then out = O / l. Q arrives pre-scaled into the log2 domain (as for the
// Halide kernels), so the softmax is exp2. The exponential has the Halide
// kernels' floor (exp2Nonpositive, AttentionParts.h): exactly 0 below
// 2^-64, so no weight, product or sum here is subnormal (and tdpbf16ps
// treats subnormal operands as 0 whatever MXCSR says).
//
// Built like AmxLinear.cpp: baseline x86-64, AMX and AVX-512 only inside
// functions with a target attribute that run after the availability check,
// C library only.
//
//===----------------------------------------------------------------------===//

#include "attn/schedules/AmxAttention.h"
#include "attn/schedules/AmxLinear.h"

#include "AmxTiles.h"
#include "ExternBuffers.h"
#include "OnlineSoftmax.h"
#include "HalideRuntime.h"

#include <cmath>
#include <cstring>

namespace attn::amx {

#ifdef ATTN_AMX
namespace {
using externs::covers;
using externs::element;

/// Which keys the rows of a head see: row i sees [lo(i), hi(i)).
struct KeyRange {
  int keyEnd;   ///< key padding (and the end of the keys)
  int diagonal; ///< kv_len - q_len
  bool causal;
  int window; ///< > 0: sliding window

  int lo(int i) const {
    return window > 0 ? std::max(0, i + diagonal - window + 1) : 0;
  }
  int hi(int i) const {
    return causal ? std::min(keyEnd, i + diagonal + 1) : keyEnd;
  }
};

/// One head's operands and the block's scratch. Strides in elements.
struct HeadOperands {
  const uint16_t *query; ///< row i of the block at query + i·queryStride
  size_t queryStride;
  const uint16_t *key; ///< key tiles: key j, pair p at key + (j / 16)·
                       ///< keyBlockStride + 32p + 2(j % 16)
  size_t keyBlockStride;
  const uint16_t *value; ///< key pair p, channel d at value + p·valuePairStride
                         ///< + 2d
  size_t valuePairStride;
  int headDim;
};

struct BlockScratch {
  uint16_t *query; ///< bf16 [kQueryRows][headDim]: a last block's rows
  float *scores;   ///< [kQueryRows][scoreStride]
  uint16_t *probs; ///< bf16 [kQueryRows][probStride]
  float *acc;      ///< [kQueryRows][headDim]
  int scoreStride, probStride;
};

/// The scratch words for `keyChunk` and `headDim`: a block of Q, scores
/// and probabilities one cache line wider than a chunk (so a tile's 16 rows
/// do not share L1 sets), the accumulator.
int64_t blockScratchWords(int keyChunk, int headDim) {
  return int64_t(kQueryRows) * headDim / 2 +
         int64_t(kQueryRows) * (keyChunk + 16) +
         int64_t(kQueryRows) * (keyChunk + 32) / 2 +
         int64_t(kQueryRows) * headDim;
}

BlockScratch carveScratch(uint32_t *words, int keyChunk, int headDim) {
  BlockScratch s;
  s.query = reinterpret_cast<uint16_t *>(words);
  words += kQueryRows * headDim / 2;
  s.scoreStride = keyChunk + 16;
  s.probStride = keyChunk + 32;
  s.scores = reinterpret_cast<float *>(words);
  words += kQueryRows * s.scoreStride;
  s.probs = reinterpret_cast<uint16_t *>(words);
  s.acc = reinterpret_cast<float *>(words + kQueryRows * s.probStride / 2);
  return s;
}

/// The exponentials: degree 4, a relative error below 5.6e-5, 3% of the
/// bf16 rounding (2^-9) P gets next (the fp32 kernels keep degree 6).
constexpr int kExp2Degree = 4;
using softmax::lanes;

/// S[r][kb, kb + 32) = Q(r)·K(c0 + kb + ·) for the block's 32 rows: one
/// step of keys.
ATTN_AMX_CODE void scoreStep(const HeadOperands &h, int c0, int kb,
                             float *scores, int scoreStride) {
  const size_t qBytes = h.queryStride * 2;
  const size_t sBytes = size_t(scoreStride) * 4;
  const uint16_t *q1 = h.query + 16 * h.queryStride;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const uint16_t *keys0 = h.key + size_t((c0 + kb) / 16) * h.keyBlockStride;
  const uint16_t *keys16 = keys0 + h.keyBlockStride;
  for (int d = 0; d < h.headDim; d += 32) {
    _tile_loadd(4, h.query + d, qBytes);
    _tile_loadd(5, q1 + d, qBytes);
    _tile_loadd(6, keys0 + 16 * d, 64);
    _tile_loadd(7, keys16 + 16 * d, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float *row0 = scores + kb, *row16 = row0 + 16 * scoreStride;
  _tile_stored(0, row0, sBytes);
  _tile_stored(1, row0 + 16, sBytes);
  _tile_stored(2, row16, sBytes);
  _tile_stored(3, row16 + 16, sBytes);
}

/// O[r] += P[r][0, nk)·V(c0 + ·) for the block's 32 rows.
ATTN_AMX_CODE void accumulateChunk(const HeadOperands &h, int c0, int nk,
                                   const BlockScratch &s) {
  const size_t pBytes = size_t(s.probStride) * 2,
               vBytes = h.valuePairStride * 2;
  const size_t oBytes = size_t(h.headDim) * 4;
  const uint16_t *p1 = s.probs + 16 * s.probStride;
  for (int d = 0; d < h.headDim; d += 32) {
    float *o0 = s.acc + d, *o16 = o0 + 16 * h.headDim;
    _tile_loadd(0, o0, oBytes);
    _tile_loadd(1, o0 + 16, oBytes);
    _tile_loadd(2, o16, oBytes);
    _tile_loadd(3, o16 + 16, oBytes);
    for (int k = 0; k < nk; k += kKeyStep) {
      const uint16_t *v =
          h.value + size_t((c0 + k) / 2) * h.valuePairStride + 2 * d;
      _tile_loadd(4, s.probs + k, pBytes);
      _tile_loadd(5, p1 + k, pBytes);
      _tile_loadd(6, v, vBytes);
      _tile_loadd(7, v + 32, vBytes);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, o0, oBytes);
    _tile_stored(1, o0 + 16, oBytes);
    _tile_stored(2, o16, oBytes);
    _tile_stored(3, o16 + 16, oBytes);
  }
}

/// The online-softmax step of row r over its visible keys [a, e) of the
/// chunk (0 <= a < e <= nk): P's row, and the running max, sum and
/// accumulator rescaled to the new max. `whole`: the row sees the whole
/// chunk (a = 0, e = nk), so no lane is masked.
template <bool whole>
ATTN_AMX_CODE void softmaxRow(const BlockScratch &s, int r, int nk, int a,
                              int e, int headDim, float &m, float &l) {
  const float *scores = s.scores + size_t(r) * s.scoreStride;
  uint16_t *probs = s.probs + size_t(r) * s.probStride;
  auto live = [&](int j) {
    return whole ? __mmask16(0xffff) : lanes(j, a, e);
  };
  __m512 rowMax = _mm512_set1_ps(-INFINITY);
  for (int j = a / 16 * 16; j < e; j += 16)
    rowMax = _mm512_mask_max_ps(rowMax, live(j), rowMax,
                                _mm512_loadu_ps(scores + j));
  const float newMax = std::max(m, _mm512_reduce_max_ps(rowMax));
  const __m512 shift = _mm512_set1_ps(newMax);
  __m512 sum = _mm512_setzero_ps();
  for (int j = 0; j < nk; j += 32) {
    __m512 p0 =
        softmax::exp2Floor<kExp2Degree>(
            _mm512_sub_ps(_mm512_loadu_ps(scores + j), shift), live(j));
    __m512 p1 = softmax::exp2Floor<kExp2Degree>(
        _mm512_sub_ps(_mm512_loadu_ps(scores + j + 16), shift), live(j + 16));
    sum = _mm512_add_ps(sum, _mm512_add_ps(p0, p1));
    _mm512_storeu_si512(probs + j, (__m512i)_mm512_cvtne2ps_pbh(p1, p0));
  }
  softmax::updateRow(newMax, _mm512_reduce_add_ps(sum), m, l,
                     s.acc + size_t(r) * headDim, headDim);
}

/// Rows [firstRow, firstRow + rows) of one head, rows <= 32; writes
/// out row r at out + r·outStride.
ATTN_AMX_CODE void attendBlock(const HeadOperands &h, const KeyRange &keys,
                               int firstRow, int rows, int keyChunk,
                               const BlockScratch &s, float *out,
                               size_t outStride) {
  float m[kQueryRows], l[kQueryRows];
  for (int r = 0; r < kQueryRows; r++) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }
  std::memset(s.acc, 0, sizeof(float) * kQueryRows * h.headDim);
  // Rows past the block's real ones keep zero probabilities.
  for (int r = rows; r < kQueryRows; r++)
    std::memset(s.probs + size_t(r) * s.probStride, 0, size_t(keyChunk) * 2);
  // One chunk at a time: scores, probabilities, P·V. (Issuing the next
  // chunk's score tiles between rows of this chunk's softmax gained nothing
  // on Sapphire Rapids: 2.99 -> 3.18 ms per head, H32 D128 S2048, one
  // core; tile products and AVX-512 do not overlap there.)
  const int lo = keys.lo(firstRow), hi = keys.hi(firstRow + rows - 1);
  for (int c0 = lo / kKeyStep * kKeyStep; c0 < hi; c0 += keyChunk) {
    const int nk = std::min(keyChunk, paddedKeys(hi) - c0);
    for (int kb = 0; kb < nk; kb += kKeyStep)
      scoreStep(h, c0, kb, s.scores, s.scoreStride);
    for (int r = 0; r < rows; r++) {
      const int a = std::max(keys.lo(firstRow + r) - c0, 0),
                e = std::min(keys.hi(firstRow + r) - c0, nk);
      if (a == 0 && e == nk) {
        softmaxRow<true>(s, r, nk, a, e, h.headDim, m[r], l[r]);
      } else if (e > a) {
        softmaxRow<false>(s, r, nk, a, e, h.headDim, m[r], l[r]);
      } else { // the row sees none of this chunk
        std::memset(s.probs + size_t(r) * s.probStride, 0, size_t(nk) * 2);
      }
    }
    accumulateChunk(h, c0, nk, s);
  }
  for (int r = 0; r < rows; r++)
    softmax::writeRow(s.acc + size_t(r) * h.headDim, l[r],
                      out + size_t(r) * outStride, h.headDim);
}

/// K (fp32 (d, hk, j, b)) rounded to bf16 in the tiles' layout for the
/// region of `tiles` (lane, jj, pair, jb, hk, b): block jb of 16 keys,
/// pair of channels, key jb·16 + jj (the last key repeated past kv_len),
/// channel 2·pair + lane. Each block converts its 16 keys' rows, then
/// gathers one pair of channels of the 16 keys per 64-byte row.
ATTN_AMX_CODE void packKeys(const halide_buffer_t *key, int kvLen,
                            halide_buffer_t *tiles) {
  const int pairs = tiles->dim[2].extent, headDim = 2 * pairs;
  alignas(64) uint32_t rows[16][128]; // 16 keys x 256 channels in pairs
  const __m512i gather = _mm512_mullo_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
      _mm512_set1_epi32(128));
  for (int b = tiles->dim[5].min; b < tiles->dim[5].min + tiles->dim[5].extent;
       b++)
    for (int hk = tiles->dim[4].min;
         hk < tiles->dim[4].min + tiles->dim[4].extent; hk++)
      for (int jb = tiles->dim[3].min;
           jb < tiles->dim[3].min + tiles->dim[3].extent; jb++) {
        for (int jj = 0; jj < 16; jj++) {
          const int j = std::min(jb * 16 + jj, kvLen - 1);
          const float *row = element<const float>(key, {0, hk, j, b});
          for (int d = 0; d < headDim; d += 32)
            _mm512_store_si512(
                rows[jj] + d / 2,
                (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + d + 16),
                                             _mm512_loadu_ps(row + d)));
        }
        uint16_t *block = element<uint16_t>(tiles, {0, 0, 0, jb, hk, b});
        for (int p = 0; p < pairs; p++)
          _mm512_storeu_si512(block + 32 * p,
                              _mm512_i32gather_epi32(gather, rows[0] + p, 4));
      }
}

/// V (fp32 (d, hk, j, b)) rounded to bf16 for the region of `pairs`
/// (lane, d, pair, hk, b): the word of (d, pair) holds channel d of key
/// 2·pair (low half) and 2·pair + 1 (high half), the last key repeated past
/// kv_len, so that a row of a P·V operand tile is 16 channels of a pair of
/// keys.
ATTN_AMX_CODE void packValues(const halide_buffer_t *value, int kvLen,
                              halide_buffer_t *pairs) {
  const int headDim = pairs->dim[1].extent;
  const auto &b = pairs->dim[4], &hk = pairs->dim[3], &p = pairs->dim[2];
  for (int bi = b.min; bi < b.min + b.extent; bi++)
    for (int h = hk.min; h < hk.min + hk.extent; h++)
      for (int pi = p.min; pi < p.min + p.extent; pi++) {
        const float *even = element<const float>(
            value, {0, h, std::min(2 * pi, kvLen - 1), bi});
        const float *odd = element<const float>(
            value, {0, h, std::min(2 * pi + 1, kvLen - 1), bi});
        uint16_t *row = element<uint16_t>(pairs, {0, 0, pi, h, bi});
        for (int d = 0; d < headDim; d += 16) {
          const __m512i low = _mm512_cvtepu16_epi32(
              (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(even + d)));
          const __m512i high = _mm512_cvtepu16_epi32(
              (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(odd + d)));
          _mm512_storeu_si512(
              row + 2 * d, _mm512_or_si512(low, _mm512_slli_epi32(high, 16)));
        }
      }
}

ATTN_AMX_CODE int attend(halide_buffer_t *query, halide_buffer_t *key,
                         halide_buffer_t *value, halide_buffer_t *keyEnd,
                         int group, int kvLen, int diagonal, bool causal,
                         int window, int chunk, halide_buffer_t *out) {
  const int headDim = out->dim[0].extent;
  const int h0 = out->dim[1].min, hN = out->dim[1].extent;
  const int i0 = out->dim[2].min, iN = out->dim[2].extent;
  const int b0 = out->dim[3].min, bN = out->dim[3].extent;
  const int keysPadded = paddedKeys(kvLen);
  if (headDim % 32 != 0 || headDim > 256 || out->dim[0].min != 0 ||
      out->dim[0].stride != 1 || query->dim[0].stride != 1 ||
      key->dim[0].stride != 1 || key->dim[1].stride != 2 ||
      key->dim[2].stride != 32 || value->dim[0].stride != 1 ||
      value->dim[1].stride != 2 || !covers(query, 0, 0, headDim) ||
      !covers(query, 1, i0, iN) || !covers(key, 3, 0, keysPadded / 16) ||
      !covers(value, 2, 0, keysPadded / 2))
    return -1;
  uint32_t *words = threadScratch(size_t(blockScratchWords(chunk, headDim)));
  if (!words)
    return -1;
  const BlockScratch scratch = carveScratch(words, chunk, headDim);
  const TileConfig config = fullTiles();
  _tile_loadconfig(&config);
  for (int b = b0; b < b0 + bN; b++) {
    const KeyRange keys{std::clamp(*element<int32_t>(keyEnd, {b}), 0, kvLen),
                        diagonal, causal, window};
    for (int h = h0; h < h0 + hN; h++) {
      const int hk = h / group;
      HeadOperands operands;
      operands.key = element<const uint16_t>(key, {0, 0, 0, 0, hk, b});
      operands.keyBlockStride = size_t(key->dim[3].stride);
      operands.value = element<const uint16_t>(value, {0, 0, 0, hk, b});
      operands.valuePairStride = size_t(value->dim[2].stride);
      operands.headDim = headDim;
      for (int i = i0; i < i0 + iN; i += kQueryRows) {
        const int rows = std::min(kQueryRows, i0 + iN - i);
        operands.query = element<const uint16_t>(query, {0, i, h, b});
        operands.queryStride = size_t(query->dim[1].stride);
        if (!covers(query, 1, i, kQueryRows)) {
          // Halide may realize Q only up to the last row asked: the tile
          // loads then read a copy of the block, zeros past its rows.
          std::memset(scratch.query, 0, size_t(kQueryRows) * headDim * 2);
          for (int r = 0; r < rows; r++)
            std::memcpy(scratch.query + size_t(r) * headDim,
                        operands.query + size_t(r) * operands.queryStride,
                        size_t(headDim) * 2);
          operands.query = scratch.query;
          operands.queryStride = size_t(headDim);
        }
        attendBlock(operands, keys, i, rows, chunk, scratch,
                    element<float>(out, {0, h, i, b}),
                    size_t(out->dim[2].stride));
      }
    }
  }
  _tile_release();
  return 0;
}

} // namespace
#endif

} // namespace attn::amx

extern "C" __attribute__((weak)) int
attn_amx_attention_bf16(halide_buffer_t *query, halide_buffer_t *key,
                        halide_buffer_t *value, halide_buffer_t *keyEnd,
                        int32_t queryHeadsPerKvHead, int32_t kvLen,
                        int32_t diagonal, int32_t causal, int32_t window,
                        int32_t keyChunk, halide_buffer_t *out) {
  using namespace attn::amx;
  const int headDim = out->dim[0].extent;
  const int h0 = out->dim[1].min, hN = out->dim[1].extent;
  const int i0 = out->dim[2].min, iN = out->dim[2].extent;
  const int b0 = out->dim[3].min, bN = out->dim[3].extent;
  if (query->is_bounds_query() || key->is_bounds_query() ||
      value->is_bounds_query() || keyEnd->is_bounds_query()) {
    // Q: the region's rows rounded up to whole blocks; K and V: every key
    // (padded to whole steps) of the KV heads the region's heads read.
    const int kv0 = h0 / queryHeadsPerKvHead,
              kvN = (h0 + hN - 1) / queryHeadsPerKvHead - kv0 + 1;
    const int keys = paddedKeys(kvLen);
    auto set = attn::externs::ask;
    set(query, 0, 0, headDim);
    set(query, 1, i0, paddedRows(iN));
    set(query, 2, h0, hN);
    set(query, 3, b0, bN);
    set(key, 0, 0, 2);
    set(key, 1, 0, 16);
    set(key, 2, 0, headDim / 2);
    set(key, 3, 0, keys / 16);
    set(key, 4, kv0, kvN);
    set(key, 5, b0, bN);
    set(value, 0, 0, 2);
    set(value, 1, 0, headDim);
    set(value, 2, 0, keys / 2);
    set(value, 3, kv0, kvN);
    set(value, 4, b0, bN);
    set(keyEnd, 0, b0, bN);
    return 0;
  }
#ifdef ATTN_AMX
  if (attn_amx_unavailable_reason())
    return -1;
  return attend(query, key, value, keyEnd, queryHeadsPerKvHead, kvLen, diagonal,
                causal != 0, window, attn::amx::keyChunk(keyChunk), out);
#else
  (void)diagonal, (void)causal, (void)window, (void)keyChunk;
  return -1;
#endif
}


extern "C" __attribute__((weak)) int
attn_amx_pack_keys(halide_buffer_t *key, int32_t kvLen,
                   halide_buffer_t *tiles) {
  using namespace attn::amx;
  const int headDim = 2 * tiles->dim[2].extent;
  const int jb0 = tiles->dim[3].min, jbN = tiles->dim[3].extent;
  // Halide passes an input image itself, not a query, during bounds
  // inference: only the output then says it is one.
  if (key->is_bounds_query() || tiles->is_bounds_query()) {
    if (!key->is_bounds_query())
      return 0;
    attn::externs::askForKeys(key, headDim, jb0 * 16, (jb0 + jbN) * 16, kvLen,
               tiles->dim[4], tiles->dim[5]);
    return 0;
  }
#ifdef ATTN_AMX
  if (attn_amx_unavailable_reason() || headDim % 32 != 0 || headDim > 256 ||
      key->dim[0].stride != 1 || tiles->dim[0].stride != 1 ||
      tiles->dim[1].stride != 2 || tiles->dim[2].stride != 32)
    return -1;
  if (kvLen > 0) // with no keys, no row reads K
    packKeys(key, kvLen, tiles);
  return 0;
#else
  (void)jb0, (void)jbN;
  return -1;
#endif
}

extern "C" __attribute__((weak)) int
attn_amx_pack_values(halide_buffer_t *value, int32_t kvLen,
                     halide_buffer_t *pairs) {
  using namespace attn::amx;
  const int headDim = pairs->dim[1].extent;
  if (value->is_bounds_query() || pairs->is_bounds_query()) {
    if (!value->is_bounds_query()) // see attn_amx_pack_keys
      return 0;
    attn::externs::askForKeys(value, headDim, 2 * pairs->dim[2].min,
               2 * (pairs->dim[2].min + pairs->dim[2].extent), kvLen,
               pairs->dim[3], pairs->dim[4]);
    return 0;
  }
#ifdef ATTN_AMX
  if (attn_amx_unavailable_reason() || headDim % 16 != 0 ||
      pairs->dim[1].min != 0 || value->dim[0].stride != 1 ||
      pairs->dim[0].stride != 1 || pairs->dim[1].stride != 2)
    return -1;
  if (kvLen > 0) // with no keys, no row reads V
    packValues(value, kvLen, pairs);
  return 0;
#else
  return -1;
#endif
}
