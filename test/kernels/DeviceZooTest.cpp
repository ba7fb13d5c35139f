//===- DeviceZooTest.cpp - every attention variant on a GPU API vs the CPU ===//
//
// descriptions/gpu_zoo.json: one layer per variant the GPU schedules have
// to get right — GQA with head_dim 40 (not a multiple of the 32-wide
// tiles), a sliding window, MQA with a logit softcap over a bf16 cache,
// ALiBi over an int8 cache with pages of 4 tokens, and key padding.
// Compiled with a CPU target and a GPU API (ATTN_GPU_API), the generated
// wrappers of both sets run on the same random inputs; the CPU kernels are
// checked against double references elsewhere (sdpa-test,
// sdpa-schedule-test, decode-test), so GPU = CPU within 2e-5 (fp32
// accumulation in both, different summation orders) checks the GPU set.
// Skips without a device of the API; CI runs the OpenCL build on PoCL.
//
//===----------------------------------------------------------------------===//

#include ATTN_ZOO_HEADER // <api>_zoo.h

#include "Reference.h"

#include "attn/runtime/DType.h"
#include "attn/runtime/DeviceProbe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <type_traits>

#define ATTN_STRING2(x) #x
#define ATTN_STRING(x) ATTN_STRING2(x)
#define ATTN_CAT3(a, b, c) a##b##c
#define ATTN_JOIN(a, b, c) ATTN_CAT3(a, b, c)
/// A layer's wrapper of the CPU set, and its GPU twin.
#define CPU(layer, what) ATTN_JOIN(ATTN_MODEL, _##layer##_, what)
#define GPU(layer, what) ATTN_JOIN(CPU(layer, what), _, ATTN_GPU_API)

using namespace attn::test;
using attn::DType;

namespace {

const std::string kApi = ATTN_STRING(ATTN_GPU_API);

class DeviceZooTest : public testing::Test {
protected:
  void SetUp() override {
    if (std::string why = attn::runtime::whyNoDevice(kApi); !why.empty())
      GTEST_SKIP() << why;
  }
};

using Prefill = int (*)(const float *, const float *, const float *, float *,
                        int32_t, int32_t, int32_t);

/// Prefill over (batch, q_len, kv_len) shapes, self and cross-shaped.
void checkPrefill(Prefill cpu, Prefill gpu, int hq, int hkv, int d) {
  std::mt19937 rng(hq * 100 + d);
  for (auto [batch, qLen, kvLen] :
       {std::tuple{1, 1, 1}, std::tuple{2, 37, 37}, std::tuple{1, 5, 100},
        std::tuple{1, 70, 70}}) {
    SCOPED_TRACE(testing::Message()
                 << batch << " x " << qLen << " over " << kvLen);
    std::vector<float> q = randomVector(size_t(batch) * qLen * hq * d, rng),
                       k = randomVector(size_t(batch) * kvLen * hkv * d, rng),
                       v = randomVector(k.size(), rng), a(q.size()),
                       b(q.size());
    ASSERT_EQ(cpu(q.data(), k.data(), v.data(), a.data(), batch, qLen, kvLen),
              ATTNC_OK);
    ASSERT_EQ(gpu(q.data(), k.data(), v.data(), b.data(), batch, qLen, kvLen),
              ATTNC_OK);
    EXPECT_LE(maxDifference(a, b), 2e-5);
  }
}

/// A paged decode case: `batch` sequences of ragged lengths over pages in
/// shuffled order; pools hold random values stored in `dtype`.
struct Pages {
  std::vector<float> query;
  std::vector<uint8_t> keys, values;         // [pages][pageSize][hkv][d] dtype
  std::vector<float> keyScales, valueScales; // int8: [pages][pageSize][hkv]
  std::vector<int32_t> table, lengths;
  int batch, maxPages, numPages;
};

Pages makePages(int hq, int hkv, int d, int pageSize, DType dtype,
                const std::vector<int32_t> &lengths) {
  std::mt19937 rng(d * 7 + pageSize);
  Pages p;
  p.batch = int(lengths.size());
  p.lengths = lengths;
  p.maxPages = 0;
  for (int32_t length : lengths)
    p.maxPages = std::max(p.maxPages, (length + pageSize - 1) / pageSize);
  p.numPages = p.batch * p.maxPages;
  std::vector<int32_t> order(p.numPages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  p.table = order; // [batch][maxPages]
  p.query = randomVector(size_t(p.batch) * hq * d, rng);
  const size_t rows = size_t(p.numPages) * pageSize * hkv;
  const size_t bytes = rows * d * (dtype == DType::I8 ? 1 : byteSize(dtype));
  p.keys.resize(bytes);
  p.values.resize(bytes);
  p.keyScales.resize(dtype == DType::I8 ? rows : 0);
  p.valueScales.resize(p.keyScales.size());
  for (auto [pool, scales] : {std::pair{&p.keys, &p.keyScales},
                              std::pair{&p.values, &p.valueScales}}) {
    for (size_t r = 0; r < rows; r++) {
      std::vector<float> row = randomVector(size_t(d), rng);
      if (dtype == DType::I8)
        (*scales)[r] = attn::runtime::quantizeRow(
            row.data(), reinterpret_cast<int8_t *>(pool->data()) + r * d, d);
      else
        attn::runtime::encode(dtype, row.data(),
                              pool->data() + r * d * byteSize(dtype), d);
    }
  }
  return p;
}

TEST_F(DeviceZooTest, PrefillGqaHeadDim40) {
  checkPrefill(CPU(layer0, prefill), GPU(layer0, prefill), 6, 2, 40);
}
TEST_F(DeviceZooTest, PrefillSlidingWindow) {
  checkPrefill(CPU(layer1, prefill), GPU(layer1, prefill), 4, 4, 64);
}
TEST_F(DeviceZooTest, PrefillMqaSoftcap) {
  checkPrefill(CPU(layer2, prefill), GPU(layer2, prefill), 8, 1, 80);
}
TEST_F(DeviceZooTest, PrefillAlibi) {
  checkPrefill(CPU(layer3, prefill), GPU(layer3, prefill), 4, 2, 32);
}

TEST_F(DeviceZooTest, PrefillKeyPadding) {
  std::mt19937 rng(3);
  const int hq = 4, hkv = 2, d = 48, batch = 3, qLen = 9, kvLen = 40;
  std::vector<float> q = randomVector(size_t(batch) * qLen * hq * d, rng),
                     k = randomVector(size_t(batch) * kvLen * hkv * d, rng),
                     v = randomVector(k.size(), rng), a(q.size()), b(q.size());
  const std::vector<int32_t> keyLengths = {40, 1, 0}; // 0: rows of zeros
  ASSERT_EQ(CPU(layer4, prefill)(q.data(), k.data(), v.data(),
                                 keyLengths.data(), a.data(), batch, qLen,
                                 kvLen),
            ATTNC_OK);
  ASSERT_EQ(GPU(layer4, prefill)(q.data(), k.data(), v.data(),
                                 keyLengths.data(), b.data(), batch, qLen,
                                 kvLen),
            ATTNC_OK);
  EXPECT_LE(maxDifference(a, b), 2e-5);
}

template <class Decode>
void checkDecode(Decode cpu, Decode gpu, int hq, int hkv, int d, int pageSize,
                 DType dtype) {
  const Pages p =
      makePages(hq, hkv, d, pageSize, dtype, {1, pageSize + 3, 200, 77});
  std::vector<float> a(p.query.size()), b(p.query.size());
  auto run = [&](Decode decode, std::vector<float> &out) {
    if constexpr (std::is_invocable_v<Decode, const float *, const int8_t *,
                                      const int8_t *, const float *,
                                      const float *, const int32_t *,
                                      const int32_t *, float *, int32_t,
                                      int32_t, int32_t, int32_t>)
      return decode(
          p.query.data(), reinterpret_cast<const int8_t *>(p.keys.data()),
          reinterpret_cast<const int8_t *>(p.values.data()), p.keyScales.data(),
          p.valueScales.data(), p.table.data(), p.lengths.data(), out.data(),
          p.batch, 1, p.numPages, p.maxPages);
    else if constexpr (std::is_invocable_v<
                           Decode, const float *, const uint16_t *,
                           const uint16_t *, const int32_t *, const int32_t *,
                           float *, int32_t, int32_t, int32_t, int32_t>)
      return decode(
          p.query.data(), reinterpret_cast<const uint16_t *>(p.keys.data()),
          reinterpret_cast<const uint16_t *>(p.values.data()), p.table.data(),
          p.lengths.data(), out.data(), p.batch, 1, p.numPages, p.maxPages);
    else
      return decode(
          p.query.data(), reinterpret_cast<const float *>(p.keys.data()),
          reinterpret_cast<const float *>(p.values.data()), p.table.data(),
          p.lengths.data(), out.data(), p.batch, 1, p.numPages, p.maxPages);
  };
  ASSERT_EQ(run(cpu, a), ATTNC_OK);
  ASSERT_EQ(run(gpu, b), ATTNC_OK);
  EXPECT_LE(maxDifference(a, b), 2e-5);
}

TEST_F(DeviceZooTest, DecodeF32) {
  checkDecode(CPU(layer0, decode), GPU(layer0, decode), 6, 2, 40, 16,
              DType::F32);
}
TEST_F(DeviceZooTest, DecodeSlidingWindowPagesOf8) {
  checkDecode(CPU(layer1, decode), GPU(layer1, decode), 4, 4, 64, 8,
              DType::F32);
}
TEST_F(DeviceZooTest, DecodeBf16Softcap) {
  checkDecode(CPU(layer2, decode), GPU(layer2, decode), 8, 1, 80, 16,
              DType::BF16);
}
TEST_F(DeviceZooTest, DecodeInt8AlibiPagesOf4) {
  checkDecode(CPU(layer3, decode), GPU(layer3, decode), 4, 2, 32, 4, DType::I8);
}

} // namespace
