//===- TargetVariantTest.cpp - every target variant of a library ----------===//
//
// attnc libraries hold one variant of each kernel per target (Sapphire
// Rapids, Skylake AVX-512, AVX2, SSE4.1) behind a wrapper that asks the
// Halide runtime which the CPU can use, once per process. This test hides
// CPU features before the first call (ATTN_TEST_HIDE=bf16, avx512 or avx,
// one ctest entry each), so the wrapper picks a lower variant, and checks it
// against the reference (1e-5, as in SdpaTest.cpp). A kernel with bf16
// products runs too: vdpbf16ps in the Sapphire Rapids variant, generic
// code in the others, the same answers within bf16Tolerance.
//
//===----------------------------------------------------------------------===//

#include "gqa_bf16.h"
#include "gqa_scaled.h"

#include "Reference.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace attn::test;

namespace {

std::vector<int> gHiddenFeatures;

int canUseTargetFeatures(int count, const uint64_t *features) {
  for (int f : gHiddenFeatures)
    if (f / 64 < count && (features[f / 64] >> (f % 64)) & 1)
      return 0;
  return halide_default_can_use_target_features(count, features);
}

TEST(TargetVariant, MatchesReference) {
  std::string hide =
      std::getenv("ATTN_TEST_HIDE") ? std::getenv("ATTN_TEST_HIDE") : "";
  gHiddenFeatures = {halide_target_feature_avx512_sapphirerapids};
  if (hide != "bf16")
    gHiddenFeatures = {halide_target_feature_avx512,
                       halide_target_feature_avx512_skylake,
                       halide_target_feature_avx512_cannonlake,
                       halide_target_feature_avx512_sapphirerapids};
  if (hide == "avx")
    for (int f : {halide_target_feature_avx, halide_target_feature_avx2,
                  halide_target_feature_fma, halide_target_feature_f16c})
      gHiddenFeatures.push_back(f);
  else if (hide != "avx512" && hide != "bf16")
    gHiddenFeatures.clear();
  halide_set_custom_can_use_target_features(canUseTargetFeatures);

  const int hq = GQA_SCALED_PREFILL_H8_KV2_D80_NUM_QUERY_HEADS,
            hkv = GQA_SCALED_PREFILL_H8_KV2_D80_NUM_KV_HEADS,
            dim = GQA_SCALED_PREFILL_H8_KV2_D80_HEAD_DIM;
  AttentionShape shape{2, 45, 70, hq, hkv, dim, false, 0.3};
  std::mt19937 rng(5);
  std::vector<float> q = randomVector(size_t(2) * 45 * hq * dim, rng),
                     k = randomVector(size_t(2) * 70 * hkv * dim, rng),
                     v = randomVector(size_t(2) * 70 * hkv * dim, rng),
                     out(q.size(), NAN);
  ASSERT_EQ(gqa_scaled_layer0_prefill(q.data(), k.data(), v.data(), out.data(),
                                      2, 45, 70),
            ATTNC_OK);
  EXPECT_LE(
      maxAbsError(out, referenceAttention(shape, q.data(), k.data(), v.data())),
      1e-5);

  const int bf16Heads =
                GQA_BF16_PREFILL_H8_KV2_D96_BF16C_CAUSAL_NUM_QUERY_HEADS,
            bf16KvHeads = GQA_BF16_PREFILL_H8_KV2_D96_BF16C_CAUSAL_NUM_KV_HEADS,
            bf16Dim = GQA_BF16_PREFILL_H8_KV2_D96_BF16C_CAUSAL_HEAD_DIM;
  AttentionShape bf16Shape{2,           33,      33,   bf16Heads,
                           bf16KvHeads, bf16Dim, true, 1 / std::sqrt(96.0)};
  std::vector<float> bq = randomVector(size_t(2) * 33 * bf16Heads * bf16Dim,
                                       rng),
                     bk = randomVector(size_t(2) * 33 * bf16KvHeads * bf16Dim,
                                       rng),
                     bv = randomVector(bk.size(), rng), bout(bq.size(), NAN);
  ASSERT_EQ(gqa_bf16_layer0_prefill(bq.data(), bk.data(), bv.data(),
                                    bout.data(), 2, 33, 33),
            ATTNC_OK);
  EXPECT_LE(maxAbsError(bout, referenceAttention(bf16Shape, bq.data(),
                                                 bk.data(), bv.data())),
            bf16Tolerance(bf16Shape.scale, bf16Dim));
}

} // namespace
