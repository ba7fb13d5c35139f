//===- Reference.h - attention in double precision, for tests ---*- C++ -*-===//

#ifndef ATTN_TEST_REFERENCE_H
#define ATTN_TEST_REFERENCE_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace attn::test {

struct AttentionShape {
  int batch, qLen, kvLen, queryHeads, kvHeads, headDim;
  bool causal;
  double scale;
  int window = 0; ///< > 0: sliding window of that many keys (implies causal)
  double softcap = 0;       ///< > 0: logit = softcap·tanh(logit/softcap)
  std::vector<float> alibi; ///< per query head slope, empty: no ALiBi
  /// Key padding: entry b sees only its first keyLengths[b] keys; empty:
  /// every key.
  std::vector<int> keyLengths;
  /// Per query head, a sink logit in every row's softmax denominator
  /// (gpt-oss's, as transformers concatenates it to the logits); empty:
  /// none.
  std::vector<float> sinks;
};

/// out[b][i][h][:] = softmax_j(scale · q·k_j, end-aligned causal mask) · v,
/// accumulated in double; a query that sees no key gives 0.
///   q, out: [batch][qLen][queryHeads][headDim]
///   k, v:   [batch][kvLen][kvHeads][headDim]
inline std::vector<double> referenceAttention(const AttentionShape &s,
                                              const float *q, const float *k,
                                              const float *v) {
  const int hq = s.queryHeads, hkv = s.kvHeads, dim = s.headDim;
  std::vector<double> out(size_t(s.batch) * s.qLen * hq * dim, 0.0);
  std::vector<double> score(s.kvLen);
  for (int b = 0; b < s.batch; b++)
    for (int i = 0; i < s.qLen; i++)
      for (int h = 0; h < hq; h++) {
        const int kvh = h / (hq / hkv);
        // Keys [first, visible): end-aligned causal, optionally windowed.
        int visible = s.causal || s.window > 0
                          ? std::clamp(i + 1 + s.kvLen - s.qLen, 0, s.kvLen)
                          : s.kvLen;
        const int first =
            s.window > 0 ? std::clamp(visible - s.window, 0, s.kvLen) : 0;
        if (!s.keyLengths.empty())
          visible = std::min(visible, std::clamp(s.keyLengths[b], 0, s.kvLen));
        const float *qi = q + ((size_t(b) * s.qLen + i) * hq + h) * dim;
        double maxScore = -INFINITY, sum = 0;
        for (int j = first; j < visible; j++) {
          const float *kj = k + ((size_t(b) * s.kvLen + j) * hkv + kvh) * dim;
          double dot = 0;
          for (int d = 0; d < dim; d++)
            dot += double(qi[d]) * kj[d];
          score[j] = dot * s.scale;
          if (s.softcap > 0)
            score[j] = s.softcap * std::tanh(score[j] / s.softcap);
          if (!s.alibi.empty()) // distance from the query's position
            score[j] += s.alibi[h] * double(j - (i + s.kvLen - s.qLen));
          maxScore = std::max(maxScore, score[j]);
        }
        // A sink joins the maximum and the sum, and adds no value.
        if (!s.sinks.empty() && visible > first)
          maxScore = std::max(maxScore, double(s.sinks[h]));
        if (!s.sinks.empty() && visible > first)
          sum += std::exp(double(s.sinks[h]) - maxScore);
        for (int j = first; j < visible; j++)
          sum += score[j] = std::exp(score[j] - maxScore);
        double *o = &out[((size_t(b) * s.qLen + i) * hq + h) * dim];
        for (int j = first; j < visible; j++) {
          const float *vj = v + ((size_t(b) * s.kvLen + j) * hkv + kvh) * dim;
          for (int d = 0; d < dim; d++)
            o[d] += score[j] / sum * vj[d];
        }
      }
  return out;
}

inline std::vector<float> randomVector(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (float &value : x)
    value = uniform(rng);
  return x;
}

/// Tolerance of attention with bf16 products (SdpaCompute::BF16) for
/// inputs uniform in [-1, 1]: u = 2^-9 is bf16's unit roundoff. Rounding V
/// moves an output by at most u (|v| <= 1); rounding P by at most 2u (each
/// weight within u, normalized by the sum of the rounded weights). Rounding Q
/// and K moves a logit by about 2u·scale·√D·rms(q_d·k_d) (D products with
/// independent rounding errors; rms 1/3 for these inputs), which moves the
/// output by about as much. 3u·(1 + scale·√D) covers both with margin:
/// 0.0117 at scale 1/√D; the worst case here (scale 0.3, D 256) measured
/// 0.009 against 0.034.
inline double bf16Tolerance(double scale, int headDim) {
  const double u = std::ldexp(1.0, -9);
  return 3 * u * (1 + scale * std::sqrt(double(headDim)));
}

inline double maxAbsError(const std::vector<float> &got,
                          const std::vector<double> &expected) {
  double error = 0;
  for (size_t x = 0; x < got.size(); x++) // NaN counts as infinitely wrong
    error = std::max(
        error, std::isnan(got[x]) ? INFINITY : std::fabs(got[x] - expected[x]));
  return error;
}

/// The largest |a - b| of two kernels' outputs (a NaN on either side counts
/// as infinitely wrong).
inline double maxDifference(const std::vector<float> &a,
                            const std::vector<float> &b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); i++)
    worst = std::max(worst, std::isnan(a[i]) || std::isnan(b[i])
                                ? INFINITY
                                : std::fabs(double(a[i]) - b[i]));
  return worst;
}

} // namespace attn::test

#endif // ATTN_TEST_REFERENCE_H
