//===- DecodeTest.cpp - split-KV decode over the runtime's paged cache ----===//
//
// The decode pipeline reads K and V straight from attn::runtime::KvCache's
// page pools through its block tables. Each case fills a cache with a batch
// of ragged sequences (random page order after forks and removals), runs
// 1-8 new query tokens per sequence and compares with the double reference
// over the same tokens laid out densely. Tolerance 1e-5 absolute (fp32; see
// SdpaScheduleTest.cpp). Paged and contiguous caches must agree exactly.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "attn/runtime/KvCache.h"
#include "attn/schedules/Pipelines.h"

#include <cstring>

#include <gtest/gtest.h>

using namespace attn::test;
using attn::runtime::KvCache;
using attn::runtime::KvCacheConfig;
using attn::runtime::SequenceId;

namespace {

struct DecodeCase {
  int queryHeads, kvHeads, headDim, pageSize, splitKeys;
  bool causal;
  std::vector<int> lengths; // cached tokens per sequence
  int qLen;
  int window = 0;
  attn::DType dtype = attn::DType::F32;
  float softcap = 0.0f;
  bool alibi = false;
  bool sinks = false; ///< sink logits sinkLogits(queryHeads)
};

/// Each head's sink logit: from below a row's scores to above them.
std::vector<float> sinkLogits(int heads) {
  std::vector<float> sinks;
  for (int h = 0; h < heads; h++)
    sinks.push_back(-2.0f + 1.3f * float(h % 5));
  return sinks;
}

/// Runs the decode kernel of `c` over `cache` layer 0 for `sequences`.
std::vector<float> runDecode(const DecodeCase &c, KvCache &cache,
                             const std::vector<SequenceId> &sequences,
                             std::vector<float> &query, int maxPages) {
  attn::DecodeSpec spec;
  spec.functionName = "decode";
  spec.numQueryHeads = c.queryHeads;
  spec.numKvHeads = c.kvHeads;
  spec.headDim = c.headDim;
  spec.pageSize = cache.config().pageSize;
  spec.causal = c.causal;
  spec.window = c.window;
  spec.softcap = c.softcap;
  spec.alibi = c.alibi;
  spec.sinks = c.sinks;
  spec.cacheElement =
      c.dtype == attn::DType::F16    ? attn::DType::F16
      : c.dtype == attn::DType::BF16 ? attn::DType::BF16
      : c.dtype == attn::DType::I8   ? attn::DType::I8
                                              : attn::DType::F32;
  spec.scale = 1.0f / std::sqrt(float(c.headDim));
  spec.schedule.splitKeys = c.splitKeys;
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildDecodePipeline(spec, target);
  kernel.pipeline.compile_jit(target);

  const int batch = int(sequences.size());
  const KvCacheConfig &config = cache.config();
  Halide::Buffer<float> q(query.data(), c.headDim, c.queryHeads, c.qLen, batch);
  Halide::Type element =
      c.dtype == attn::DType::F16    ? Halide::Float(16)
      : c.dtype == attn::DType::BF16 ? Halide::BFloat(16)
      : c.dtype == attn::DType::I8   ? Halide::Int(8)
                                              : Halide::Float(32);
  Halide::Buffer<> keys(element, const_cast<void *>(cache.keyPages(0)),
                        c.headDim, c.kvHeads, config.pageSize, config.numPages);
  Halide::Buffer<> values(element, const_cast<void *>(cache.valuePages(0)),
                          c.headDim, c.kvHeads, config.pageSize,
                          config.numPages);
  Halide::Buffer<int32_t> table(maxPages, batch), lengths(batch);
  table.fill(0);
  for (int b = 0; b < batch; b++) {
    const std::vector<int32_t> &pages = *cache.blockTable(sequences[b]);
    for (size_t p = 0; p < pages.size(); p++)
      table(int(p), b) = pages[p];
    lengths(b) = cache.length(sequences[b]);
  }
  Halide::Buffer<float> out(c.headDim, c.queryHeads, c.qLen, batch);
  Halide::ParamMap params;
  params.set(kernel.inputs[0], q);
  size_t next = 1;
  params.set(kernel.inputs[next++], keys);
  params.set(kernel.inputs[next++], values);
  if (c.dtype == attn::DType::I8) {
    Halide::Buffer<float> keyScales(const_cast<float *>(cache.keyScales(0)),
                                    c.kvHeads, config.pageSize,
                                    config.numPages),
        valueScales(const_cast<float *>(cache.valueScales(0)), c.kvHeads,
                    config.pageSize, config.numPages);
    params.set(kernel.inputs[next++], keyScales);
    params.set(kernel.inputs[next++], valueScales);
  }
  params.set(kernel.inputs[next++], table);
  params.set(kernel.inputs[next++], lengths);
  std::vector<float> sinkValues = sinkLogits(c.queryHeads);
  Halide::Buffer<float> sinks(sinkValues.data(), c.queryHeads);
  if (c.sinks)
    params.set(kernel.inputs[next++], sinks);
  kernel.pipeline.realize(out, target, params);
  return {out.data(), out.data() + out.number_of_elements()};
}

class DecodeTest : public testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeTest, PagedAndContiguousMatchTheReference) {
  const DecodeCase &c = GetParam();
  const int batch = int(c.lengths.size());
  const int maxLength = *std::max_element(c.lengths.begin(), c.lengths.end());
  const int kvElements = c.kvHeads * c.headDim;
  std::mt19937 rng(11);

  // Dense K/V per sequence, the reference's view.
  std::vector<std::vector<float>> keys, values;
  for (int length : c.lengths) {
    keys.push_back(randomVector(size_t(length) * kvElements, rng));
    values.push_back(randomVector(size_t(length) * kvElements, rng));
  }
  std::vector<float> query =
      randomVector(size_t(batch) * c.qLen * c.queryHeads * c.headDim, rng);

  auto fill = [&](const KvCacheConfig &config, KvCache &cache,
                  std::vector<SequenceId> &ids) {
    ASSERT_TRUE(KvCache::create(config, cache));
    // A scratch sequence taken and freed first scatters the page order.
    SequenceId scratch;
    ASSERT_TRUE(cache.addSequence(scratch));
    ASSERT_TRUE(
        cache.extend(scratch, std::min(maxLength, config.pageSize * 3)));
    for (int b = 0; b < batch; b++) {
      SequenceId id;
      ASSERT_TRUE(cache.addSequence(id));
      ASSERT_TRUE(cache.extend(id, c.lengths[b]));
      ASSERT_TRUE(cache.write(id, 0, 0, c.lengths[b], keys[b].data(),
                              values[b].data()));
      ids.push_back(id);
      if (b == 0)
        ASSERT_TRUE(cache.removeSequence(scratch));
    }
  };
  KvCacheConfig pagedConfig;
  pagedConfig.numLayers = 1;
  pagedConfig.numKvHeads = c.kvHeads;
  pagedConfig.headDim = c.headDim;
  pagedConfig.dtype = c.dtype;
  pagedConfig.pageSize = c.pageSize;
  pagedConfig.maxSequenceLength = maxLength;
  pagedConfig.numPages =
      batch * ((maxLength + c.pageSize - 1) / c.pageSize) + 4;
  KvCache paged, contiguous;
  std::vector<SequenceId> pagedIds, contiguousIds;
  fill(pagedConfig, paged, pagedIds);
  fill(KvCacheConfig::contiguous(1, c.kvHeads, c.headDim, c.dtype, maxLength,
                                 batch + 1),
       contiguous, contiguousIds);
  if (HasFatalFailure())
    return;

  std::vector<float> pagedOut = runDecode(
      c, paged, pagedIds, query, (maxLength + c.pageSize - 1) / c.pageSize);
  std::vector<float> contiguousOut =
      runDecode(c, contiguous, contiguousIds, query, 1);
  EXPECT_EQ(pagedOut, contiguousOut);

  // The reference sees K and V as the cache stores them (rounded to f16 or
  // bf16): the kernel is exact on those, the rounding is the cache's.
  for (int b = 0; b < batch; b++)
    ASSERT_TRUE(paged.read(pagedIds[b], 0, 0, c.lengths[b], keys[b].data(),
                           values[b].data()));
  const size_t rowElements = size_t(c.qLen) * c.queryHeads * c.headDim;
  for (int b = 0; b < batch; b++) {
    SCOPED_TRACE(testing::Message()
                 << "sequence " << b << " of length " << c.lengths[b]);
    AttentionShape shape{1,
                         c.qLen,
                         c.lengths[b],
                         c.queryHeads,
                         c.kvHeads,
                         c.headDim,
                         c.causal,
                         1.0 / std::sqrt(double(c.headDim)),
                         c.window,
                         c.softcap,
                         c.alibi ? attn::alibiSlopes(c.queryHeads)
                                 : std::vector<float>(),
                         {},
                         c.sinks ? sinkLogits(c.queryHeads)
                                 : std::vector<float>()};
    std::vector<double> expected =
        referenceAttention(shape, query.data() + b * rowElements,
                           keys[b].data(), values[b].data());
    std::vector<float> got(pagedOut.begin() + b * rowElements,
                           pagedOut.begin() + (b + 1) * rowElements);
    EXPECT_LE(maxAbsError(got, expected), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DecodeTest,
    testing::Values(DecodeCase{4, 1, 64, 16, 512, true, {1000, 1, 33, 517}, 1},
                    DecodeCase{8, 2, 128, 16, 256, true, {300, 7, 1200}, 4},
                    DecodeCase{6, 3, 80, 7, 100, false, {5, 64, 250}, 2},
                    DecodeCase{2, 2, 13, 1, 64, true, {9, 130}, 8},
                    DecodeCase{32, 8, 128, 32, 1024, true, {2100}, 1},
                    DecodeCase{4, 4, 96, 5, 37, true, {8, 100}, 8},
                    DecodeCase{8, 2, 64, 16, 128, true, {1000, 3, 700}, 4, 300},
                    DecodeCase{4, 1, 32, 7, 64, true, {50, 200}, 8, 1},
                    DecodeCase{8,
                               2,
                               128,
                               16,
                               256,
                               true,
                               {300, 7, 1200},
                               4,
                               0,
                               attn::DType::F16},
                    DecodeCase{4,
                               4,
                               80,
                               5,
                               100,
                               false,
                               {64, 333},
                               2,
                               0,
                               attn::DType::BF16},
                    DecodeCase{6,
                               2,
                               64,
                               16,
                               128,
                               true,
                               {90, 513},
                               3,
                               0,
                               attn::DType::F32,
                               1.5f,
                               true},
                    // int8 caches: rows with scales, GQA and MHA, odd
                    // head_dim, a window, odd page size
                    DecodeCase{8,
                               2,
                               128,
                               16,
                               256,
                               true,
                               {1, 300, 1025},
                               1,
                               0,
                               attn::DType::I8},
                    DecodeCase{3,
                               3,
                               33,
                               7,
                               64,
                               true,
                               {50, 129},
                               4,
                               20,
                               attn::DType::I8},
                    // Sinks (gpt-oss): GQA over many splits, with a window
                    // and softcap, in an int8 cache, and a length-1 cache.
                    DecodeCase{8, 2, 64, 16, 128, true, {1000, 1, 333}, 1, 0,
                               attn::DType::F32, 0.0f, false, true},
                    DecodeCase{8, 2, 64, 16, 128, true, {1000, 3, 700}, 4,
                               128, attn::DType::BF16, 1.5f, false, true},
                    DecodeCase{8, 2, 128, 16, 256, true, {1, 300, 1025}, 1, 0,
                               attn::DType::I8, 0.0f, false, true},
                    // Latent attention's shape (DeepSeek's rows of rank 512
                    // + rope 64 under one key head; a chunk of two rows),
                    // in f32, bf16 and int8 caches.
                    DecodeCase{16, 1, 576, 16, 256, true, {300, 7}, 1},
                    DecodeCase{8, 1, 576, 16, 128, true, {130, 513}, 2, 0,
                               attn::DType::BF16},
                    DecodeCase{4, 1, 288, 7, 64, true, {1, 200}, 1, 0,
                               attn::DType::I8}));

// The projection with the cache append fused in writes exactly the bytes
// KvCache::write would store for its K/V rows (same slots after
// copy-on-write, same rounding to f16/bf16), and its own output is the
// plain projection's, bit for bit.
struct AppendCase {
  int in, queryHeads, kvHeads, headDim, tokens, pageSize;
  attn::DType dtype;
  bool fused; // Q, K and V in one projection (else K and V only)
  bool rope;
  bool gemv = false; // the one-row schedule of decode steps
};

class CacheAppendTest : public testing::TestWithParam<AppendCase> {};

TEST_P(CacheAppendTest, WritesWhatKvCacheWriteStores) {
  const AppendCase &c = GetParam();
  const int kvWidth = c.kvHeads * c.headDim;
  const int out = (c.fused ? c.queryHeads * c.headDim : 0) + 2 * kvWidth;
  attn::LinearSpec spec;
  spec.functionName = "qkv";
  spec.inFeatures = c.in;
  spec.outFeatures = out;
  spec.bias = true;
  if (c.gemv)
    spec.schedule.tileRows = 1;
  if (c.rope) {
    spec.ropeTheta = 10000.0f;
    spec.ropeHeads = (c.fused ? c.queryHeads : 0) + c.kvHeads;
    spec.ropeHeadDim = c.headDim;
  }
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline plain = attn::buildLinearPipeline(spec, target);
  spec.cacheAppend = {
      c.kvHeads, c.headDim,
      c.dtype == attn::DType::F16    ? attn::DType::F16
      : c.dtype == attn::DType::BF16 ? attn::DType::BF16
      : c.dtype == attn::DType::I8   ? attn::DType::I8
                                              : attn::DType::F32};
  const bool int8 = c.dtype == attn::DType::I8;
  attn::KernelPipeline fused = attn::buildLinearPipeline(spec, target);

  // Two identical caches; the appended sequence is a fork whose pages are
  // shared with its parent, so reserving its slots copies pages first.
  const int prefix = 5, layer = 1;
  KvCacheConfig config{2, c.kvHeads, c.headDim, c.dtype, c.pageSize, 64, 256};
  KvCache viaKernel, viaWrite;
  ASSERT_TRUE(KvCache::create(config, viaKernel));
  ASSERT_TRUE(KvCache::create(config, viaWrite));
  SequenceId child = 0;
  for (KvCache *cache : {&viaKernel, &viaWrite}) {
    SequenceId parent;
    ASSERT_TRUE(cache->addSequence(parent));
    ASSERT_TRUE(cache->extend(parent, prefix + c.tokens));
    ASSERT_TRUE(cache->fork(parent, child));
  }
  std::vector<int32_t> slots(c.tokens);
  ASSERT_TRUE(viaKernel.reserveSlots(child, prefix, c.tokens, slots.data()));
  if (c.tokens > 2)
    slots[1] = -1; // a token the kernel must not store

  std::mt19937 rng(c.in + out + c.tokens);
  std::vector<float> x = randomVector(size_t(c.tokens) * c.in, rng),
                     w = randomVector(size_t(c.in) * out, rng),
                     b = randomVector(out, rng);
  std::vector<int32_t> pos(c.tokens);
  for (int m = 0; m < c.tokens; m++)
    pos[m] = prefix + m;
  Halide::Buffer<float> input(x.data(), c.in, c.tokens), bias(b.data(), out);
  Halide::Buffer<> weight = attn::packLinearWeights(w.data(), c.in, out);
  Halide::Buffer<int32_t> positions(pos.data(), c.tokens),
      slotBuffer(slots.data(), c.tokens);
  auto run = [&](attn::KernelPipeline &kernel, Halide::Realization outputs) {
    kernel.pipeline.compile_jit(target);
    Halide::ParamMap params;
    std::vector<Halide::Buffer<>> args = {input, weight, bias};
    if (c.rope)
      args.push_back(positions);
    args.push_back(slotBuffer);
    for (size_t i = 0; i < kernel.inputs.size(); i++)
      params.set(kernel.inputs[i], args[i]);
    kernel.pipeline.realize(outputs, target, params);
  };
  Halide::Buffer<float> expected(out, c.tokens), projected(out, c.tokens);
  run(plain, {expected});
  Halide::Type element =
      c.dtype == attn::DType::F16    ? Halide::Float(16)
      : c.dtype == attn::DType::BF16 ? Halide::BFloat(16)
      : c.dtype == attn::DType::I8   ? Halide::Int(8)
                                              : Halide::Float(32);
  const int poolSlots = config.numPages * config.pageSize;
  const attn::runtime::KvCache::LayerPools pools = viaKernel.pools(layer);
  Halide::Buffer<> keyPool(element, pools.keys.data, c.headDim, c.kvHeads,
                           poolSlots);
  Halide::Buffer<> valuePool(element, pools.values.data, c.headDim, c.kvHeads,
                             poolSlots);
  // int8: each row's scale too, [slots][kvHeads].
  std::vector<float> noScales(c.kvHeads);
  Halide::Buffer<float> keyScales(int8 ? pools.keyScales.data : noScales.data(),
                                  c.kvHeads, int8 ? poolSlots : 1);
  Halide::Buffer<float> valueScales(int8 ? pools.valueScales.data
                                         : noScales.data(),
                                    c.kvHeads, int8 ? poolSlots : 1);
  auto outputs = [&](Halide::Buffer<float> projection) {
    std::vector<Halide::Buffer<>> all = {projection, keyPool, valuePool};
    if (int8) {
      all.push_back(keyScales);
      all.push_back(valueScales);
    }
    return Halide::Realization(all);
  };
  // An output off kAppendOutputAlignment is refused, not read misaligned.
  std::vector<float> misaligned(size_t(out) * c.tokens + 1);
  Halide::Buffer<float> misalignedOutput(misaligned.data() + 1, out, c.tokens);
  EXPECT_THROW(run(fused, outputs(misalignedOutput)), Halide::RuntimeError);
  run(fused, outputs(projected));

  for (int m = 0; m < c.tokens; m++)
    for (int n = 0; n < out; n++)
      ASSERT_EQ(projected(n, m), expected(n, m)) << "feature " << n;
  // The same copies-on-write in the same order, then write's own path.
  std::vector<int32_t> writeSlots(c.tokens);
  ASSERT_TRUE(
      viaWrite.reserveSlots(child, prefix, c.tokens, writeSlots.data()));
  for (int m = 0; m < c.tokens; m++) {
    const float *row = &projected(0, m);
    if (slots[m] >= 0)
      ASSERT_TRUE(viaWrite.write(child, layer, prefix + m, 1,
                                 row + out - 2 * kvWidth, row + out - kvWidth));
  }
  for (int l = 0; l < config.numLayers; l++) {
    // One pool (poolBytes also counts int8 scales).
    size_t bytes = size_t(poolSlots) * kvWidth * byteSize(c.dtype);
    EXPECT_EQ(std::memcmp(viaKernel.keyPages(l), viaWrite.keyPages(l), bytes),
              0)
        << "K of layer " << l;
    EXPECT_EQ(
        std::memcmp(viaKernel.valuePages(l), viaWrite.valuePages(l), bytes), 0)
        << "V of layer " << l;
    if (int8) {
      size_t scales = size_t(poolSlots) * c.kvHeads * sizeof(float);
      EXPECT_EQ(
          std::memcmp(viaKernel.keyScales(l), viaWrite.keyScales(l), scales), 0)
          << "K scales of layer " << l;
      EXPECT_EQ(std::memcmp(viaKernel.valueScales(l), viaWrite.valueScales(l),
                            scales),
                0)
          << "V scales of layer " << l;
    }
  }
  EXPECT_EQ(*viaKernel.blockTable(child), *viaWrite.blockTable(child));
  EXPECT_TRUE(viaKernel.checkInvariants());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CacheAppendTest,
    testing::Values(
        // decode step of a Llama-like GQA layer, RoPE, f16 cache
        AppendCase{64, 8, 2, 32, 1, 16, attn::DType::F16, true, true},
        // prefill of 37 tokens over page boundaries, bf16
        AppendCase{48, 4, 4, 16, 37, 8, attn::DType::BF16, true, true},
        // K/V-only projection (unfused), odd head_dim, f32, page size 1
        AppendCase{33, 6, 3, 10, 7, 1, attn::DType::F32, false, false},
        // head_dim 80, no RoPE, two tokens (the gemv-sized case), f16
        AppendCase{40, 2, 1, 80, 2, 4, attn::DType::F16, true, false},
        // MQA with head_dim 8 (under one vector), one-row schedule
        AppendCase{32, 4, 1, 8, 1, 4, attn::DType::F32, true, false,
                   true},
        AppendCase{32, 4, 1, 8, 2, 4, attn::DType::BF16, true, true,
                   true},
        // int8: each row quantized and its scale stored, as KvCache::write
        // does (prefill over pages; a decode step with the one-row schedule)
        AppendCase{48, 4, 2, 16, 21, 8, attn::DType::I8, true, true},
        AppendCase{40, 6, 3, 10, 1, 4, attn::DType::I8, false, false,
                   true}));

} // namespace
