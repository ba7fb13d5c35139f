//===- CudaLibraryTest.cpp - an attnc CUDA library against its CPU kernels ===//
//
// attnc --target=x86-64-avx2,cuda puts CPU kernels and their CUDA twins in
// one library (descriptions/gqa_scaled.json: GQA 8/2, head_dim 80, scale
// 0.3, prefill and a contiguous-cache decode). The generated C wrappers of
// both sets run on the same random inputs; outputs must agree to 2e-5 (each
// is within 1e-5 of a double reference for fp32 attention over O(1) inputs,
// SdpaTest and GpuNumericsTest; they differ in summation order only).
// Without a CUDA device the test skips, saying why; the CUDA wrapper itself
// must then report ATTNC_NO_CUDA_DRIVER, not abort.
//
//===----------------------------------------------------------------------===//

#include "cuda_gqa.h"

#include "Reference.h"

#include "attn/schedules/CudaDevice.h"

#include <gtest/gtest.h>

#include <tuple>

using namespace attn::test;

namespace {

constexpr int kQueryHeads = 8, kKvHeads = 2, kHeadDim = 80;

double maxDifference(const std::vector<float> &a, const std::vector<float> &b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); i++)
    worst = std::max(worst, std::isnan(a[i]) || std::isnan(b[i])
                                ? INFINITY
                                : std::fabs(double(a[i]) - b[i]));
  return worst;
}

/// Skips with the reason when no CUDA device can run kernels here.
#define SKIP_WITHOUT_CUDA_DEVICE()                                             \
  if (std::string why = attn::whyNoCudaDevice(); !why.empty())                 \
  GTEST_SKIP() << why

TEST(CudaLibraryTest, WithoutADriverTheWrapperSaysSo) {
  if (attn::whyNoCudaDevice().rfind("no CUDA driver", 0) != 0)
    GTEST_SKIP() << "a CUDA driver is present";
  std::vector<float> q(kQueryHeads * kHeadDim), k(kKvHeads * kHeadDim),
      out(q.size());
  EXPECT_EQ(cuda_gqa_layer0_prefill_cuda(q.data(), k.data(), k.data(),
                                         out.data(), 1, 1, 1),
            ATTNC_NO_CUDA_DRIVER);
}

TEST(CudaLibraryTest, PrefillMatchesTheCpuKernel) {
  SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(5);
  for (auto [batch, qLen, kvLen] :
       {std::tuple{1, 1, 1}, std::tuple{2, 37, 37}, std::tuple{1, 7, 300}}) {
    std::vector<float> q = randomVector(
                           size_t(batch) * qLen * kQueryHeads * kHeadDim, rng),
                       k = randomVector(
                           size_t(batch) * kvLen * kKvHeads * kHeadDim, rng),
                       v = randomVector(k.size(), rng), cpu(q.size()),
                       gpu(q.size());
    ASSERT_EQ(cuda_gqa_layer0_prefill(q.data(), k.data(), v.data(), cpu.data(),
                                      batch, qLen, kvLen),
              ATTNC_OK);
    ASSERT_EQ(cuda_gqa_layer0_prefill_cuda(q.data(), k.data(), v.data(),
                                           gpu.data(), batch, qLen, kvLen),
              ATTNC_OK);
    EXPECT_LE(maxDifference(cpu, gpu), 2e-5)
        << batch << " x " << qLen << " over " << kvLen;
  }
}

TEST(CudaLibraryTest, DecodeMatchesTheCpuKernel) {
  SKIP_WITHOUT_CUDA_DEVICE();
  // A contiguous cache: one page of max length per sequence.
  const int pageSize = CUDA_GQA_DECODE_H8_KV2_D80_P4096_PAGE_SIZE;
  const std::vector<int32_t> lengths = {1, 700, 4096};
  const int batch = int(lengths.size());
  std::mt19937 rng(9);
  std::vector<float> q = randomVector(size_t(batch) * kQueryHeads * kHeadDim,
                                      rng),
                     keys = randomVector(
                         size_t(batch) * pageSize * kKvHeads * kHeadDim, rng),
                     values = randomVector(keys.size(), rng), cpu(q.size()),
                     gpu(q.size());
  std::vector<int32_t> table = {2, 0, 1}; // pages out of order
  ASSERT_EQ(cuda_gqa_layer0_decode(q.data(), keys.data(), values.data(),
                                   table.data(), lengths.data(), cpu.data(),
                                   batch, 1, batch, 1),
            ATTNC_OK);
  ASSERT_EQ(cuda_gqa_layer0_decode_cuda(q.data(), keys.data(), values.data(),
                                        table.data(), lengths.data(),
                                        gpu.data(), batch, 1, batch, 1),
            ATTNC_OK);
  EXPECT_LE(maxDifference(cpu, gpu), 2e-5);
}

} // namespace
