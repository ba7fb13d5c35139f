//===- SubnormalTest.cpp - no kernel makes or reads a subnormal -----------===//
//
// Intel cores take a microcode assist, about a hundred cycles, per
// subnormal operand or result (AMD's penalty is small): a decode kernel
// whose softmax weights underflowed into subnormals ran 6-9x slower on an
// Intel VM. The kernels keep every intermediate normal or exactly zero by
// construction (exp2Nonpositive's floor, AttentionParts.h). This checks it
// on any x86 CPU: each kernel family runs twice on inputs where most
// softmax weights or sigmoids underflow, once with MXCSR's FTZ and DAZ bits
// clear and once with them set, in the calling thread and in every task
// Halide's thread pool runs; FTZ/DAZ change a result only where a subnormal
// is produced or consumed, so the two outputs must be bitwise identical.
// A control pipeline that does make subnormals must differ in every task,
// which shows that the mode reached every thread.
//
// The attention inputs: per KV head, a few "hot" keys (among them key 0,
// which every causal row sees) have logits within 1 (log2 units) of the
// maximum, every other key 110-320 below it (a spread of 222 in natural
// units); half of the channels of V are 0 on the hot keys, so those output
// channels are sums of weights below 2^-110 alone, where a flushed
// subnormal shows in the result's bits.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/KvCache.h"
#include "attn/schedules/Pipelines.h"

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define ATTN_HAS_MXCSR 1
#endif

using attn::runtime::KvCache;
using attn::runtime::KvCacheConfig;
using attn::runtime::SequenceId;

namespace {

#ifdef ATTN_HAS_MXCSR
constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
constexpr unsigned kFlushBits = kFlushToZero | kDenormalsAreZero;
unsigned gFlushMode = 0; // the FTZ/DAZ bits every task runs with

void setFlushMode() { _mm_setcsr((_mm_getcsr() & ~kFlushBits) | gFlushMode); }

/// Halide's do_task hook: every task, on whichever thread runs it, first
/// takes the mode of the call.
int runTaskInFlushMode(Halide::JITUserContext *context,
                       int (*task)(Halide::JITUserContext *, int, uint8_t *),
                       int index, uint8_t *closure) {
  setFlushMode();
  return task(context, index, closure);
}

/// Realizes `pipeline` into `output` with FTZ/DAZ set or clear in this
/// thread and in each of its tasks; restores this thread's MXCSR.
void realizeInMode(bool flush, Halide::Pipeline &pipeline,
                   Halide::Realization output, const Halide::ParamMap &params) {
  pipeline.jit_handlers().custom_do_task = runTaskInFlushMode;
  const unsigned saved = _mm_getcsr();
  gFlushMode = flush ? kFlushBits : 0;
  setFlushMode();
  pipeline.realize(output, Halide::get_jit_target_from_environment(), params);
  _mm_setcsr(saved);
}
#endif

/// Runs `pipeline` in both modes and expects identical bits.
void expectSameBitsInBothModes(Halide::Pipeline &pipeline,
                               Halide::Buffer<float> &output,
                               const Halide::ParamMap &params) {
#ifdef ATTN_HAS_MXCSR
  realizeInMode(false, pipeline, output, params);
  std::vector<float> clear(output.data(),
                           output.data() + output.number_of_elements());
  output.fill(std::nanf(""));
  realizeInMode(true, pipeline, output, params);
  size_t differing = 0, first = 0;
  for (size_t x = 0; x < clear.size(); x++)
    if (std::memcmp(&clear[x], output.data() + x, sizeof(float)) != 0 &&
        differing++ == 0)
      first = x;
  EXPECT_EQ(differing, 0u) << "of " << clear.size() << " outputs; first at "
                           << first << ": " << clear[first]
                           << " without FTZ/DAZ, " << output.data()[first]
                           << " with";
#else
  (void)pipeline, (void)output, (void)params;
#endif
}

class SubnormalTest : public testing::Test {
protected:
  void SetUp() override {
#ifndef ATTN_HAS_MXCSR
    GTEST_SKIP() << "FTZ/DAZ are x86 MXCSR bits; nothing to compare here";
#endif
  }
};

/// The harness itself: a product that is subnormal in every element of 64
/// parallel tasks is 0 with FTZ/DAZ and not without, so the mode reached
/// every task.
TEST_F(SubnormalTest, TheModeReachesEveryTask) {
#ifdef ATTN_HAS_MXCSR
  Halide::ImageParam input(Halide::Float(32), 1, "input");
  Halide::Var x("x"), xo("xo"), xi("xi");
  Halide::Func tiny("tiny");
  tiny(x) = input(x) * 1e-30f;
  tiny.split(x, xo, xi, 64).parallel(xo).vectorize(xi, 8);
  Halide::Pipeline pipeline(tiny);
  pipeline.compile_jit(Halide::get_jit_target_from_environment());
  Halide::Buffer<float> in(64 * 64), out(64 * 64);
  in.fill(1e-10f);
  Halide::ParamMap params;
  params.set(input, in);
  realizeInMode(false, pipeline, out, params);
  for (int i = 0; i < 64 * 64; i++)
    ASSERT_GT(out(i), 0.0f) << "element " << i;
  realizeInMode(true, pipeline, out, params);
  for (int i = 0; i < 64 * 64; i++)
    ASSERT_EQ(out(i), 0.0f) << "element " << i << " (task " << i / 64 << ")";
#endif
}

/// Attention inputs as the header describes: q, k, v in [len][heads][dim]
/// order, logits in log2 units of q·k·scale·log2(e).
struct SpreadLogits {
  int headDim;
  float scale;
  std::mt19937 rng{5};

  /// A query row: its first channel sets the spread (1 to 1.1 times the
  /// keys' log2 logits), the rest are 0, so q·k reads k's first channel.
  void query(float *row) {
    std::uniform_real_distribution<float> stretch(1.0f, 1.1f);
    std::fill(row, row + headDim, 0.0f);
    row[0] = stretch(rng) / (scale * float(M_LOG2E));
  }
  /// Key j's row and its value row.
  void keyAndValue(int j, float *key, float *value) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f),
        hotLogit(-1.0f, 0.0f), coldLogit(-320.0f, -110.0f);
    const bool hot = j % 61 == 0;
    key[0] = hot ? hotLogit(rng) : coldLogit(rng);
    for (int d = 1; d < headDim; d++)
      key[d] = uniform(rng);
    for (int d = 0; d < headDim; d++)
      value[d] = hot && d >= headDim / 2 ? 0.0f : uniform(rng);
  }
};

struct PrefillCase {
  bool causal;
  attn::SdpaCompute compute;
  int qLen, kvLen;
};

class SubnormalPrefillTest : public SubnormalTest,
                             public testing::WithParamInterface<PrefillCase> {};

TEST_P(SubnormalPrefillTest, SameBitsWithAndWithoutFlushing) {
  const PrefillCase &c = GetParam();
  const int hq = 4, hkv = 2, dim = 64;
  attn::SdpaSpec spec;
  spec.functionName = "prefill";
  spec.numQueryHeads = hq;
  spec.numKvHeads = hkv;
  spec.headDim = dim;
  spec.causal = c.causal;
  spec.scale = 1.0f / std::sqrt(float(dim));
  spec.compute = c.compute;
  spec.schedule = attn::defaultSdpaSchedule(dim, c.compute);
  spec.schedule.queryBlock = 32; // several blocks and chunks per head
  spec.schedule.kvChunk = 64;
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildSdpaPipeline(spec, target);
  kernel.pipeline.compile_jit(target);

  SpreadLogits spread{dim, spec.scale};
  Halide::Buffer<float> query(dim, hq, c.qLen, 1), key(dim, hkv, c.kvLen, 1),
      value(dim, hkv, c.kvLen, 1), output(dim, hq, c.qLen, 1);
  for (int i = 0; i < c.qLen; i++)
    for (int h = 0; h < hq; h++)
      spread.query(&query(0, h, i, 0));
  for (int j = 0; j < c.kvLen; j++)
    for (int h = 0; h < hkv; h++)
      spread.keyAndValue(j, &key(0, h, j, 0), &value(0, h, j, 0));
  Halide::ParamMap params;
  params.set(kernel.inputs[0], query);
  params.set(kernel.inputs[1], key);
  params.set(kernel.inputs[2], value);
  expectSameBitsInBothModes(kernel.pipeline, output, params);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, SubnormalPrefillTest,
    testing::Values(PrefillCase{false, attn::SdpaCompute::F32, 100, 300},
                    PrefillCase{true, attn::SdpaCompute::F32, 300, 300},
                    PrefillCase{false, attn::SdpaCompute::BF16, 100, 300},
                    PrefillCase{true, attn::SdpaCompute::BF16, 300, 300}),
    [](const testing::TestParamInfo<PrefillCase> &info) {
      return std::string(info.param.causal ? "causal_" : "full_") +
             (info.param.compute == attn::SdpaCompute::BF16 ? "bf16" : "f32");
    });

struct DecodeCase {
  attn::DType cache;
  int qLen;
};

class SubnormalDecodeTest : public SubnormalTest,
                            public testing::WithParamInterface<DecodeCase> {};

/// Two sequences of 700 and 300 keys in splits of 128 (most splits hold no
/// hot key: their partials are scaled by weights near 2^-110 in the
/// combine), 1 or 4 new tokens each.
TEST_P(SubnormalDecodeTest, SameBitsWithAndWithoutFlushing) {
  const DecodeCase &c = GetParam();
  const int hq = 8, hkv = 2, dim = 64;
  const std::vector<int> lengths = {700, 300};
  const int batch = int(lengths.size()), maxLength = 700;
  attn::DecodeSpec spec;
  spec.functionName = "decode";
  spec.numQueryHeads = hq;
  spec.numKvHeads = hkv;
  spec.headDim = dim;
  spec.pageSize = maxLength; // contiguous: one page per sequence
  spec.causal = true;
  spec.cacheElement = c.cache;
  spec.scale = 1.0f / std::sqrt(float(dim));
  spec.schedule.splitKeys = 128;
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildDecodePipeline(spec, target);
  kernel.pipeline.compile_jit(target);

  KvCache cache;
  ASSERT_TRUE(KvCache::create(
      KvCacheConfig::contiguous(1, hkv, dim, c.cache, maxLength, batch),
      cache));
  SpreadLogits spread{dim, spec.scale};
  Halide::Buffer<int32_t> table(1, batch), seqLens(batch);
  for (int b = 0; b < batch; b++) {
    std::vector<float> keys(size_t(lengths[b]) * hkv * dim),
        values(keys.size());
    for (int j = 0; j < lengths[b]; j++)
      for (int h = 0; h < hkv; h++)
        spread.keyAndValue(j, &keys[(size_t(j) * hkv + h) * dim],
                           &values[(size_t(j) * hkv + h) * dim]);
    SequenceId id;
    ASSERT_TRUE(cache.addSequence(id));
    ASSERT_TRUE(cache.extend(id, lengths[b]));
    ASSERT_TRUE(cache.write(id, 0, 0, lengths[b], keys.data(), values.data()));
    table(0, b) = cache.blockTable(id)->at(0);
    seqLens(b) = lengths[b];
  }
  Halide::Buffer<float> query(dim, hq, c.qLen, batch),
      output(dim, hq, c.qLen, batch);
  for (int b = 0; b < batch; b++)
    for (int t = 0; t < c.qLen; t++)
      for (int h = 0; h < hq; h++)
        spread.query(&query(0, h, t, b));

  const KvCacheConfig &config = cache.config();
  Halide::Type element = c.cache == attn::DType::BF16 ? Halide::BFloat(16)
                         : c.cache == attn::DType::I8 ? Halide::Int(8)
                                                      : Halide::Float(32);
  Halide::Buffer<> keyPages(element, const_cast<void *>(cache.keyPages(0)), dim,
                            hkv, config.pageSize, config.numPages),
      valuePages(element, const_cast<void *>(cache.valuePages(0)), dim, hkv,
                 config.pageSize, config.numPages);
  Halide::ParamMap params;
  size_t next = 0;
  params.set(kernel.inputs[next++], query);
  params.set(kernel.inputs[next++], keyPages);
  params.set(kernel.inputs[next++], valuePages);
  Halide::Buffer<float> keyScales, valueScales;
  if (c.cache == attn::DType::I8) {
    keyScales = Halide::Buffer<float>(const_cast<float *>(cache.keyScales(0)),
                                      hkv, config.pageSize, config.numPages);
    valueScales =
        Halide::Buffer<float>(const_cast<float *>(cache.valueScales(0)), hkv,
                              config.pageSize, config.numPages);
    params.set(kernel.inputs[next++], keyScales);
    params.set(kernel.inputs[next++], valueScales);
  }
  params.set(kernel.inputs[next++], table);
  params.set(kernel.inputs[next++], seqLens);
  ASSERT_EQ(next, kernel.inputs.size());
  expectSameBitsInBothModes(kernel.pipeline, output, params);
}

INSTANTIATE_TEST_SUITE_P(Kernels, SubnormalDecodeTest,
                         testing::Values(DecodeCase{attn::DType::F32, 1},
                                         DecodeCase{attn::DType::F32, 4},
                                         DecodeCase{attn::DType::BF16, 1},
                                         DecodeCase{attn::DType::I8, 4}),
                         [](const testing::TestParamInfo<DecodeCase> &info) {
                           return std::string(
                                      attn::dtypeName(info.param.cache)) +
                                  "_q" + std::to_string(info.param.qLen);
                         });

class SubnormalLinearTest
    : public SubnormalTest,
      public testing::WithParamInterface<attn::Activation> {};

/// Projections whose outputs spread over [-300, 300] before the
/// activation: most sigmoids (SiLU, tanh-GELU) and erfs underflow.
TEST_P(SubnormalLinearTest, SameBitsWithAndWithoutFlushing) {
  const int in = 64, out = 256, tokens = 64;
  attn::LinearSpec spec;
  spec.functionName = "linear";
  spec.inFeatures = in;
  spec.outFeatures = out;
  spec.activation = GetParam();
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, target);
  kernel.pipeline.compile_jit(target);

  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> w(size_t(in) * out);
  for (float &value : w)
    value = uniform(rng) * (300.0f / 16); // x·W spans about +-300
  Halide::Buffer<float> input(in, tokens), output(out, tokens);
  input.for_each_value([&](float &value) { value = uniform(rng); });
  Halide::Buffer<> packed =
      attn::packLinearWeights(w.data(), in, out, attn::DType::F32, nullptr);
  Halide::ParamMap params;
  params.set(kernel.inputs[0], input);
  params.set(kernel.inputs[1], packed);
  ASSERT_EQ(kernel.inputs.size(), 2u);
  expectSameBitsInBothModes(kernel.pipeline, output, params);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, SubnormalLinearTest,
    testing::Values(attn::Activation::Silu, attn::Activation::GeluTanh,
                    attn::Activation::Gelu),
    [](const testing::TestParamInfo<attn::Activation> &info) {
      return std::string(info.param == attn::Activation::Silu ? "silu"
                         : info.param == attn::Activation::GeluTanh
                             ? "gelu_tanh"
                             : "gelu");
    });

} // namespace
