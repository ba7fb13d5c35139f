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

#include "Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace attn::test;

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
    AttentionShape shape{s.batch,    s.qLen,     s.kvLen,   kn.queryHeads,
                         kn.kvHeads, kn.headDim, kn.causal, kn.scale};
    EXPECT_LE(maxAbsError(
                  out, referenceAttention(shape, q.data(), k.data(), v.data())),
              1e-5);
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
