//===- KvCacheTest.cpp - paged KV cache: semantics, errors, stress --------===//

#include "attn/runtime/KvCache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

using namespace attn::runtime;

namespace {

KvCacheConfig paged(int pageSize, int numPages, int maxLength,
                    DType dtype = DType::F32) {
  KvCacheConfig config;
  config.numLayers = 2;
  config.numKvHeads = 2;
  config.headDim = 3;
  config.dtype = dtype;
  config.pageSize = pageSize;
  config.numPages = numPages;
  config.maxSequenceLength = maxLength;
  return config;
}

/// Token t of a sequence: K = t + element/10, V = -K (exact in every dtype
/// for small t).
std::vector<float> tokenValues(int first, int count, int elements, float sign) {
  std::vector<float> values(size_t(count) * elements);
  for (int t = 0; t < count; t++)
    for (int e = 0; e < elements; e++)
      values[size_t(t) * elements + e] = sign * (first + t + e * 0.25f);
  return values;
}

TEST(DType, RoundTripsWithinItsPrecision) {
  const float samples[] = {0.0f,  -0.0f,    1.0f,  -2.5f,    3.14159f,
                           1e-3f, 65504.0f, 1e-6f, -7.0e-5f, 123.456f};
  for (DType type : {DType::F32, DType::F16, DType::BF16}) {
    // Relative precision: half an ulp of a 23, 10 or 7 bit mantissa; f16
    // subnormals (below 2^-14) have an absolute step of 2^-24.
    double relative = type == DType::F32   ? 0
                      : type == DType::F16 ? 0x1p-11
                                           : 0x1p-8;
    double absolute = type == DType::F16 ? 0x1p-25 : 0;
    for (float x : samples) {
      uint32_t storage = 0;
      float back = NAN;
      encode(type, &x, &storage, 1);
      decode(type, &storage, &back, 1);
      EXPECT_LE(std::fabs(back - x), relative * std::fabs(x) + absolute)
          << dtypeName(type) << " " << x;
    }
  }
  float huge = 1e6f, nan = NAN, back = 0;
  uint16_t h;
  encode(DType::F16, &huge, &h, 1);
  decode(DType::F16, &h, &back, 1);
  EXPECT_TRUE(std::isinf(back));
  encode(DType::BF16, &nan, &h, 1);
  decode(DType::BF16, &h, &back, 1);
  EXPECT_TRUE(std::isnan(back));
}

TEST(DType, Int8RowsKeepHalfAStepOfTheirScale) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float magnitude : {1e-3f, 1.0f, 300.0f}) {
    std::vector<float> row(37), back(37);
    for (float &x : row)
      x = magnitude * uniform(rng);
    row[5] = -2 * magnitude; // the largest magnitude lands exactly on -127
    std::vector<int8_t> q(37);
    float scale = quantizeRow(row.data(), q.data(), row.size());
    EXPECT_EQ(scale, 2 * magnitude / 127.0f);
    EXPECT_EQ(q[5], -127);
    dequantizeRow(q.data(), scale, back.data(), row.size());
    for (size_t i = 0; i < row.size(); i++)
      EXPECT_LE(std::fabs(back[i] - row[i]), 0.5001f * scale) << i;
  }
  float zeros[4] = {}, bad[3] = {NAN, INFINITY, 1.0f};
  int8_t q[4];
  EXPECT_EQ(quantizeRow(zeros, q, 4), 0.0f);
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(quantizeRow(bad, q, 3), 1.0f / 127.0f); // finite values only
  EXPECT_EQ(q[0], 0);                               // NaN: 0, not UB
  EXPECT_EQ(q[1], 127);                             // inf saturates
}

TEST(KvCache, Int8PagesKeepTheirScalesThroughForks) {
  KvCache cache;
  ASSERT_TRUE(KvCache::create(paged(2, 8, 16, DType::I8), cache));
  EXPECT_EQ(cache.config().bytesPerToken(), 2u * 2 * 2 * (3 + 4));
  EXPECT_EQ(cache.poolBytes(), 16 * cache.config().bytesPerToken());
  SequenceId parent, child;
  ASSERT_TRUE(cache.addSequence(parent));
  ASSERT_TRUE(cache.extend(parent, 3));
  auto k = tokenValues(1, 3, 6, 1), v = tokenValues(1, 3, 6, -1);
  ASSERT_TRUE(cache.write(parent, 1, 0, 3, k.data(), v.data()));
  ASSERT_TRUE(cache.fork(parent, child));
  auto k2 = tokenValues(50, 1, 6, 1);
  ASSERT_TRUE(cache.write(child, 1, 2, 1, k2.data(), k2.data()));
  for (auto [id, expected] : {std::pair{parent, k[12]}, {child, k2[0]}}) {
    std::vector<float> keys(18), values(18);
    ASSERT_TRUE(cache.read(id, 1, 0, 3, keys.data(), values.data()));
    // Each head row of 3 values: within half a step of max|row| / 127.
    for (int i = 0; i < 18; i++) {
      float truth = i < 12 ? k[i] : (id == parent ? k[i] : k2[i - 12]);
      float largest = 0;
      for (int e = i / 3 * 3; e < i / 3 * 3 + 3; e++)
        largest = std::max(
            largest, std::fabs(i < 12 || id == parent ? k[e] : k2[e - 12]));
      EXPECT_LE(std::fabs(keys[i] - truth), 0.5001f * largest / 127) << i;
    }
    EXPECT_NEAR(keys[12], expected, 0.5001f * std::fabs(expected) / 100);
  }
  ASSERT_NE(cache.keyScales(1), nullptr);
  EXPECT_EQ(cache.keyScales(0)[0], 0.0f); // layer 0 never written
  ASSERT_TRUE(cache.checkInvariants());
}

// A cache whose values are its keys (latent attention's rows): half the
// bytes, null values written, the keys read back as the values, the pools'
// values the keys' (scales too), and copy-on-write as for any cache.
TEST(KvCache, KeysOnlyCachesKeepNoValues) {
  for (DType dtype : {DType::F32, DType::BF16, DType::I8}) {
    SCOPED_TRACE(dtypeName(dtype));
    KvCacheConfig config = paged(2, 8, 16, dtype);
    config.keysOnly = true;
    KvCache cache;
    ASSERT_TRUE(KvCache::create(config, cache));
    EXPECT_EQ(config.bytesPerToken(),
              size_t(2 * 2 * (3 * byteSize(dtype) + scaleBytes(dtype))));
    EXPECT_EQ(cache.poolBytes(), 16 * config.bytesPerToken());
    SequenceId parent, child;
    ASSERT_TRUE(cache.addSequence(parent));
    ASSERT_TRUE(cache.extend(parent, 3));
    auto k = tokenValues(1, 3, 6, 1);
    ASSERT_TRUE(cache.write(parent, 1, 0, 3, k.data(), nullptr));
    ASSERT_TRUE(cache.fork(parent, child));
    auto k2 = tokenValues(50, 1, 6, 1);
    ASSERT_TRUE(cache.write(child, 1, 2, 1, k2.data(), nullptr));
    for (SequenceId id : {parent, child}) {
      std::vector<float> keys(18), values(18, -1.0f);
      ASSERT_TRUE(cache.read(id, 1, 0, 3, keys.data(), values.data()));
      EXPECT_EQ(keys, values);
      for (int i = 0; i < 18; i++) {
        const float truth = i >= 12 && id == child ? k2[i - 12] : k[i];
        EXPECT_NEAR(keys[i], truth, 0.01f * std::fabs(truth) + 1e-6f) << i;
      }
      std::vector<float> only(18);
      ASSERT_TRUE(cache.read(id, 1, 0, 3, only.data(), nullptr));
      EXPECT_EQ(only, keys);
    }
    const KvCache::LayerPools pools = cache.pools(1);
    EXPECT_EQ(pools.values.data, pools.keys.data);
    EXPECT_EQ(pools.valueScales.data, pools.keyScales.data);
    EXPECT_EQ(cache.valuePages(1), cache.keyPages(1));
    EXPECT_EQ(cache.valueScales(1), cache.keyScales(1));
    ASSERT_TRUE(cache.checkInvariants());
  }
  // A cache with values still needs them.
  KvCache cache;
  ASSERT_TRUE(KvCache::create(paged(2, 8, 16), cache));
  SequenceId id;
  ASSERT_TRUE(cache.addSequence(id));
  ASSERT_TRUE(cache.extend(id, 1));
  auto k = tokenValues(1, 1, 6, 1);
  EXPECT_EQ(cache.write(id, 0, 0, 1, k.data(), nullptr).code(),
            StatusCode::InvalidArgument);
}

TEST(KvCache, RejectsBadConfigs) {
  KvCache cache;
  KvCacheConfig config = paged(4, 8, 32);
  config.pageSize = 0;
  EXPECT_EQ(KvCache::create(config, cache).code(), StatusCode::InvalidArgument);
  config = paged(4, 8, 32);
  config.numKvHeads = -1;
  EXPECT_EQ(KvCache::create(config, cache).code(), StatusCode::InvalidArgument);
  // Absurd layer counts are refused before any per-layer bookkeeping is
  // allocated (2^31 - 1 layers asked for 48 GiB of it; an ASan build
  // aborted there).
  config = paged(4, 8, 32);
  config.numLayers = std::numeric_limits<int>::max();
  Status layers = KvCache::create(config, cache);
  EXPECT_EQ(layers.code(), StatusCode::InvalidArgument);
  EXPECT_NE(layers.message().find("2147483647 layers exceed the 65536"),
            std::string::npos)
      << layers.message();
  // int4 is a weight type: no cache stores it.
  config = paged(4, 8, 32, DType::I4);
  Status s = KvCache::create(config, cache);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("dtype i4 is a weight type"), std::string::npos)
      << s.message();
}

TEST(KvCache, AccountingMatchesTheFormula) {
  KvCache cache;
  ASSERT_TRUE(KvCache::create(paged(4, 8, 32, DType::F16), cache));
  // 2 · layers · KV heads · head size · bytes
  EXPECT_EQ(cache.config().bytesPerToken(), size_t(2 * 2 * 2 * 3 * 2));
  EXPECT_EQ(cache.poolBytes(), cache.config().bytesPerToken() * 4 * 8);
  EXPECT_EQ(cache.freePages(), 8);
}

// The same writes through a contiguous and a paged cache read back the same.
TEST(KvCache, PagedAndContiguousHoldTheSameData) {
  for (DType type : {DType::F32, DType::F16, DType::BF16}) {
    KvCache contiguous, pagedCache;
    ASSERT_TRUE(KvCache::create(KvCacheConfig::contiguous(2, 2, 3, type, 50, 2),
                                contiguous));
    ASSERT_TRUE(KvCache::create(paged(3, 40, 50, type), pagedCache));
    for (KvCache *cache : {&contiguous, &pagedCache}) {
      SequenceId a, b;
      ASSERT_TRUE(cache->addSequence(a));
      ASSERT_TRUE(cache->addSequence(b));
      for (auto [id, length] : {std::pair{a, 17}, std::pair{b, 50}}) {
        ASSERT_TRUE(cache->extend(id, length));
        for (int layer = 0; layer < 2; layer++) {
          auto k = tokenValues(layer, length, 6, 1),
               v = tokenValues(layer, length, 6, -1);
          ASSERT_TRUE(cache->write(id, layer, 0, length, k.data(), v.data()));
        }
      }
      ASSERT_TRUE(cache->checkInvariants());
    }
    for (SequenceId id : {0, 1})
      for (int layer = 0; layer < 2; layer++) {
        int n = contiguous.length(id);
        ASSERT_EQ(n, pagedCache.length(id));
        std::vector<float> k1(n * 6), v1(n * 6), k2(n * 6), v2(n * 6);
        ASSERT_TRUE(contiguous.read(id, layer, 0, n, k1.data(), v1.data()));
        ASSERT_TRUE(pagedCache.read(id, layer, 0, n, k2.data(), v2.data()));
        EXPECT_EQ(k1, k2);
        EXPECT_EQ(v1, v2);
        EXPECT_EQ(k1, tokenValues(layer, n, 6, 1)) << dtypeName(type);
      }
  }
}

TEST(KvCache, ForkSharesPagesAndCopiesOnWrite) {
  KvCache cache;
  ASSERT_TRUE(KvCache::create(paged(4, 16, 64), cache));
  SequenceId parent, child;
  ASSERT_TRUE(cache.addSequence(parent));
  ASSERT_TRUE(cache.extend(parent, 6)); // pages: 4 full + 2 of a partial page
  auto k = tokenValues(0, 6, 6, 1), v = tokenValues(0, 6, 6, -1);
  ASSERT_TRUE(cache.write(parent, 0, 0, 6, k.data(), v.data()));
  ASSERT_TRUE(cache.fork(parent, child));
  EXPECT_EQ(cache.usedPages(), 2);
  EXPECT_EQ(*cache.blockTable(child), *cache.blockTable(parent));

  // The child diverges at position 6, in the shared partial page.
  ASSERT_TRUE(cache.extend(child, 1));
  auto k2 = tokenValues(100, 1, 6, 1), v2 = tokenValues(100, 1, 6, -1);
  ASSERT_TRUE(cache.write(child, 0, 6, 1, k2.data(), v2.data()));
  EXPECT_EQ(cache.usedPages(), 3);
  EXPECT_EQ(cache.blockTable(child)->at(0), cache.blockTable(parent)->at(0));
  EXPECT_NE(cache.blockTable(child)->at(1), cache.blockTable(parent)->at(1));
  // And rewrites position 5, which must not reach the parent.
  ASSERT_TRUE(cache.write(child, 0, 5, 1, k2.data(), v2.data()));
  // The slots a kernel would write: page · pageSize + offset, private pages.
  int32_t slots[2];
  ASSERT_TRUE(cache.reserveSlots(child, 5, 2, slots));
  const std::vector<int32_t> &pages = *cache.blockTable(child);
  EXPECT_EQ(slots[0], pages[1] * 4 + 1);
  EXPECT_EQ(slots[1], pages[1] * 4 + 2);
  EXPECT_EQ(cache.usedPages(), 3); // already private: nothing copied

  std::vector<float> got(7 * 6), gotV(7 * 6);
  ASSERT_TRUE(cache.read(parent, 0, 0, 6, got.data(), gotV.data()));
  got.resize(36);
  EXPECT_EQ(got, k);
  got.resize(42);
  ASSERT_TRUE(cache.read(child, 0, 0, 7, got.data(), gotV.data()));
  EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 30),
            std::vector<float>(k.begin(), k.begin() + 30));
  EXPECT_EQ(std::vector<float>(got.begin() + 30, got.begin() + 36), k2);
  EXPECT_EQ(std::vector<float>(got.begin() + 36, got.end()), k2);
  ASSERT_TRUE(cache.checkInvariants());

  ASSERT_TRUE(cache.removeSequence(parent));
  ASSERT_TRUE(cache.removeSequence(child));
  EXPECT_EQ(cache.freePages(), 16);
  ASSERT_TRUE(cache.checkInvariants());
}

TEST(KvCache, ErrorsChangeNothing) {
  KvCache cache;
  ASSERT_TRUE(KvCache::create(paged(4, 3, 10), cache));
  SequenceId a, b;
  ASSERT_TRUE(cache.addSequence(a));
  ASSERT_TRUE(cache.extend(a, 8));
  // Over the maximum length.
  Status status = cache.extend(a, 3);
  EXPECT_EQ(status.code(), StatusCode::CapacityExceeded);
  EXPECT_NE(status.message().find("maximum of 10"), std::string::npos)
      << status.message();
  // Out of pages: 2 of 3 are used, 8 tokens need 2.
  ASSERT_TRUE(cache.addSequence(b));
  EXPECT_EQ(cache.extend(b, 8).code(), StatusCode::OutOfMemory);
  EXPECT_EQ(cache.length(b), 0);
  EXPECT_EQ(cache.freePages(), 1);
  // Copy-on-write with no page to copy into.
  SequenceId c;
  ASSERT_TRUE(cache.extend(b, 4));
  ASSERT_TRUE(cache.fork(a, c));
  std::vector<float> k(6, 1.0f);
  EXPECT_EQ(cache.write(c, 0, 0, 1, k.data(), k.data()).code(),
            StatusCode::OutOfMemory);
  int32_t slots[2] = {-7, -7};
  EXPECT_EQ(cache.reserveSlots(c, 0, 1, slots).code(), StatusCode::OutOfMemory);
  EXPECT_EQ(cache.reserveSlots(a, 7, 2, slots).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(cache.reserveSlots(a, 0, 1, nullptr).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(cache.reserveSlots(42, 0, 1, slots).code(), StatusCode::NotFound);
  EXPECT_EQ(slots[0], -7);
  EXPECT_EQ(*cache.blockTable(c), *cache.blockTable(a)); // nothing copied
  // Bad arguments.
  EXPECT_EQ(cache.write(a, 2, 0, 1, k.data(), k.data()).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(cache.write(a, 0, 7, 2, k.data(), k.data()).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(cache.write(a, 0, -1, 1, k.data(), k.data()).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(cache.write(a, 0, 0, 1, nullptr, k.data()).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(cache.read(a, 0, 0, 9, k.data(), k.data()).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(cache.truncate(a, 9).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(cache.extend(a, -1).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(cache.extend(42, 1).code(), StatusCode::NotFound);
  EXPECT_EQ(cache.removeSequence(-1).code(), StatusCode::NotFound);
  EXPECT_EQ(cache.length(a), 8);
  ASSERT_TRUE(cache.checkInvariants());
}

// Random add / extend+write / fork / truncate / remove against a shadow model
// of every sequence's tokens; invariants and one sequence's contents are
// checked after every operation.
// Layer 1 slides over `window` keys (0: none); its pool is as large as
// layer 0's, so that refusals test the same paths.
void stress(int window) {
  const int kOperations = 100000, kElements = 2 * 3;
  for (int pageSize : {1, 3, 16}) {
    KvCache cache;
    KvCacheConfig config = paged(pageSize, 96 / pageSize + 8, 40);
    if (window) {
      config.windows = {0, window};
      config.windowPages = config.numPages;
    }
    ASSERT_TRUE(KvCache::create(config, cache));
    std::map<SequenceId, std::vector<float>> shadow; // layer-1 keys per token
    std::mt19937 rng(pageSize);
    int extended = 0, forked = 0,
        refused = 0; // the run must exercise each path
    auto pick = [&]() {
      auto it = shadow.begin();
      std::advance(it, rng() % shadow.size());
      return it->first;
    };
    for (int op = 0; op < kOperations / 3; op++) { // 3 page sizes
      int kind = rng() % 10;
      if (shadow.empty() || kind == 0) {
        SequenceId id;
        ASSERT_TRUE(cache.addSequence(id));
        ASSERT_FALSE(shadow.count(id));
        shadow[id] = {};
      } else if (kind <= 4) { // extend and write new tokens
        SequenceId id = pick();
        int count = 1 + rng() % 6;
        int before = cache.length(id);
        Status status = cache.extend(id, count);
        if (!status) {
          ASSERT_TRUE(status.code() == StatusCode::OutOfMemory ||
                      status.code() == StatusCode::CapacityExceeded);
          ASSERT_EQ(cache.length(id), before);
          refused++;
          continue;
        }
        auto k = tokenValues(op, count, kElements, 1);
        status = cache.write(id, 1, before, count, k.data(), k.data());
        if (!status) { // copy-on-write found no page: roll back
          ASSERT_EQ(status.code(), StatusCode::OutOfMemory);
          ASSERT_TRUE(cache.truncate(id, before));
          continue;
        }
        shadow[id].insert(shadow[id].end(), k.begin(), k.end());
        extended++;
      } else if (kind == 5) { // overwrite one old token
        SequenceId id = pick();
        if (cache.length(id) == 0)
          continue;
        int pos = rng() % cache.length(id);
        auto k = tokenValues(-op, 1, kElements, 1);
        if (cache.write(id, 1, pos, 1, k.data(), k.data()))
          std::copy(k.begin(), k.end(), shadow[id].begin() + pos * kElements);
      } else if (kind == 6) {
        SequenceId parent = pick(), child;
        ASSERT_TRUE(cache.fork(parent, child));
        std::vector<float> tokens = shadow[parent];
        shadow[child] = tokens;
        forked++;
      } else if (kind == 7) {
        SequenceId id = pick();
        int before = cache.length(id);
        int newLength = before ? rng() % (before + 1) : 0;
        Status status = cache.truncate(id, newLength);
        if (!status) { // the window released what newLength would read
          ASSERT_TRUE(window > 0 && newLength > 0) << status.message();
          ASSERT_EQ(status.code(), StatusCode::InvalidArgument);
          ASSERT_EQ(cache.length(id), before);
          continue;
        }
        shadow[id].resize(size_t(newLength) * kElements);
      } else {
        SequenceId id = pick();
        ASSERT_TRUE(cache.removeSequence(id));
        shadow.erase(id);
      }
      Status invariants = cache.checkInvariants();
      ASSERT_TRUE(invariants) << invariants.message() << " after op " << op;
      if (shadow.empty())
        continue;
      SequenceId probe = pick();
      int n = cache.length(probe);
      ASSERT_EQ(size_t(n) * kElements, shadow[probe].size());
      // What the next query reads: all, or the window before it.
      int from = window ? std::max(0, n - window + 1) : 0;
      std::vector<float> k(size_t(n - from) * kElements), v(k.size());
      ASSERT_TRUE(cache.read(probe, 1, from, n - from, k.data(), v.data()));
      ASSERT_TRUE(std::equal(k.begin(), k.end(),
                             shadow[probe].begin() + from * kElements))
          << "sequence " << probe << " op " << op;
      // Each sequence holds its window's pages and those of its last extend
      // (up to 6 tokens), however long it grew.
      if (window)
        ASSERT_LE(cache.usedPages(1),
                  int(shadow.size()) *
                      ((window + 6 + pageSize - 1) / pageSize + 1));
    }
    EXPECT_GT(extended, window ? 3000 : 5000); // a window refuses rollbacks
    EXPECT_GT(forked, 1000);
    EXPECT_GT(refused, window ? 10 : 100);
    for (SequenceId id : cache.sequences())
      ASSERT_TRUE(cache.removeSequence(id));
    EXPECT_EQ(cache.usedPages(), 0);
    EXPECT_EQ(cache.usedPages(1), 0);
  }
}

TEST(KvCache, StressRandomOperations) { stress(0); }
TEST(KvCache, StressRandomOperationsWithASlidingWindow) { stress(7); }

// Layers 1 and 2 slide over 5 keys: a sequence of any length holds the
// pages its window spans in their pool, while layer 0 keeps every token.
TEST(KvCache, SlidingWindowLayersKeepOnlyTheirWindow) {
  const int window = 5, pageSize = 2, spanned = 4; // ceil(5 / 2) + 1
  static_assert(attn::kvPagesPerSequence(64, pageSize, window) == spanned);
  KvCacheConfig config = paged(pageSize, 32, 64);
  config.numLayers = 3;
  config.windows = {0, window, window};
  config.windowPages = spanned + 1;
  KvCache cache;
  ASSERT_TRUE(KvCache::create(config, cache));
  EXPECT_TRUE(cache.slidesWindows());
  EXPECT_EQ(cache.poolPages(0), 32);
  EXPECT_EQ(cache.poolPages(1), spanned + 2); // and the trash page
  EXPECT_EQ(cache.poolBytes(), (32 + 2 * (spanned + 2)) * size_t(pageSize) *
                                   attn::kvBytesPerToken(DType::F32, 2, 3));
  const int elements = 6;
  SequenceId id;
  ASSERT_TRUE(cache.addSequence(id));
  for (int length = 1; length <= 40; length++) { // decode, token by token
    ASSERT_TRUE(cache.extend(id, 1));
    auto k = tokenValues(length - 1, 1, elements, 1),
         v = tokenValues(length - 1, 1, elements, -1);
    for (int layer = 0; layer < 3; layer++)
      ASSERT_TRUE(cache.write(id, layer, length - 1, 1, k.data(), v.data()));
    ASSERT_LE(cache.usedPages(1), spanned);
    ASSERT_TRUE(cache.checkInvariants());
    // The next query's window reads back in the windowed layers.
    int from = std::max(0, length - window + 1);
    std::vector<float> keys((length - from) * elements), values(keys.size());
    ASSERT_TRUE(cache.read(id, 2, from, length - from, keys.data(),
                           values.data()));
    EXPECT_EQ(keys, tokenValues(from, length - from, elements, 1));
  }
  EXPECT_EQ(cache.usedPages(0), 20); // every token of the full layer
  std::vector<float> k(40 * elements), v(k.size());
  EXPECT_TRUE(cache.read(id, 0, 0, 40, k.data(), v.data()));
  Status s = cache.read(id, 1, 0, 40, k.data(), v.data());
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("window released position 0"), std::string::npos)
      << s.message();
  // A step back is a rollback the window allows; far back is not.
  EXPECT_TRUE(cache.truncate(id, 39));
  s = cache.truncate(id, 20);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(cache.length(id), 39);
  EXPECT_TRUE(cache.truncate(id, 0));
  EXPECT_EQ(cache.usedPages(1), 0);

  // A prompt's prefill attends over its own K/V: the pool takes only the
  // pages of the window after it, and the positions before go to the trash
  // page, after the pool's pages.
  ASSERT_TRUE(cache.extend(id, 33, /*firstQuery=*/33));
  EXPECT_EQ(cache.usedPages(1), 3); // positions 28..32
  std::vector<int32_t> slots(33);
  ASSERT_TRUE(cache.reserveSlots(id, 0, 33, slots.data(), 1));
  for (int p = 0; p < 33; p++)
    EXPECT_EQ(slots[p] >= (spanned + 1) * pageSize, p < 28) << p;
  // The full layer's slots are its own page ids.
  ASSERT_TRUE(cache.reserveSlots(id, 0, 33, slots.data(), 0));
  EXPECT_LT(slots[0], 32 * pageSize);
  auto keys = tokenValues(0, 33, elements, 1);
  ASSERT_TRUE(cache.write(id, 1, 0, 33, keys.data(), keys.data()));
  std::vector<float> back(5 * elements), unused(back.size());
  ASSERT_TRUE(cache.read(id, 1, 28, 5, back.data(), unused.data()));
  EXPECT_EQ(back, tokenValues(28, 5, elements, 1));
  // The window's pool is exhausted by a second sequence's long chunk: a
  // clear refusal that changes nothing.
  SequenceId other;
  ASSERT_TRUE(cache.addSequence(other));
  ASSERT_TRUE(cache.extend(other, 2));
  s = cache.extend(other, 10);
  EXPECT_EQ(s.code(), StatusCode::OutOfMemory);
  EXPECT_NE(s.message().find("5-token window's pool"), std::string::npos)
      << s.message();
  EXPECT_EQ(cache.length(other), 2);
  ASSERT_TRUE(cache.checkInvariants());
  // Prefix sharing needs whole prefixes.
  int32_t page = (*cache.blockTable(id, 0))[0];
  EXPECT_FALSE(cache.adoptPages(other, &page, 1));
}

TEST(KvCache, RejectsBadWindows) {
  KvCache cache;
  KvCacheConfig config = paged(4, 8, 32);
  config.windows = {0, 4, 4}; // three windows, two layers
  config.windowPages = 4;
  EXPECT_EQ(KvCache::create(config, cache).code(), StatusCode::InvalidArgument);
  config.windows = {0, -4};
  EXPECT_EQ(KvCache::create(config, cache).code(), StatusCode::InvalidArgument);
  config.windows = {0, 4};
  config.windowPages = 0;
  EXPECT_EQ(KvCache::create(config, cache).code(), StatusCode::InvalidArgument);
}

} // namespace
