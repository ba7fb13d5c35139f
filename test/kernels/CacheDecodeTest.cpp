//===- CacheDecodeTest.cpp - generated decode kernels over KvCache --------===//
//
// The path an application takes: attnc generated decode kernels for f16,
// bf16 and int8 paged caches (descriptions/half_cache.json); libattn_runtime's
// KvCache stores K and V in those pages; the generated C function reads them
// through the cache's block tables. Compared with the double reference over
// the values as stored (1e-5: the kernel computes in fp32 on exactly those).
//
//===----------------------------------------------------------------------===//

#include "half_cache.h"

#include "Reference.h"

#include "attn/runtime/KvCache.h"

#include <gtest/gtest.h>

#include <functional>

using namespace attn::test;
using namespace attn::runtime;

namespace {

/// Calls a generated decode wrapper on `cache`'s layer 0: (query, table,
/// seq_lens, out, batch, q_len, num_pages, max_pages).
using DecodeCall = std::function<int(const KvCache &, const float *,
                                     const int32_t *, const int32_t *, float *,
                                     int32_t, int32_t, int32_t, int32_t)>;

/// A wrapper taking 16-bit pages.
template <class Fn> DecodeCall halfCall(Fn decode) {
  return [decode](const KvCache &cache, const float *q, const int32_t *table,
                  const int32_t *lengths, float *out, int32_t batch,
                  int32_t qLen, int32_t pages, int32_t maxPages) {
    return decode(q, static_cast<const uint16_t *>(cache.keyPages(0)),
                  static_cast<const uint16_t *>(cache.valuePages(0)), table,
                  lengths, out, batch, qLen, pages, maxPages);
  };
}

void checkLayer(DType dtype, const DecodeCall &decode) {
  const int hq = 8, hkv = 2, dim = 64, pageSize = 16, maxLength = 1024;
  const int qLen = 3;
  const std::vector<int> lengths = {5, 700, 64};
  KvCacheConfig config;
  config.numLayers = 1;
  config.numKvHeads = hkv;
  config.headDim = dim;
  config.dtype = dtype;
  config.pageSize = pageSize;
  config.numPages = 3 * maxLength / pageSize;
  config.maxSequenceLength = maxLength;
  KvCache cache;
  ASSERT_TRUE(KvCache::create(config, cache));

  std::mt19937 rng(17);
  const int batch = int(lengths.size()), maxPages = maxLength / pageSize;
  std::vector<SequenceId> ids;
  std::vector<int32_t> table(size_t(batch) * maxPages, 0), seqLens;
  for (int length : lengths) {
    SequenceId id;
    ASSERT_TRUE(cache.addSequence(id));
    ASSERT_TRUE(cache.extend(id, length));
    std::vector<float> k = randomVector(size_t(length) * hkv * dim, rng),
                       v = randomVector(k.size(), rng);
    ASSERT_TRUE(cache.write(id, 0, 0, length, k.data(), v.data()));
    const std::vector<int32_t> &pages = *cache.blockTable(id);
    std::copy(pages.begin(), pages.end(), &table[ids.size() * maxPages]);
    seqLens.push_back(length);
    ids.push_back(id);
  }
  const size_t row = size_t(qLen) * hq * dim;
  std::vector<float> query = randomVector(batch * row, rng),
                     out(batch * row, NAN);
  ASSERT_EQ(decode(cache, query.data(), table.data(), seqLens.data(),
                   out.data(), batch, qLen, config.numPages, maxPages),
            ATTNC_OK);
  for (int b = 0; b < batch; b++) {
    SCOPED_TRACE(testing::Message() << dtypeName(dtype) << " sequence " << b);
    std::vector<float> k(size_t(lengths[b]) * hkv * dim), v(k.size());
    ASSERT_TRUE(cache.read(ids[b], 0, 0, lengths[b], k.data(), v.data()));
    AttentionShape shape{1, qLen, lengths[b], hq, hkv, dim, true, 1.0 / 8.0};
    std::vector<double> expected =
        referenceAttention(shape, &query[b * row], k.data(), v.data());
    std::vector<float> got(out.begin() + b * row, out.begin() + (b + 1) * row);
    EXPECT_LE(maxAbsError(got, expected), 1e-5);
  }
}

TEST(CacheDecode, F16PagedCache) {
  checkLayer(DType::F16, halfCall(half_cache_layer0_decode));
}

TEST(CacheDecode, BF16PagedCache) {
  checkLayer(DType::BF16, halfCall(half_cache_layer1_decode));
}

TEST(CacheDecode, Int8PagedCacheWithScales) {
  checkLayer(DType::I8,
             [](const KvCache &cache, const float *q, const int32_t *table,
                const int32_t *lengths, float *out, int32_t batch, int32_t qLen,
                int32_t pages, int32_t maxPages) {
               return half_cache_layer2_decode(
                   q, static_cast<const int8_t *>(cache.keyPages(0)),
                   static_cast<const int8_t *>(cache.valuePages(0)),
                   cache.keyScales(0), cache.valueScales(0), table, lengths,
                   out, batch, qLen, pages, maxPages);
             });
}

} // namespace
