//===- SdpaTest.cpp - generated attention kernels vs. a reference ---------===//
//
// Each attnc-generated kernel (one per description in descriptions/) runs on
// seeded random inputs over a matrix of batch sizes and sequence lengths,
// including length 1, odd lengths and decode shapes (q_len < kv_len), and is
// compared with a double-accumulation reference.
//
// Tolerance: 1e-5 absolute in fp32. Inputs are uniform in [-1, 1], so outputs
// are convex combinations of values in [-1, 1]; fp32 accumulation over at most
// a few hundred terms keeps the error near 1e-6, an order below the bound.
//
//===----------------------------------------------------------------------===//

#include "gqa_scaled.h"
#include "mha_causal.h"
#include "mqa_causal.h"
#include "odd_causal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using KernelFn = int (*)(const float *, const float *, const float *, float *,
                         int32_t, int32_t, int32_t);

struct Kernel {
  std::string name;
  KernelFn run;
  int queryHeads, kvHeads, headDim;
  bool causal;
  double scale;
};

std::ostream &operator<<(std::ostream &os, const Kernel &kernel) {
  return os << kernel.name;
}

const Kernel kKernels[] = {
    {"mha_causal", mha_causal_attention, 4, 4, 64, true, 1.0 / 8.0},
    {"gqa_scaled", gqa_scaled_attention, 8, 2, 80, false, 0.3},
    {"mqa_causal", mqa_causal_attention, 6, 1, 32, true, 1.0 / std::sqrt(32.0)},
    {"odd_causal", odd_causal_attention, 5, 5, 13, true, 1.0 / std::sqrt(13.0)},
};

/// out[b][i][h][:] = softmax_j(scale · q·k_j, end-aligned causal mask) · v,
/// all in double; a query that sees no key gives 0.
std::vector<double> reference(const Kernel &kn, const std::vector<float> &q,
                              const std::vector<float> &k,
                              const std::vector<float> &v, int batch, int qLen,
                              int kvLen) {
  const int hq = kn.queryHeads, hkv = kn.kvHeads, dim = kn.headDim;
  std::vector<double> out(size_t(batch) * qLen * hq * dim, 0.0), score(kvLen);
  for (int b = 0; b < batch; b++)
    for (int i = 0; i < qLen; i++)
      for (int h = 0; h < hq; h++) {
        const int kvh = h / (hq / hkv);
        const int visible =
            kn.causal ? std::min(kvLen, std::max(0, i + 1 + kvLen - qLen))
                      : kvLen;
        const float *qi = &q[((size_t(b) * qLen + i) * hq + h) * dim];
        double maxScore = -INFINITY, sum = 0;
        for (int j = 0; j < visible; j++) {
          const float *kj = &k[((size_t(b) * kvLen + j) * hkv + kvh) * dim];
          double dot = 0;
          for (int d = 0; d < dim; d++)
            dot += double(qi[d]) * kj[d];
          score[j] = dot * kn.scale;
          maxScore = std::max(maxScore, score[j]);
        }
        for (int j = 0; j < visible; j++)
          sum += score[j] = std::exp(score[j] - maxScore);
        double *o = &out[((size_t(b) * qLen + i) * hq + h) * dim];
        for (int j = 0; j < visible; j++) {
          const float *vj = &v[((size_t(b) * kvLen + j) * hkv + kvh) * dim];
          for (int d = 0; d < dim; d++)
            o[d] += score[j] / sum * vj[d];
        }
      }
  return out;
}

std::vector<float> randomVector(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (float &value : x)
    value = uniform(rng);
  return x;
}

struct Shape {
  int batch, qLen, kvLen;
};

class SdpaKernelTest : public testing::TestWithParam<Kernel> {};

TEST_P(SdpaKernelTest, MatchesDoubleReference) {
  const Kernel &kn = GetParam();
  const Shape shapes[] = {
      {1, 1, 1},  {1, 7, 7},   {2, 33, 33}, {3, 100, 100}, // prefill
      {1, 1, 57}, {2, 4, 129}, {1, 8, 300},                // decode
      {1, 13, 5}, {2, 31, 64},                             // q > kv, cross
  };
  std::mt19937 rng(1234);
  for (const Shape &s : shapes) {
    SCOPED_TRACE(testing::Message() << "batch " << s.batch << " q_len "
                                    << s.qLen << " kv_len " << s.kvLen);
    size_t nq = size_t(s.batch) * s.qLen * kn.queryHeads * kn.headDim;
    size_t nkv = size_t(s.batch) * s.kvLen * kn.kvHeads * kn.headDim;
    std::vector<float> q = randomVector(nq, rng), k = randomVector(nkv, rng),
                       v = randomVector(nkv, rng), out(nq, NAN);
    ASSERT_EQ(kn.run(q.data(), k.data(), v.data(), out.data(), s.batch, s.qLen,
                     s.kvLen),
              ATTNC_OK);
    std::vector<double> expected =
        reference(kn, q, k, v, s.batch, s.qLen, s.kvLen);
    double maxError = 0;
    for (size_t x = 0; x < nq; x++)
      maxError = std::max(maxError, std::fabs(out[x] - expected[x]));
    EXPECT_LE(maxError, 1e-5);
  }
}

TEST_P(SdpaKernelTest, RejectsInvalidArguments) {
  const Kernel &kn = GetParam();
  std::vector<float> buffer(size_t(kn.queryHeads) * kn.headDim * 4, 0.0f);
  float *p = buffer.data();
  EXPECT_EQ(kn.run(nullptr, p, p, p, 1, 1, 1), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(kn.run(p, p, p, nullptr, 1, 1, 1), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(kn.run(p, p, p, p, 0, 1, 1), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(kn.run(p, p, p, p, 1, -3, 1), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(kn.run(p, p, p, p, 1, 1, 0), ATTNC_INVALID_ARGUMENT);
  // Extents whose strides would overflow the kernel's 32-bit indexing.
  EXPECT_EQ(kn.run(p, p, p, p, 1 << 20, 1 << 20, 1), ATTNC_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Variants, SdpaKernelTest, testing::ValuesIn(kKernels),
                         [](const auto &info) { return info.param.name; });

} // namespace
