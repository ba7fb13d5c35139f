//===- OnlineSoftmax.h - the micro-kernels' online softmax ------*- C++ -*-===//
//
// Private to the x86-64 object's attention micro-kernels (AmxAttention.cpp,
// Avx512Attention.cpp): one row's online-softmax step in AVX-512, in the
// log2 domain, with exp2Nonpositive's floor (AttentionParts.h): exactly 0
// below 2^-64, so no weight, product or sum is subnormal. AVX-512F only, so
// these inline into either kernel's functions.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_ONLINESOFTMAX_H
#define ATTN_SCHEDULES_ONLINESOFTMAX_H

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 11)
#define ATTN_ONLINE_SOFTMAX 1
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#define ATTN_AVX512F_CODE __attribute__((target("avx512f")))

namespace attn::softmax {

/// 2^x, exactly 0 where x < -64 and where `live` is clear (NaN stays NaN);
/// else 2^round(x) (vscalefps) times the Taylor polynomial of 2^f =
/// e^(f·ln2), |f| <= 0.5, of `degree`: 6 gives a relative error below 2e-7
/// (fp32 products), 4 below 5.6e-5 (3% of bf16's rounding).
template <int degree>
ATTN_AVX512F_CODE inline __m512 exp2Floor(__m512 x, __mmask16 live) {
  live &= _mm512_cmp_ps_mask(x, _mm512_set1_ps(-64.0f), _CMP_NLT_UQ);
  const __m512 whole =
      _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f =
      _mm512_mul_ps(_mm512_sub_ps(x, whole), _mm512_set1_ps(float(M_LN2)));
  float factorial = 1;
  for (int k = 2; k <= degree; k++)
    factorial *= float(k);
  __m512 p = _mm512_set1_ps(1.0f / factorial);
  for (int k = degree - 1; k >= 0; k--) {
    factorial /= float(k + 1);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / factorial));
  }
  return _mm512_maskz_scalef_ps(live, p, whole);
}

/// Lanes [a, e) of the 16 starting at j.
inline __mmask16 lanes(int j, int a, int e) {
  const int from = std::max(a - j, 0), to = std::min(e - j, 16);
  if (to <= from)
    return 0;
  return __mmask16(((1u << (to - from)) - 1) << from);
}

/// A row's running state after a chunk whose weights, taken at the row's
/// new maximum `newMax`, sum to `chunkSum`: the sum `l` and the output
/// accumulator `acc` [headDim] rescaled by 2^(m - newMax) (0 for the first
/// keys the row sees, m = -inf), then m = newMax.
ATTN_AVX512F_CODE inline void updateRow(float newMax, float chunkSum,
                                        float &m, float &l, float *acc,
                                        int headDim) {
  const float alpha =
      m == -INFINITY
          ? 0.0f
          : _mm512_cvtss_f32(exp2Floor<6>(_mm512_set1_ps(m - newMax), 1));
  l = l * alpha + chunkSum;
  m = newMax;
  if (alpha == 1.0f)
    return;
  const __m512 scale = _mm512_set1_ps(alpha);
  for (int d = 0; d < headDim; d += 16)
    _mm512_storeu_ps(acc + d, _mm512_mul_ps(_mm512_loadu_ps(acc + d), scale));
}

/// out[0, headDim) = acc / l; 0 for a row that saw no key (l = 0).
ATTN_AVX512F_CODE inline void writeRow(const float *acc, float l, float *out,
                                       int headDim) {
  const __m512 scale = _mm512_set1_ps(l > 0.0f ? 1.0f / l : 0.0f);
  for (int d = 0; d < headDim; d += 16)
    _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_loadu_ps(acc + d), scale));
}

} // namespace attn::softmax

#endif
#endif // ATTN_SCHEDULES_ONLINESOFTMAX_H
