//===- DeviceLibraryTest.cpp - an attnc GPU library against its CPU kernels
//===//
//
// attnc --target=x86-64-avx2,cuda (or ,opencl) puts CPU kernels and their
// GPU twins in one library (descriptions/gqa_scaled.json: GQA 8/2,
// head_dim 80, scale 0.3, prefill and a contiguous-cache decode). The
// generated C wrappers of both sets run on the same random inputs; outputs
// must agree to 2e-5 (each is within 1e-5 of a double reference for fp32
// attention over O(1) inputs, SdpaTest and GpuNumericsTest; they differ in
// summation order only). Built once per GPU API: ATTN_GPU_API is cuda or
// opencl, ATTN_MODEL the generated model's name. Without a device the test
// skips, saying why; the GPU wrapper itself must then report
// ATTNC_NO_DEVICE_DRIVER, not abort. CI runs the OpenCL build on PoCL's
// CPU device.
//
//===----------------------------------------------------------------------===//

#define ATTN_STRING2(x) #x
#define ATTN_STRING(x) ATTN_STRING2(x)
#define ATTN_CAT3(a, b, c) a##b##c
#define ATTN_JOIN(a, b, c) ATTN_CAT3(a, b, c)
#include ATTN_STRING(ATTN_MODEL.h)

#include "Reference.h"

#include "attn/runtime/DeviceProbe.h"

#include <gtest/gtest.h>

#include <tuple>

/// A wrapper of the CPU set, and its GPU twin.
#define CPU(name) ATTN_JOIN(ATTN_MODEL, _, name)
#define GPU(name) ATTN_JOIN(CPU(name), _, ATTN_GPU_API)

using namespace attn::test;

namespace {

constexpr int kQueryHeads = 8, kKvHeads = 2, kHeadDim = 80;

const char *const kApi = ATTN_STRING(ATTN_GPU_API);

/// Skips with the reason when no device of the API can run kernels here.
#define SKIP_WITHOUT_DEVICE()                                                  \
  if (std::string why = attn::runtime::whyNoDevice(kApi); !why.empty())        \
  GTEST_SKIP() << why

TEST(DeviceLibraryTest, WithoutADriverTheWrapperSaysSo) {
  if (attn::runtime::whyNoDevice(kApi).rfind("no ", 0) != 0 ||
      attn::runtime::whyNoDevice(kApi).find(".so.1 not found") ==
          std::string::npos)
    GTEST_SKIP() << "a driver is present";
  std::vector<float> q(kQueryHeads * kHeadDim), k(kKvHeads * kHeadDim),
      out(q.size());
  EXPECT_EQ(
      GPU(layer0_prefill)(q.data(), k.data(), k.data(), out.data(), 1, 1, 1),
      ATTNC_NO_DEVICE_DRIVER);
}

TEST(DeviceLibraryTest, PrefillMatchesTheCpuKernel) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng(5);
  for (auto [batch, qLen, kvLen] :
       {std::tuple{1, 1, 1}, std::tuple{2, 37, 37}, std::tuple{1, 7, 300}}) {
    std::vector<float> q = randomVector(
                           size_t(batch) * qLen * kQueryHeads * kHeadDim, rng),
                       k = randomVector(
                           size_t(batch) * kvLen * kKvHeads * kHeadDim, rng),
                       v = randomVector(k.size(), rng), cpu(q.size()),
                       gpu(q.size());
    ASSERT_EQ(CPU(layer0_prefill)(q.data(), k.data(), v.data(), cpu.data(),
                                  batch, qLen, kvLen),
              ATTNC_OK);
    ASSERT_EQ(GPU(layer0_prefill)(q.data(), k.data(), v.data(), gpu.data(),
                                  batch, qLen, kvLen),
              ATTNC_OK);
    EXPECT_LE(maxDifference(cpu, gpu), 2e-5)
        << batch << " x " << qLen << " over " << kvLen;
  }
}

TEST(DeviceLibraryTest, DecodeMatchesTheCpuKernel) {
  SKIP_WITHOUT_DEVICE();
  // A contiguous cache: one page of max length per sequence.
  const int pageSize = 4096;
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
  ASSERT_EQ(CPU(layer0_decode)(q.data(), keys.data(), values.data(),
                               table.data(), lengths.data(), cpu.data(), batch,
                               1, batch, 1),
            ATTNC_OK);
  ASSERT_EQ(GPU(layer0_decode)(q.data(), keys.data(), values.data(),
                               table.data(), lengths.data(), gpu.data(), batch,
                               1, batch, 1),
            ATTNC_OK);
  EXPECT_LE(maxDifference(cpu, gpu), 2e-5);
}

} // namespace
