//===- SdpaTest.cpp - generated attention kernels vs. a reference ---------===//
//
// Each attnc-generated kernel (one per description in descriptions/) runs on
// seeded random inputs over a matrix of batch sizes and sequence lengths,
// including length 1, odd lengths and decode shapes (q_len < kv_len), and is
// compared with a double-accumulation reference. A key-padding kernel masks
// each batch entry's keys past its length.
//
// Tolerance: 1e-5 absolute in fp32 (bf16 products: bf16Tolerance in
// Reference.h). Inputs are uniform in [-1, 1], so outputs
// are convex combinations of values in [-1, 1]; fp32 accumulation over at most
// a few hundred terms keeps the error near 1e-6, an order below the bound.
//
//===----------------------------------------------------------------------===//

#include "gqa_bf16.h"
#include "gqa_scaled.h"
#include "mha_causal.h"
#include "mqa_causal.h"
#include "odd_causal.h"
#include "padded.h"

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
using DecodeFn = int (*)(const float *, const float *, const float *,
                         const int32_t *, const int32_t *, float *, int32_t,
                         int32_t, int32_t, int32_t);

struct Kernel {
  std::string name;
  KernelFn run;
  DecodeFn decode; // over a contiguous cache of 4096-token pages
  int queryHeads, kvHeads, headDim;
  bool causal;
  double scale;
  bool bf16 = false; // prefill with bf16 products (compute_dtype bf16)

  double tolerance() const {
    return bf16 ? bf16Tolerance(scale, headDim) : 1e-5;
  }
};

std::ostream &operator<<(std::ostream &os, const Kernel &kernel) {
  return os << kernel.name;
}

const Kernel kKernels[] = {
    {"mha_causal", mha_causal_layer0_prefill, mha_causal_layer0_decode, 4, 4,
     64, true, 1.0 / 8.0},
    {"gqa_scaled", gqa_scaled_layer0_prefill, gqa_scaled_layer0_decode, 8, 2,
     80, false, 0.3},
    {"mqa_causal", mqa_causal_layer0_prefill, mqa_causal_layer0_decode, 6, 1,
     32, true, 1.0 / std::sqrt(32.0)},
    {"odd_causal", odd_causal_layer0_prefill, odd_causal_layer0_decode, 5, 5,
     13, true, 1.0 / std::sqrt(13.0)},
    {"gqa_bf16", gqa_bf16_layer0_prefill, gqa_bf16_layer0_decode, 8, 2, 96,
     true, 1.0 / std::sqrt(96.0), true},
};

struct Shape {
  int batch, qLen, kvLen;
};

class SdpaKernelTest : public testing::TestWithParam<Kernel> {};

TEST_P(SdpaKernelTest, MatchesDoubleReference) {
  const Kernel &kn = GetParam();
  const Shape shapes[] = {
      {1, 1, 1},       {1, 7, 7},   {2, 33, 33}, {3, 100, 100}, // prefill
      {1, 1, 57},      {2, 4, 129}, {1, 8, 300},                // decode
      {1, 13, 5},      {2, 31, 64},                             // q > kv, cross
      {1, 1030, 1030},                                          // many chunks
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
              kn.tolerance());
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

// Decoding the tokens of a sequence one at a time over the cache gives what
// prefill over the whole sequence gives for each row (the point of a KV
// cache), up to rounding: both are checked against the same reference at
// the kernel's tolerance (decode is fp32), so they agree within twice that.
TEST_P(SdpaKernelTest, DecodeStepsMatchPrefill) {
  const Kernel &kn = GetParam();
  const int batch = 2, length = 37, pageSize = 4096;
  const size_t row = size_t(kn.queryHeads) * kn.headDim;
  const size_t token = size_t(kn.kvHeads) * kn.headDim;
  std::mt19937 rng(99);
  std::vector<float> q = randomVector(batch * length * row, rng),
                     k = randomVector(batch * length * token, rng),
                     v = randomVector(batch * length * token, rng),
                     prefill(batch * length * row);
  ASSERT_EQ(kn.run(q.data(), k.data(), v.data(), prefill.data(), batch, length,
                   length),
            ATTNC_OK);
  // The cache: one page of 4096 tokens per sequence, holding its tokens.
  std::vector<float> keyPages(batch * pageSize * token, 0.0f),
      valuePages(batch * pageSize * token, 0.0f);
  for (int b = 0; b < batch; b++) {
    std::copy_n(&k[b * length * token], length * token,
                &keyPages[b * pageSize * token]);
    std::copy_n(&v[b * length * token], length * token,
                &valuePages[b * pageSize * token]);
  }
  const int32_t table[batch] = {0, 1};
  double maxDifference = 0;
  for (int t = 0; t < length; t++) {
    // Token t's query; causal layers have seen tokens 0..t, others all.
    std::vector<float> query(batch * row), out(batch * row, NAN);
    for (int b = 0; b < batch; b++)
      std::copy_n(&q[(b * length + t) * row], row, &query[b * row]);
    const int32_t seen = kn.causal ? t + 1 : length;
    const int32_t lengths[batch] = {seen, seen};
    ASSERT_EQ(kn.decode(query.data(), keyPages.data(), valuePages.data(), table,
                        lengths, out.data(), batch, 1, batch, 1),
              ATTNC_OK);
    for (int b = 0; b < batch; b++)
      for (size_t x = 0; x < row; x++)
        maxDifference =
            std::max(maxDifference,
                     double(std::fabs(out[b * row + x] -
                                      prefill[(b * length + t) * row + x])));
  }
  EXPECT_LE(maxDifference, 2 * kn.tolerance());
}

// Encoder self-attention over a padded batch: entry b has key_lengths[b]
// real tokens (all, none, some); the rest of its keys are padding.
TEST(SdpaKeyPaddingTest, MasksEachEntrysPaddedKeys) {
  static_assert(PADDED_PREFILL_H4_KV2_D48_KPAD_KEY_PADDING == 1,
                "the header says the kernel takes key lengths");
  std::mt19937 rng(11);
  for (int kvLen : {1, 7, 33, 300}) {
    SCOPED_TRACE(testing::Message() << "length " << kvLen);
    AttentionShape s{3, kvLen, kvLen, 4, 2, 48, false, 1.0 / std::sqrt(48.0)};
    s.keyLengths = {kvLen, 0, 1 + int(rng() % kvLen)};
    std::vector<float> q = randomVector(size_t(3) * kvLen * 4 * 48, rng);
    std::vector<float> k = randomVector(size_t(3) * kvLen * 2 * 48, rng);
    std::vector<float> v = randomVector(k.size(), rng);
    std::vector<float> out(q.size(), NAN);
    ASSERT_EQ(padded_layer0_prefill(q.data(), k.data(), v.data(),
                                    s.keyLengths.data(), out.data(), 3, kvLen,
                                    kvLen),
              ATTNC_OK);
    EXPECT_LE(
        maxAbsError(out, referenceAttention(s, q.data(), k.data(), v.data())),
        1e-5);
    // Lengths outside [0, kv_len] are clamped, not read past.
    std::vector<int32_t> wild = {-5, kvLen + 100, kvLen};
    ASSERT_EQ(padded_layer0_prefill(q.data(), k.data(), v.data(), wild.data(),
                                    out.data(), 3, kvLen, kvLen),
              ATTNC_OK);
    s.keyLengths = {0, kvLen, kvLen};
    EXPECT_LE(
        maxAbsError(out, referenceAttention(s, q.data(), k.data(), v.data())),
        1e-5);
    EXPECT_EQ(padded_layer0_prefill(q.data(), k.data(), v.data(), nullptr,
                                    out.data(), 3, kvLen, kvLen),
              ATTNC_INVALID_ARGUMENT);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, SdpaKernelTest, testing::ValuesIn(kKernels),
                         [](const auto &info) { return info.param.name; });

} // namespace
