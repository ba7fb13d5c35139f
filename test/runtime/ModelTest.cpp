//===- ModelTest.cpp - whole generated models through the runtime ---------===//
//
// Small models compiled by attnc (models/*.json): an encoder-decoder
// with GQA, learned decoder positions, a key-padding encoder (the runtime
// passes each sequence's full length) and a paged cache whose pages hold 4
// tokens, the same with a contiguous cache, and a decoder-only model with
// RoPE, RMS norm and a SiLU FFN. Random weights, written to a safetensors
// file under the Bart naming.
//
// The point of a KV cache: decoding token by token over it gives the logits
// of recomputing the whole prefix without it. Both paths run different
// kernels (decode vs prefill attention, one-token vs many-token
// projections) that sum in different orders; fp32 logits of O(1) agree to
// 1e-5 (observed: ~1e-6).
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Checkpoint.h"
#include "attn/runtime/DType.h"
#include "attn/runtime/Model.h"
#include "attn/runtime/PlanSchema.h"
#include "attn/runtime/Generator.h"
#include "attn/runtime/ModelLibrary.h"
#include "attn/runtime/Version.h"

#include "bart_tiny.h"
#include "marian_tiny.h"

#include "decoder_rope.h"
#include "decoder_window.h"
#include "encdec_contiguous.h"
#include "encdec_int8.h"
#include "encdec_paged.h"
#include "encdec_post.h"
#include "gpt2_tiny.h"
#include "llama_tiny.h"
#include "qwen2_tiny.h"

#include "TestDirectory.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

using namespace attn::runtime;

namespace {

struct Generated {
  const char *plan;
  const attnc_kernel_entry *table;
  size_t size;
};

const KernelEntry *entries(const attnc_kernel_entry *table) {
  return reinterpret_cast<const KernelEntry *>(table);
}

/// Writes `tensors` as a safetensors file; returns its path.
std::string writeSafetensors(
    const std::string &name,
    const std::vector<std::pair<ExpectedTensor, std::vector<float>>> &tensors) {
  std::vector<ExpectedTensor> headers;
  std::vector<const float *> data;
  for (const auto &[tensor, values] : tensors) {
    headers.push_back(tensor);
    data.push_back(values.data());
  }
  std::string path = attn::test::testDirectory() + "/" + name + ".safetensors";
  Status s = attn::runtime::writeSafetensors(path, headers, data);
  EXPECT_TRUE(s) << s.message();
  return path;
}

/// Random weights for every tensor `plan` needs: norms' weights near 1,
/// everything else uniform in ±0.5/sqrt(fan-in) (logits stay O(1)).
std::vector<std::pair<ExpectedTensor, std::vector<float>>>
randomWeights(const ModelPlan &plan, unsigned seed,
              WeightNaming naming = WeightNaming::Bart) {
  std::mt19937 rng(seed);
  std::vector<std::pair<ExpectedTensor, std::vector<float>>> tensors;
  for (const ExpectedTensor &tensor : Model::requiredTensors(plan, naming)) {
    size_t count = 1;
    for (int64_t extent : tensor.shape)
      count *= size_t(extent);
    bool norm = tensor.name.find("norm.weight") != std::string::npos ||
                tensor.name.find("layernorm.weight") != std::string::npos;
    double fanIn = tensor.shape.size() == 2 ? double(tensor.shape[1]) : 4.0;
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(count);
    for (float &v : values)
      v = norm ? 1.0f + 0.2f * uniform(rng)
               : float(uniform(rng) * 1.5 / std::sqrt(fanIn));
    tensors.push_back({tensor, values});
  }
  return tensors;
}

std::unique_ptr<Model> loadRandom(const Generated &g, const std::string &name,
                                  unsigned seed = 7,
                                  WeightNaming naming = WeightNaming::Bart) {
  ModelPlan plan;
  Status parsed = parsePlan(g.plan, entries(g.table), g.size, plan);
  EXPECT_TRUE(parsed) << parsed.message();
  std::string path = writeSafetensors(name, randomWeights(plan, seed, naming));
  std::unique_ptr<Model> model;
  Status loaded =
      Model::load(g.plan, entries(g.table), g.size, path, naming, model);
  EXPECT_TRUE(loaded) << loaded.message();
  return model;
}

const Generated kPaged{encdec_paged_plan_json, encdec_paged_kernel_table,
                       ENCDEC_PAGED_KERNEL_TABLE_SIZE};
const Generated kContiguous{encdec_contiguous_plan_json,
                            encdec_contiguous_kernel_table,
                            ENCDEC_CONTIGUOUS_KERNEL_TABLE_SIZE};
const Generated kInt8{encdec_int8_plan_json, encdec_int8_kernel_table,
                      ENCDEC_INT8_KERNEL_TABLE_SIZE};
const Generated kPost{encdec_post_plan_json, encdec_post_kernel_table,
                      ENCDEC_POST_KERNEL_TABLE_SIZE};
const Generated kBart{bart_tiny_plan_json, bart_tiny_kernel_table,
                      BART_TINY_KERNEL_TABLE_SIZE};
const Generated kMarian{marian_tiny_plan_json, marian_tiny_kernel_table,
                        MARIAN_TINY_KERNEL_TABLE_SIZE};
const Generated kDecoderRope{decoder_rope_plan_json, decoder_rope_kernel_table,
                             DECODER_ROPE_KERNEL_TABLE_SIZE};
const Generated kWindow{decoder_window_plan_json, decoder_window_kernel_table,
                        DECODER_WINDOW_KERNEL_TABLE_SIZE};
const Generated kGpt2{gpt2_tiny_plan_json, gpt2_tiny_kernel_table,
                      GPT2_TINY_KERNEL_TABLE_SIZE};
const Generated kLlama{llama_tiny_plan_json, llama_tiny_kernel_table,
                       LLAMA_TINY_KERNEL_TABLE_SIZE};

/// Caches for one sequence of an encoder-decoder model whose source is
/// encoded and whose cross-attention K/V are stored: ready to decode.
struct EncodedSource {
  KvCache self, cross;
  SequenceId selfId = -1, crossId = -1;
};

testing::AssertionResult encodeSource(const Model &model,
                                      const std::vector<int32_t> &source,
                                      ExecutionContext &context,
                                      EncodedSource &out) {
  KvCacheConfig selfConfig, crossConfig;
  std::vector<float> memory;
  const int length = int(source.size());
  Status s = model.selfCacheConfig(1, selfConfig);
  if (s)
    s = model.crossCacheConfig(1, crossConfig);
  if (s)
    s = KvCache::create(selfConfig, out.self);
  if (s)
    s = KvCache::create(crossConfig, out.cross);
  if (s)
    s = out.self.addSequence(out.selfId);
  if (s)
    s = out.cross.addSequence(out.crossId);
  if (s)
    s = model.encode(source.data(), length, memory, context);
  if (s)
    s = model.storeCrossKeyValues(memory.data(), length, out.cross, out.crossId,
                                  context);
  if (s)
    return testing::AssertionSuccess();
  return testing::AssertionFailure() << s.message();
}

/// The lowest index of the largest of `logits`, -1 if one is NaN.
int32_t firstLargest(const float *logits, int vocabulary) {
  for (int i = 0; i < vocabulary; i++)
    if (std::isnan(logits[i]))
      return -1;
  return int32_t(std::max_element(logits, logits + vocabulary) - logits);
}

double maxAbsDifference(const float *a, const float *b, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; i++)
    worst = std::max(worst, std::isnan(a[i]) || std::isnan(b[i])
                                ? INFINITY
                                : std::fabs(double(a[i]) - b[i]));
  return worst;
}

/// Decodes a batch of ragged sequences step by step over the caches and
/// checks every step's logits against the decoder without a cache; returns
/// the logits of all steps (for comparing cache layouts).
std::vector<float> decodeAndCompare(const Model &model,
                                    const std::vector<int> &sourceLengths,
                                    int steps, bool encoderDecoder) {
  const int batch = int(sourceLengths.size());
  const int vocabulary = model.targetVocabulary();
  ExecutionContext context(model);
  KvCacheConfig selfConfig, crossConfig;
  EXPECT_TRUE(model.selfCacheConfig(batch, selfConfig));
  EXPECT_TRUE(model.crossCacheConfig(batch, crossConfig));
  KvCache selfCache, crossCache;
  EXPECT_TRUE(KvCache::create(selfConfig, selfCache));
  if (encoderDecoder)
    EXPECT_TRUE(KvCache::create(crossConfig, crossCache));

  std::vector<std::vector<float>> memories(batch);
  std::vector<SequenceId> selfIds(batch), crossIds(batch);
  for (int b = 0; b < batch; b++) {
    if (encoderDecoder) {
      std::vector<int32_t> source(sourceLengths[b]);
      for (int i = 0; i < sourceLengths[b]; i++)
        source[i] = (i * 7 + b * 3 + 1) % model.sourceVocabulary();
      Status s =
          model.encode(source.data(), int(source.size()), memories[b], context);
      EXPECT_TRUE(s) << s.message();
      EXPECT_TRUE(crossCache.addSequence(crossIds[b]));
      s = model.storeCrossKeyValues(memories[b].data(), sourceLengths[b],
                                    crossCache, crossIds[b], context);
      EXPECT_TRUE(s) << s.message();
    }
    EXPECT_TRUE(selfCache.addSequence(selfIds[b]));
  }
  std::vector<std::vector<int32_t>> prefixes(batch);
  std::vector<float> all, logits(size_t(batch) * vocabulary), reference;
  double worst = 0;
  for (int step = 0; step < steps; step++) {
    std::vector<int32_t> tokens(batch);
    for (int b = 0; b < batch; b++) {
      tokens[b] = (step * 5 + b * 11 + 1) % vocabulary;
      prefixes[b].push_back(tokens[b]);
    }
    std::vector<int32_t> greedy(batch, -2);
    Status s =
        model.decodeStep(selfIds.data(), crossIds.data(), tokens.data(), batch,
                         selfCache, encoderDecoder ? &crossCache : nullptr,
                         logits.data(), context, nullptr, greedy.data());
    EXPECT_TRUE(s) << s.message();
    // The head kernel's argmax is the argmax of the logits it wrote.
    for (int b = 0; b < batch; b++)
      EXPECT_EQ(greedy[b],
                firstLargest(&logits[size_t(b) * vocabulary], vocabulary))
          << "step " << step << ", sequence " << b;
    all.insert(all.end(), logits.begin(), logits.end());
    for (int b = 0; b < batch; b++) {
      reference.resize(prefixes[b].size() * vocabulary);
      s = model.decodeWithoutCache(prefixes[b].data(), int(prefixes[b].size()),
                                   encoderDecoder ? memories[b].data()
                                                  : nullptr,
                                   sourceLengths[b], reference.data(), context);
      EXPECT_TRUE(s) << s.message();
      worst = std::max(
          worst,
          maxAbsDifference(&logits[size_t(b) * vocabulary],
                           &reference[(prefixes[b].size() - 1) * vocabulary],
                           vocabulary));
    }
  }
  EXPECT_LE(worst, 1e-5) << "cache vs recomputation";
  EXPECT_TRUE(selfCache.checkInvariants());
  // A sliding-window layer's pool holds each sequence's window, however far
  // the steps went past it.
  for (size_t layer = 0; layer < selfConfig.windows.size(); layer++)
    if (int window = selfConfig.windows[layer])
      EXPECT_LE(selfCache.usedPages(int(layer)),
                batch * attn::kvPagesPerSequence(selfConfig.maxSequenceLength,
                                                 selfConfig.pageSize, window))
          << "layer " << layer;
  return all;
}

TEST(ModelTest, EncoderDecoderCacheMatchesRecomputation) {
  auto model = loadRandom(kPaged, "paged");
  ASSERT_TRUE(model);
  // Ragged sources (1, 7 and 13 tokens: one, two and four pages of 4),
  // 11 steps (three pages of the self cache).
  decodeAndCompare(*model, {1, 7, 13}, 11, true);
}

/// encdec_post's encoder (BART-style: scaled embedding, learned positions 2
/// rows in, layernorm_embedding, post-norm blocks, exact GELU) in double,
/// from the weights by name: [tokens][d].
std::vector<double>
postNormEncoderReference(const std::map<std::string, std::vector<float>> &w,
                         const std::vector<int32_t> &tokens) {
  const int d = 32, heads = 4, hd = 8, f = 48, t = int(tokens.size());
  auto at = [&](const std::string &name) -> const std::vector<float> & {
    auto it = w.find(name);
    EXPECT_NE(it, w.end()) << name;
    static const std::vector<float> none(4096, 0.0f);
    return it == w.end() ? none : it->second;
  };
  auto layerNorm = [&](std::vector<double> &x, const std::string &name) {
    const std::vector<float> &g = at(name + ".weight"), &b = at(name + ".bias");
    for (int i = 0; i < t; i++) {
      double mean = 0, var = 0;
      for (int c = 0; c < d; c++)
        mean += x[i * d + c] / d;
      for (int c = 0; c < d; c++)
        var += (x[i * d + c] - mean) * (x[i * d + c] - mean) / d;
      for (int c = 0; c < d; c++)
        x[i * d + c] =
            (x[i * d + c] - mean) / std::sqrt(var + 1e-5) * g[c] + b[c];
    }
  };
  // y [t][out] = x [t][in] · Wᵀ + b, W [out][in] as PyTorch stores it.
  auto linear = [&](const std::vector<double> &x, int in, int out,
                    const std::string &name) {
    const std::vector<float> &wt = at(name + ".weight"),
                             &b = at(name + ".bias");
    std::vector<double> y(size_t(t) * out);
    for (int i = 0; i < t; i++)
      for (int o = 0; o < out; o++) {
        double sum = b[o];
        for (int k = 0; k < in; k++)
          sum += x[i * in + k] * double(wt[size_t(o) * in + k]);
        y[i * out + o] = sum;
      }
    return y;
  };
  std::vector<double> x(size_t(t) * d);
  const std::vector<float> &table = at("model.encoder.embed_tokens.weight"),
                           &positions =
                               at("model.encoder.embed_positions.weight");
  for (int i = 0; i < t; i++)
    for (int c = 0; c < d; c++)
      x[i * d + c] =
          table[tokens[i] * d + c] * 5.656854249 + positions[(i + 2) * d + c];
  layerNorm(x, "model.encoder.layernorm_embedding");
  for (int layer = 0; layer < 2; layer++) {
    std::string p = "model.encoder.layers." + std::to_string(layer) + ".";
    std::vector<double> q = linear(x, d, d, p + "self_attn.q_proj"),
                        k = linear(x, d, d, p + "self_attn.k_proj"),
                        v = linear(x, d, d, p + "self_attn.v_proj"),
                        o(size_t(t) * d, 0.0);
    for (int h = 0; h < heads; h++)
      for (int i = 0; i < t; i++) {
        std::vector<double> s(t);
        double top = -1e300, sum = 0;
        for (int j = 0; j < t; j++) {
          double dot = 0;
          for (int c = 0; c < hd; c++)
            dot += q[i * d + h * hd + c] * k[j * d + h * hd + c];
          s[j] = dot / std::sqrt(double(hd));
          top = std::max(top, s[j]);
        }
        for (int j = 0; j < t; j++)
          sum += s[j] = std::exp(s[j] - top);
        for (int j = 0; j < t; j++)
          for (int c = 0; c < hd; c++)
            o[i * d + h * hd + c] += s[j] / sum * v[j * d + h * hd + c];
      }
    std::vector<double> attended = linear(o, d, d, p + "self_attn.out_proj");
    for (size_t i = 0; i < x.size(); i++)
      x[i] += attended[i];
    layerNorm(x, p + "self_attn_layer_norm");
    std::vector<double> hidden = linear(x, d, f, p + "fc1");
    for (double &h : hidden)
      h = 0.5 * h * (1 + std::erf(h / std::sqrt(2.0)));
    std::vector<double> down = linear(hidden, f, d, p + "fc2");
    for (size_t i = 0; i < x.size(); i++)
      x[i] += down[i];
    layerNorm(x, p + "final_layer_norm");
  }
  return x;
}

TEST(ModelTest, PostNormEncoderMatchesDoubleReference) {
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kPost.plan, entries(kPost.table), kPost.size, plan));
  auto tensors = randomWeights(plan, 5);
  std::map<std::string, std::vector<float>> byName;
  for (const auto &[tensor, values] : tensors)
    byName[tensor.name] = values;
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::load(kPost.plan, entries(kPost.table), kPost.size,
                          writeSafetensors("post", tensors), WeightNaming::Bart,
                          model));
  ExecutionContext context(*model);
  for (int length : {1, 7, 13}) {
    std::vector<int32_t> source(length);
    for (int i = 0; i < length; i++)
      source[i] = (i * 5 + 3) % 11;
    std::vector<float> memory;
    ASSERT_TRUE(model->encode(source.data(), length, memory, context));
    std::vector<double> expected = postNormEncoderReference(byName, source);
    ASSERT_EQ(memory.size(), expected.size());
    double worst = 0;
    for (size_t i = 0; i < memory.size(); i++)
      worst = std::max(worst, std::fabs(memory[i] - expected[i]));
    // fp32 through 2 blocks of O(1) activations (every one normalized).
    EXPECT_LE(worst, 1e-4) << length << " tokens";
  }
}

TEST(ModelTest, PostNormEncoderDecoderCacheMatchesRecomputation) {
  auto model = loadRandom(kPost, "post-cache");
  ASSERT_TRUE(model);
  decodeAndCompare(*model, {1, 7, 13}, 11, true);
}

TEST(ModelTest, CacheMemoryEqualsTheCompilersPlan) {
  // The runtime's self and cross caches for max_batch sequences take
  // exactly the bytes attnc's --attn-plan-kv-cache reported.
  for (const Generated *g : {&kPaged, &kContiguous, &kLlama, &kInt8}) {
    auto model =
        loadRandom(*g, "accounting", 7,
                   g == &kLlama ? WeightNaming::Llama : WeightNaming::Bart);
    ASSERT_TRUE(model);
    const ModelPlan &plan = model->plan();
    KvCacheConfig self, cross;
    ASSERT_TRUE(model->selfCacheConfig(plan.maxBatch, self));
    ASSERT_TRUE(model->crossCacheConfig(plan.maxBatch, cross));
    size_t bytes = 0;
    for (const KvCacheConfig &config : {self, cross})
      if (config.numLayers > 0) {
        KvCache cache;
        ASSERT_TRUE(KvCache::create(config, cache));
        bytes += cache.poolBytes();
      }
    EXPECT_GT(plan.kvBytes, 0);
    EXPECT_EQ(int64_t(bytes), plan.kvBytes) << plan.name;
  }
}

TEST(ModelTest, Int8CacheStaysCloseToTheF32Cache) {
  // The same model and weights with an int8 cache (a scale per token and
  // head row) and with an f32 cache: every decoded K/V element is within
  // half a step (max|row| / 254) of the f32 one, so the logits move by
  // quantization noise, far below the O(1) logits; a lost scale (x127)
  // or a wrong row would not be.
  auto int8 = loadRandom(kInt8, "int8", 9);
  auto f32 = loadRandom(kPaged, "int8-f32", 9);
  ASSERT_TRUE(int8 && f32);
  EXPECT_EQ(int8->plan().ops.size(), f32->plan().ops.size());
  for (auto *model : {int8.get(), f32.get()}) {
    KvCacheConfig config;
    ASSERT_TRUE(model->selfCacheConfig(1, config));
    EXPECT_EQ(config.dtype, model == int8.get() ? DType::I8 : DType::F32);
  }
  std::vector<float> logits[2];
  for (int m = 0; m < 2; m++) {
    Model &model = m == 0 ? *int8 : *f32;
    ExecutionContext context(model);
    EncodedSource encoded;
    ASSERT_TRUE(encodeSource(model, {1, 4, 2, 8, 5, 7}, context, encoded));
    std::vector<float> step(model.plan().ops.back().vocabSize);
    for (int t = 0; t < 9; t++) {
      int32_t token = (t * 5 + 1) % 13;
      Status s =
          model.decodeStep(&encoded.selfId, &encoded.crossId, &token, 1,
                           encoded.self, &encoded.cross, step.data(), context);
      ASSERT_TRUE(s) << s.message();
      logits[m].insert(logits[m].end(), step.begin(), step.end());
    }
  }
  double worst =
      maxAbsDifference(logits[0].data(), logits[1].data(), logits[0].size());
  EXPECT_GT(worst, 0.0);  // the caches differ...
  EXPECT_LE(worst, 0.05); // ...by quantization noise (observed 0.006)
}

TEST(ModelTest, PagedAndContiguousCachesGiveIdenticalLogits) {
  auto paged = loadRandom(kPaged, "paged2", 9);
  auto contiguous = loadRandom(kContiguous, "contiguous", 9);
  ASSERT_TRUE(paged && contiguous);
  std::vector<float> a = decodeAndCompare(*paged, {5, 2}, 9, true);
  std::vector<float> b = decodeAndCompare(*contiguous, {5, 2}, 9, true);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(maxAbsDifference(a.data(), b.data(), a.size()), 0.0);
}

TEST(ModelTest, DecoderOnlyRopeCacheMatchesRecomputation) {
  auto model = loadRandom(kDecoderRope, "rope");
  ASSERT_TRUE(model);
  decodeAndCompare(*model, {0, 0, 0, 0}, 17, false);
}

TEST(ModelTest, SlidingWindowMqaSoftcapCacheMatchesRecomputation) {
  // A 5-key window over 4-token pages, one KV head for four query heads,
  // logits capped at 30: 23 steps leave the window far behind the start.
  auto model = loadRandom(kWindow, "window");
  ASSERT_TRUE(model);
  decodeAndCompare(*model, {0, 0}, 23, false);
}

TEST(ModelTest, Gpt2FromHuggingFaceConfigCacheMatchesRecomputation) {
  // GPT-2 names: Conv1D weights [in][out], Q|K|V in one c_attn tensor, the
  // head tied to wte (listed once), learned positions, GELU (tanh).
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kGpt2.plan, entries(kGpt2.table), kGpt2.size, plan));
  std::vector<ExpectedTensor> tensors =
      Model::requiredTensors(plan, WeightNaming::Gpt2);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ExpectedTensor &t : tensors)
    EXPECT_TRUE(shapes.emplace(t.name, t.shape).second) << t.name;
  EXPECT_EQ(shapes["transformer.wte.weight"], (std::vector<int64_t>{19, 32}));
  EXPECT_EQ(shapes["transformer.wpe.weight"], (std::vector<int64_t>{48, 32}));
  EXPECT_EQ(shapes["transformer.h.1.attn.c_attn.weight"],
            (std::vector<int64_t>{32, 96}));
  EXPECT_EQ(shapes["transformer.h.1.mlp.c_fc.weight"],
            (std::vector<int64_t>{32, 128}));
  EXPECT_EQ(shapes["transformer.h.1.mlp.c_proj.weight"],
            (std::vector<int64_t>{128, 32}));
  EXPECT_EQ(shapes.count("transformer.ln_f.bias"), 1u);
  EXPECT_EQ(shapes.count("lm_head.weight"), 0u);
  EXPECT_EQ(tensors.size(), 2u + 2 * 12 + 2);
  auto model = loadRandom(kGpt2, "gpt2", 4, WeightNaming::Gpt2);
  ASSERT_TRUE(model);
  decodeAndCompare(*model, {0, 0, 0}, 21, false);
}

TEST(ModelTest, BartFromHuggingFaceConfigCacheMatchesRecomputation) {
  // The whole post-norm model under BART's tensor names: positions 2 rows
  // in, layernorm_embedding, each sublayer's norm after it.
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kBart.plan, entries(kBart.table), kBart.size, plan));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ExpectedTensor &t :
       Model::requiredTensors(plan, WeightNaming::Bart))
    EXPECT_TRUE(shapes.emplace(t.name, t.shape).second) << t.name;
  EXPECT_EQ(shapes["model.encoder.embed_positions.weight"],
            (std::vector<int64_t>{26, 32}));
  EXPECT_EQ(shapes["model.decoder.layernorm_embedding.weight"],
            (std::vector<int64_t>{32}));
  EXPECT_EQ(shapes["model.decoder.layers.1.encoder_attn_layer_norm.bias"],
            (std::vector<int64_t>{32}));
  EXPECT_EQ(shapes["model.decoder.layers.1.final_layer_norm.weight"],
            (std::vector<int64_t>{32}));
  EXPECT_EQ(shapes["model.encoder.layers.0.fc1.weight"],
            (std::vector<int64_t>{40, 32}));
  EXPECT_EQ(shapes["model.decoder.layers.0.fc2.weight"],
            (std::vector<int64_t>{32, 56}));
  EXPECT_EQ(shapes.count("model.encoder.layer_norm.weight"), 0u); // post-norm
  auto model = loadRandom(kBart, "bart", 6);
  ASSERT_TRUE(model);
  decodeAndCompare(*model, {3, 9}, 13, true);
}

TEST(ModelTest, MarianPositionsAreComputedWithOrWithoutTheirTable) {
  // Marian's sinusoids are a frozen buffer: older uploads hold it as
  // model.{encoder,decoder}.embed_positions.weight, what save_pretrained
  // writes now may not. The kernel computes them, so both load, to the same
  // logits; the cache agrees with recomputation.
  ModelPlan plan;
  ASSERT_TRUE(
      parsePlan(kMarian.plan, entries(kMarian.table), kMarian.size, plan));
  auto without = randomWeights(plan, 33, WeightNaming::Bart);
  for (const auto &[tensor, values] : without)
    EXPECT_EQ(tensor.name.find("embed_positions"), std::string::npos);
  // The table as transformers fills it (float64, sines first), 24 x 32.
  const int64_t positions = 24, d = plan.dModel;
  std::vector<float> table(size_t(positions * d));
  for (int64_t p = 0; p < positions; p++)
    for (int64_t j = 0; j < d; j++) {
      double angle = double(p) / std::pow(10000.0, 2.0 * double(j / 2) / d);
      table[size_t(p * d + (j % 2 ? d / 2 + j / 2 : j / 2))] =
          float(j % 2 ? std::cos(angle) : std::sin(angle));
    }
  auto with = without;
  for (const char *stack : {"encoder", "decoder"})
    with.push_back({{std::string("model.") + stack + ".embed_positions.weight",
                     TensorType::F32, {positions, d}},
                    table});
  const int64_t vocab = plan.ops.back().vocabSize;
  std::vector<int32_t> source = {3, 1, 4, 1, 5, 9, 2}, prefix = {0, 7, 2, 6};
  std::vector<float> reference;
  for (auto *tensors : {&without, &with}) {
    std::string path = writeSafetensors("marian", *tensors);
    std::unique_ptr<Model> model;
    Status s = Model::load(kMarian.plan, entries(kMarian.table), kMarian.size,
                           path, WeightNaming::Bart, model);
    ASSERT_TRUE(s) << s.message();
    ExecutionContext context(*model);
    std::vector<float> memory, logits(prefix.size() * vocab);
    ASSERT_TRUE(
        model->encode(source.data(), int(source.size()), memory, context));
    ASSERT_TRUE(model->decodeWithoutCache(prefix.data(), int(prefix.size()),
                                          memory.data(), int(source.size()),
                                          logits.data(), context));
    if (reference.empty())
      reference = logits;
    else
      EXPECT_EQ(logits, reference);
    decodeAndCompare(*model, {3, 9, 4}, 11, true);
  }
}

TEST(ModelTest, TiedEmbeddingCheckpointsLoadLikeUntiedOnes) {
  // Hugging Face saves BART's tied weights once: model.shared for both
  // embeddings and the head, whose bias is the buffer final_logits_bias
  // [1][vocab]. The same weights written untied, tied, and with both copies
  // must give the same logits.
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kBart.plan, entries(kBart.table), kBart.size, plan));
  auto untied = randomWeights(plan, 21, WeightNaming::Bart);
  auto find = [&](const std::string &name) -> std::vector<float> & {
    for (auto &[tensor, values] : untied)
      if (tensor.name == name)
        return values;
    ADD_FAILURE() << "no " << name;
    static std::vector<float> none;
    return none;
  };
  const std::vector<float> shared = find("model.decoder.embed_tokens.weight"),
                           bias = find("lm_head.bias");
  find("model.encoder.embed_tokens.weight") = shared;
  find("lm_head.weight") = shared;
  const int64_t vocab = plan.ops.back().vocabSize, d = plan.dModel;
  auto tied = untied;
  std::set<std::string> dropped = {"model.encoder.embed_tokens.weight",
                                   "model.decoder.embed_tokens.weight",
                                   "lm_head.weight", "lm_head.bias"};
  tied.erase(
      std::remove_if(tied.begin(), tied.end(),
                     [&](auto &t) { return dropped.count(t.first.name); }),
      tied.end());
  tied.push_back(
      {{"model.shared.weight", TensorType::F32, {vocab, d}}, shared});
  tied.push_back({{"final_logits_bias", TensorType::F32, {1, vocab}}, bias});
  auto both = untied;
  both.push_back(
      {{"model.shared.weight", TensorType::F32, {vocab, d}}, shared});

  std::vector<int32_t> source = {3, 1, 4, 1, 5}, prefix = {0, 7, 2};
  std::vector<float> reference;
  for (auto *tensors : {&untied, &tied, &both}) {
    std::string path = writeSafetensors("tied", *tensors);
    std::unique_ptr<Model> model;
    Status s = Model::load(kBart.plan, entries(kBart.table), kBart.size, path,
                           WeightNaming::Bart, model);
    ASSERT_TRUE(s) << s.message();
    ExecutionContext context(*model);
    std::vector<float> memory, logits(prefix.size() * vocab);
    ASSERT_TRUE(
        model->encode(source.data(), int(source.size()), memory, context));
    ASSERT_TRUE(model->decodeWithoutCache(prefix.data(), int(prefix.size()),
                                          memory.data(), int(source.size()),
                                          logits.data(), context));
    if (reference.empty())
      reference = logits;
    else
      EXPECT_EQ(logits, reference); // the same floats, the same kernels
  }

  // Neither copy: the error names the tensor.
  tied.erase(std::remove_if(
                 tied.begin(), tied.end(),
                 [](auto &t) { return t.first.name == "model.shared.weight"; }),
             tied.end());
  std::unique_ptr<Model> model;
  Status s = Model::load(kBart.plan, entries(kBart.table), kBart.size,
                         writeSafetensors("untied_missing", tied),
                         WeightNaming::Bart, model);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("missing lm_head.weight"), std::string::npos)
      << s.message();
}

TEST(ModelTest, LlamaFromHuggingFaceConfigCacheMatchesRecomputation) {
  // attnc imported config.json: GQA 6/2, RoPE, RMS norm, SiLU-gated MLP,
  // Llama tensor names.
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kLlama.plan, entries(kLlama.table), kLlama.size, plan));
  std::vector<ExpectedTensor> tensors =
      Model::requiredTensors(plan, WeightNaming::Llama);
  auto has = [&](const std::string &name) {
    for (const ExpectedTensor &t : tensors)
      if (t.name == name)
        return true;
    return false;
  };
  EXPECT_TRUE(has("model.embed_tokens.weight"));
  EXPECT_TRUE(has("model.layers.1.input_layernorm.weight"));
  EXPECT_TRUE(has("model.layers.1.self_attn.o_proj.weight"));
  EXPECT_TRUE(has("model.layers.1.post_attention_layernorm.weight"));
  EXPECT_TRUE(has("model.layers.1.mlp.gate_proj.weight"));
  EXPECT_TRUE(has("model.layers.1.mlp.down_proj.weight"));
  EXPECT_TRUE(has("model.norm.weight"));
  EXPECT_TRUE(has("lm_head.weight"));
  EXPECT_FALSE(has("model.layers.0.self_attn.q_proj.bias"));
  auto model = loadRandom(kLlama, "llama", 5, WeightNaming::Llama);
  ASSERT_TRUE(model);
  decodeAndCompare(*model, {0, 0, 0}, 19, false);
}

TEST(ModelTest, ShardedSixteenBitCheckpointsLoadAsPublished) {
  // A checkpoint as Hugging Face publishes it: bf16 linear weights, an f16
  // embedding, f32 norms, in 3 shards with an index, opened by its folder;
  // and the same values (rounded once) as one f32 file. The kernels see the
  // same floats: identical logits.
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kLlama.plan, entries(kLlama.table), kLlama.size, plan));
  auto tensors = randomWeights(plan, 31, WeightNaming::Llama);
  for (auto &[tensor, values] : tensors) {
    if (tensor.name.find("norm") != std::string::npos)
      continue;
    tensor.type = tensor.name == "model.embed_tokens.weight" ? TensorType::F16
                                                             : TensorType::BF16;
    std::vector<uint16_t> bits(values.size());
    DType type = tensor.type == TensorType::F16 ? DType::F16 : DType::BF16;
    encode(type, values.data(), bits.data(), values.size());
    decode(type, bits.data(), values.data(), values.size());
  }
  std::vector<ExpectedTensor> headers;
  std::vector<const float *> data;
  for (const auto &[tensor, values] : tensors) {
    headers.push_back(tensor);
    data.push_back(values.data());
  }
  std::string dir = attn::test::freshDirectory("llama_sharded");
  Status s = writeCheckpoint(dir, headers, data, 3);
  ASSERT_TRUE(s) << s.message();
  Checkpoint checkpoint;
  ASSERT_TRUE(Checkpoint::open(dir, checkpoint));
  EXPECT_EQ(checkpoint.files().size(), 3u);
  checkpoint.close();

  auto f32 = tensors;
  for (auto &[tensor, values] : f32)
    tensor.type = TensorType::F32;
  std::unique_ptr<Model> sharded, single;
  s = Model::load(kLlama.plan, entries(kLlama.table), kLlama.size, dir,
                  WeightNaming::Llama, sharded);
  ASSERT_TRUE(s) << s.message();
  ASSERT_TRUE(Model::load(kLlama.plan, entries(kLlama.table), kLlama.size,
                          writeSafetensors("llama_rounded", f32),
                          WeightNaming::Llama, single));
  EXPECT_EQ(decodeAndCompare(*sharded, {0, 0}, 9, false),
            decodeAndCompare(*single, {0, 0}, 9, false));

  // An untied head (tie_word_embeddings false) needs its own weight: the
  // embedding does not stand in for it.
  auto headless = f32;
  headless.erase(std::remove_if(headless.begin(), headless.end(),
                                [](auto &t) {
                                  return t.first.name == "lm_head.weight";
                                }),
                 headless.end());
  std::unique_ptr<Model> noHead;
  s = Model::load(kLlama.plan, entries(kLlama.table), kLlama.size,
                  writeSafetensors("llama_headless", headless),
                  WeightNaming::Llama, noHead);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("missing lm_head.weight"), std::string::npos)
      << s.message();

  // Buffers older uploads carry load and change nothing; anything else
  // the plan does not use is named.
  std::vector<float> inverseFrequency(4, 0.5f);
  f32.push_back({{"model.layers.1.self_attn.rotary_emb.inv_freq",
                  TensorType::F32, {4}},
                 inverseFrequency});
  std::unique_ptr<Model> withBuffer;
  s = Model::load(kLlama.plan, entries(kLlama.table), kLlama.size,
                  writeSafetensors("llama_inv_freq", f32), WeightNaming::Llama,
                  withBuffer);
  ASSERT_TRUE(s) << s.message();
  f32.push_back({{"model.layers.1.self_attn.rotary.scale", TensorType::F32,
                  {4}},
                 inverseFrequency});
  s = Model::load(kLlama.plan, entries(kLlama.table), kLlama.size,
                  writeSafetensors("llama_extra", f32), WeightNaming::Llama,
                  withBuffer);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("unexpected model.layers.1.self_attn.rotary.scale"),
            std::string::npos)
      << s.message();
}

TEST(ModelTest, PlansOfHuggingFaceConfigsNameTheirTensors) {
  // attnc writes the naming into the plan of a Hugging Face config; the
  // application need not pass it. A native description's plan has none.
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kLlama.plan, entries(kLlama.table), kLlama.size, plan));
  EXPECT_EQ(plan.weightNaming, "llama");
  std::string path =
      writeSafetensors("llama_named", randomWeights(plan, 8, WeightNaming::Llama));
  std::unique_ptr<Model> model;
  Status s = Model::load(kLlama.plan, entries(kLlama.table), kLlama.size, path,
                         model);
  ASSERT_TRUE(s) << s.message();
  s = Model::load(kPaged.plan, entries(kPaged.table), kPaged.size, path, model);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("does not say how its checkpoint names tensors"),
            std::string::npos)
      << s.message();
}

TEST(ModelTest, Qwen2HasNoOutputBiasAndWindowsOnlyLaterLayers) {
  // Qwen2: Q/K/V biases but none on o_proj (what real checkpoints hold);
  // layer 0 (below max_window_layers) attends fully, layer 1 in a window
  // of 8, shorter than the decode below.
  const Generated qwen2{qwen2_tiny_plan_json, qwen2_tiny_kernel_table,
                        QWEN2_TINY_KERNEL_TABLE_SIZE};
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(qwen2.plan, entries(qwen2.table), qwen2.size, plan));
  std::set<std::string> names;
  for (const ExpectedTensor &t :
       Model::requiredTensors(plan, WeightNaming::Llama))
    names.insert(t.name);
  EXPECT_TRUE(names.count("model.layers.1.self_attn.q_proj.bias"));
  EXPECT_TRUE(names.count("model.layers.1.self_attn.v_proj.bias"));
  EXPECT_FALSE(names.count("model.layers.1.self_attn.o_proj.bias"));
  std::vector<std::string> masks;
  for (const PlanOp &op : plan.ops)
    if (op.kind == OpKind::Attention)
      masks.push_back(op.prefill.name);
  ASSERT_EQ(masks.size(), 2u);
  EXPECT_EQ(masks[0].find("_w8"), std::string::npos) << masks[0];
  EXPECT_NE(masks[1].find("_w8"), std::string::npos) << masks[1];
  // tie_word_embeddings: the head is embed_tokens; an lm_head.weight the
  // checkpoint also holds is not what transformers computes with.
  EXPECT_FALSE(names.count("lm_head.weight"));
  auto model = loadRandom(qwen2, "qwen2", 4, WeightNaming::Llama);
  ASSERT_TRUE(model);
  std::vector<float> tied = decodeAndCompare(*model, {0, 0}, 14, false);
  auto tensors = randomWeights(plan, 4, WeightNaming::Llama);
  const int64_t vocab = plan.ops.back().vocabSize, d = plan.dModel;
  tensors.push_back({{"lm_head.weight", TensorType::F32, {vocab, d}},
                     std::vector<float>(size_t(vocab * d), 0.25f)});
  std::unique_ptr<Model> withHead;
  Status s = Model::load(qwen2.plan, entries(qwen2.table), qwen2.size,
                         writeSafetensors("qwen2_head", tensors),
                         WeightNaming::Llama, withHead);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(decodeAndCompare(*withHead, {0, 0}, 14, false), tied);
}

TEST(ModelTest, PromptPrefillThenDecodeMatchesRecomputation) {
  // Prompt processing fills the cache with the prefill kernels; decoding
  // continues over it. Every step's logits equal recomputing the prefix.
  auto model = loadRandom(kLlama, "llama_prefill", 8, WeightNaming::Llama);
  ASSERT_TRUE(model);
  const int vocabulary = model->targetVocabulary();
  ExecutionContext context(*model);
  KvCacheConfig config;
  ASSERT_TRUE(model->selfCacheConfig(1, config));
  KvCache cache;
  ASSERT_TRUE(KvCache::create(config, cache));
  SequenceId sequence;
  ASSERT_TRUE(cache.addSequence(sequence));
  std::vector<int32_t> tokens = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}; // 11
  std::vector<float> logits(vocabulary), reference;
  int32_t greedy = -2;
  Status s = model->prefill(tokens.data(), int(tokens.size()), cache, sequence,
                            logits.data(), context, &greedy);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(greedy, firstLargest(logits.data(), vocabulary));
  EXPECT_EQ(cache.length(sequence), 11);
  EXPECT_FALSE(model->prefill(tokens.data(), 3, cache, sequence, logits.data(),
                              context)); // not empty any more
  for (int step = 0; step < 8; step++) {
    reference.resize(tokens.size() * vocabulary);
    ASSERT_TRUE(model->decodeWithoutCache(tokens.data(), int(tokens.size()),
                                          nullptr, 0, reference.data(),
                                          context));
    EXPECT_LE(maxAbsDifference(logits.data(),
                               &reference[(tokens.size() - 1) * vocabulary],
                               vocabulary),
              1e-5)
        << "after " << tokens.size() << " tokens";
    int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) -
                           logits.begin());
    tokens.push_back(next);
    ASSERT_TRUE(model->decodeStep(&sequence, nullptr, &next, 1, cache, nullptr,
                                  logits.data(), context));
  }
}

/// Greedy tokens after the prompt `tokens`, recomputing the decoder over the
/// whole prefix every step; an encoder-decoder cross-attends to `source`
/// (encoded once).
std::vector<int32_t> greedyReference(const Model &model,
                                     std::vector<int32_t> tokens, int count,
                                     const std::vector<int32_t> &source = {}) {
  const int vocabulary = model.targetVocabulary();
  ExecutionContext context(model);
  std::vector<float> memory, logits;
  if (!source.empty())
    EXPECT_TRUE(
        model.encode(source.data(), int(source.size()), memory, context));
  std::vector<int32_t> generated;
  for (int i = 0; i < count; i++) {
    logits.resize(tokens.size() * vocabulary);
    EXPECT_TRUE(
        model.decodeWithoutCache(tokens.data(), int(tokens.size()),
                                 source.empty() ? nullptr : memory.data(),
                                 int(source.size()), logits.data(), context));
    const float *last = &logits[(tokens.size() - 1) * vocabulary];
    int32_t next = int32_t(std::max_element(last, last + vocabulary) - last);
    generated.push_back(next);
    tokens.push_back(next);
  }
  return generated;
}

TEST(GeneratorTest, ContinuousBatchingStopsAndCancellation) {
  auto model = loadRandom(kLlama, "generator", 11, WeightNaming::Llama);
  ASSERT_TRUE(model);
  std::vector<int32_t> a = {1, 2, 3, 4, 5}, b = {7, 7, 1, 9, 3, 2, 8, 4, 6};
  std::vector<int32_t> expectA = greedyReference(*model, a, 10),
                       expectB = greedyReference(*model, b, 8);
  std::unique_ptr<Generator> generator;
  ASSERT_TRUE(Generator::create(*model, 4, generator));
  int idA, idB, idStop, idCancel;
  GenerationRequest request;
  request.prompt = a;
  request.maxNewTokens = 10;
  ASSERT_TRUE(generator->submit(request, idA));
  for (int i = 0; i < 3; i++) // b joins a running batch
    ASSERT_TRUE(generator->step());
  request.prompt = b;
  request.maxNewTokens = 8;
  ASSERT_TRUE(generator->submit(request, idB));
  // The same prompt as a, stopping at a's third token.
  request.prompt = a;
  request.maxNewTokens = 10;
  request.stopTokens = {expectA[2]};
  ASSERT_TRUE(generator->submit(request, idStop));
  // Cancelled by its callback after two tokens.
  int seen = 0;
  request.stopTokens.clear();
  request.onToken = [&](int32_t) { return ++seen < 2; };
  ASSERT_TRUE(generator->submit(request, idCancel));
  ASSERT_TRUE(generator->run());
  EXPECT_EQ(generator->tokens(idA), expectA);
  EXPECT_EQ(generator->finishReason(idA), FinishReason::MaxTokens);
  EXPECT_EQ(generator->tokens(idB), expectB);
  // The stop token can appear earlier than a's third token.
  auto stopAt = std::find(expectA.begin(), expectA.end(), expectA[2]);
  EXPECT_EQ(generator->tokens(idStop),
            std::vector<int32_t>(expectA.begin(), stopAt + 1));
  EXPECT_EQ(generator->finishReason(idStop), FinishReason::StopToken);
  EXPECT_EQ(generator->tokens(idCancel).size(), 2u);
  EXPECT_EQ(generator->finishReason(idCancel), FinishReason::Cancelled);
  EXPECT_EQ(generator->running(), 0);
}

// One loaded Model serves several threads at once, each with its own
// Generator (and so its own caches and workspace): what a server does. The
// tokens equal a single thread's; scripts/test.sh runs this under
// ThreadSanitizer too (build-tsan).
TEST(GeneratorTest, ThreadsShareOneModel) {
  auto model = loadRandom(kLlama, "threads", 13, WeightNaming::Llama);
  ASSERT_TRUE(model);
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 2, 3, 4, 5}, {7, 7, 1, 9}, {3, 1, 4, 1, 5, 9, 2, 6}, {8}};
  std::vector<std::vector<int32_t>> expected;
  for (const std::vector<int32_t> &prompt : prompts)
    expected.push_back(greedyReference(*model, prompt, 6));
  std::vector<std::vector<std::vector<int32_t>>> got(prompts.size());
  std::vector<std::string> errors(prompts.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < prompts.size(); t++)
    threads.emplace_back([&, t] {
      std::unique_ptr<Generator> generator;
      if (Status s = Generator::create(*model, 2, generator); !s) {
        errors[t] = s.message();
        return;
      }
      for (int round = 0; round < 3; round++) {
        GenerationRequest request;
        // Two requests per round: this thread's prompt and the next one's.
        for (size_t p : {t, (t + 1) % prompts.size()}) {
          request.prompt = prompts[p];
          request.maxNewTokens = 6;
          int id;
          if (Status s = generator->submit(request, id); !s) {
            errors[t] = s.message();
            return;
          }
        }
        if (Status s = generator->run(); !s) {
          errors[t] = s.message();
          return;
        }
        for (int id = 2 * round; id < 2 * round + 2; id++)
          got[t].push_back(generator->tokens(id));
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (size_t t = 0; t < prompts.size(); t++) {
    ASSERT_EQ(errors[t], "") << "thread " << t;
    ASSERT_EQ(got[t].size(), 6u);
    for (int round = 0; round < 3; round++) {
      EXPECT_EQ(got[t][2 * round], expected[t]) << "thread " << t;
      EXPECT_EQ(got[t][2 * round + 1], expected[(t + 1) % prompts.size()])
          << "thread " << t;
    }
  }
}

TEST(GeneratorTest, SeedsCapacityAndErrors) {
  auto model = loadRandom(kLlama, "generator2", 12, WeightNaming::Llama);
  ASSERT_TRUE(model);
  auto sample = [&](uint64_t seed) {
    std::unique_ptr<Generator> generator;
    EXPECT_TRUE(Generator::create(*model, 1, generator));
    GenerationRequest request;
    request.prompt = {3, 1, 4};
    request.maxNewTokens = 12;
    request.sampling = {1.0f, 0, 0.9f, seed};
    int id;
    EXPECT_TRUE(generator->submit(request, id));
    EXPECT_TRUE(generator->run());
    return generator->tokens(id);
  };
  EXPECT_EQ(sample(5), sample(5));
  EXPECT_NE(sample(5), sample(6));

  // 35 prompt tokens in sequences of 40: 6 tokens, then the cache is full.
  std::unique_ptr<Generator> generator;
  ASSERT_TRUE(Generator::create(*model, 2, generator));
  GenerationRequest request;
  request.prompt.assign(35, 2);
  request.maxNewTokens = 20;
  int id;
  ASSERT_TRUE(generator->submit(request, id));
  ASSERT_TRUE(generator->run());
  EXPECT_EQ(generator->finishReason(id), FinishReason::CacheFull);
  EXPECT_EQ(generator->tokens(id).size(), 6u);
  request.prompt.assign(40, 2);
  EXPECT_EQ(generator->submit(request, id).code(),
            StatusCode::CapacityExceeded);
  request.prompt.clear();
  EXPECT_FALSE(generator->submit(request, id));
  request.prompt = {99}; // outside the vocabulary of 17
  EXPECT_FALSE(generator->submit(request, id));
  request.prompt = {2};
  request.source = {1, 2}; // a decoder-only model has no encoder
  EXPECT_EQ(generator->submit(request, id).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(generator->requests(), 1);
}

TEST(GeneratorTest, EncoderDecoderBatchesMatchRecomputation) {
  auto model = loadRandom(kPaged, "generator3", 2);
  ASSERT_TRUE(model);
  const std::vector<int32_t> sourceA = {1, 2, 3, 4, 5},
                             sourceB = {7, 3, 9, 9, 0, 10, 2, 6, 1};
  const std::vector<int32_t> promptA = {1}, promptB = {1, 4};
  std::vector<int32_t> expectA = greedyReference(*model, promptA, 9, sourceA),
                       expectB = greedyReference(*model, promptB, 7, sourceB);
  // Seed 2 gives sequences that vary with the position and the source (many
  // seeds of this tiny random model repeat one token): the test can fail.
  ASSERT_GE(std::set<int32_t>(expectA.begin(), expectA.end()).size(), 3u);
  ASSERT_NE(expectA, expectB);
  std::unique_ptr<Generator> generator;
  ASSERT_TRUE(Generator::create(*model, 3, generator));
  GenerationRequest request;
  CrossAttentionRows rowsA;
  request.source = sourceA;
  request.prompt = promptA;
  request.maxNewTokens = 9;
  request.crossAttention = &rowsA;
  int idA, idB, idStop;
  ASSERT_TRUE(generator->submit(request, idA));
  for (int i = 0; i < 3; i++) // b joins a running batch, its prompt in steps
    ASSERT_TRUE(generator->step());
  request = {};
  request.source = sourceB;
  request.prompt = promptB;
  request.maxNewTokens = 7;
  ASSERT_TRUE(generator->submit(request, idB));
  request.source = sourceA;
  request.prompt = promptA;
  request.maxNewTokens = 9;
  request.stopTokens = {expectA[1]};
  ASSERT_TRUE(generator->submit(request, idStop));
  ASSERT_TRUE(generator->run());
  EXPECT_EQ(generator->tokens(idA), expectA);
  EXPECT_EQ(generator->tokens(idB), expectB);
  auto stopAt = std::find(expectA.begin(), expectA.end(), expectA[1]);
  EXPECT_EQ(generator->tokens(idStop),
            std::vector<int32_t>(expectA.begin(), stopAt + 1));
  EXPECT_EQ(generator->finishReason(idStop), FinishReason::StopToken);
  // One row of weights over the source per generated token.
  ASSERT_EQ(rowsA.size(), expectA.size());
  for (const std::vector<float> &row : rowsA) {
    ASSERT_EQ(row.size(), sourceA.size());
    double sum = 0;
    for (float w : row)
      sum += w;
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }

  // Errors keep nothing: 3 requests before and after, all pages free.
  request = {};
  request.prompt = {1};
  request.maxNewTokens = 4;
  int id;
  EXPECT_EQ(generator->submit(request, id).code(), StatusCode::InvalidArgument)
      << "an encoder-decoder request needs a source";
  request.source.assign(65, 1); // the encoder's positions end at 64
  EXPECT_EQ(generator->submit(request, id).code(),
            StatusCode::CapacityExceeded);
  request.source = {1, 11}; // source vocabulary is 11
  EXPECT_EQ(generator->submit(request, id).code(), StatusCode::InvalidArgument);
  EXPECT_EQ(generator->requests(), 3);
  // The failed requests released their sequences: 3 fit again.
  request.source = sourceB;
  for (int i = 0; i < 3; i++)
    ASSERT_TRUE(generator->submit(request, id));
  EXPECT_EQ(generator->clear().code(), StatusCode::InvalidArgument)
      << "requests still run";
  ASSERT_TRUE(generator->run());
  EXPECT_EQ(generator->tokens(id), greedyReference(*model, {1}, 4, sourceB));
  // Forgotten, and the same capacity again, with the same results.
  ASSERT_TRUE(generator->clear());
  EXPECT_EQ(generator->requests(), 0);
  request.source = sourceA;
  request.prompt = promptA;
  request.maxNewTokens = 9;
  for (int i = 0; i < 3; i++)
    ASSERT_TRUE(generator->submit(request, id));
  ASSERT_TRUE(generator->run());
  EXPECT_EQ(generator->tokens(0), expectA);
  EXPECT_EQ(generator->tokens(2), expectA);
}

TEST(ModelTest, BadInputIsAnErrorAndChangesNothing) {
  auto model = loadRandom(kPaged, "errors");
  ASSERT_TRUE(model);
  ExecutionContext context(*model);
  std::vector<float> memory, logits(64 * 13);
  int32_t bad = 11; // source vocabulary is 11
  Status s = model->encode(&bad, 1, memory, context);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("token id 11 at index 0 is outside the "
                             "vocabulary [0, 11)"),
            std::string::npos)
      << s.message();

  KvCacheConfig selfConfig, crossConfig;
  ASSERT_TRUE(model->selfCacheConfig(2, selfConfig));
  ASSERT_TRUE(model->crossCacheConfig(2, crossConfig));
  KvCache selfCache, crossCache;
  ASSERT_TRUE(KvCache::create(selfConfig, selfCache));
  ASSERT_TRUE(KvCache::create(crossConfig, crossCache));
  SequenceId self, cross;
  ASSERT_TRUE(selfCache.addSequence(self));
  ASSERT_TRUE(crossCache.addSequence(cross));
  int32_t source[3] = {1, 2, 3};
  ASSERT_TRUE(model->encode(source, 3, memory, context));

  // An execution context made for another model (buffers sized from its
  // plan) is refused by every call that takes one, and nothing is stored.
  auto other = loadRandom(kPaged, "errors-other");
  ASSERT_TRUE(other);
  ExecutionContext othersContext(*other);
  for (Status refused :
       {model->encode(source, 3, memory, othersContext),
        model->storeCrossKeyValues(memory.data(), 3, crossCache, cross,
                                   othersContext)}) {
    EXPECT_EQ(refused.code(), StatusCode::InvalidArgument);
    EXPECT_NE(refused.message().find("made for another model"),
              std::string::npos)
        << refused.message();
  }
  EXPECT_EQ(crossCache.length(cross), 0);

  int32_t token = 1;
  // No encoder output stored yet.
  s = model->decodeStep(&self, &cross, &token, 1, selfCache, &crossCache,
                        logits.data(), context);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(selfCache.length(self), 0);
  ASSERT_TRUE(
      model->storeCrossKeyValues(memory.data(), 3, crossCache, cross, context));
  // No cross cache at all.
  s = model->decodeStep(&self, &cross, &token, 1, selfCache, nullptr,
                        logits.data(), context);
  EXPECT_NE(s.message().find("cross cache"), std::string::npos) << s.message();
  // A target token outside the vocabulary.
  int32_t badToken = -1;
  s = model->decodeStep(&self, &cross, &badToken, 1, selfCache, &crossCache,
                        logits.data(), context);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  // The same sequence twice in one batch.
  SequenceId twice[2] = {self, self}, crossTwice[2] = {cross, cross};
  int32_t tokens[2] = {1, 2};
  s = model->decodeStep(twice, crossTwice, tokens, 2, selfCache, &crossCache,
                        logits.data(), context);
  EXPECT_NE(s.message().find("twice"), std::string::npos) << s.message();
  EXPECT_EQ(selfCache.length(self), 0);
  // Decoding to capacity (24 tokens), then one more: an error, nothing grows.
  for (int step = 0; step < 24; step++)
    ASSERT_TRUE(model->decodeStep(&self, &cross, &token, 1, selfCache,
                                  &crossCache, logits.data(), context));
  s = model->decodeStep(&self, &cross, &token, 1, selfCache, &crossCache,
                        logits.data(), context);
  EXPECT_FALSE(s);
  EXPECT_EQ(selfCache.length(self), 24);
  EXPECT_TRUE(selfCache.checkInvariants());
}

TEST(ModelTest, WrongWeightsAreNamed) {
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kPaged.plan, entries(kPaged.table), kPaged.size, plan));
  auto tensors = randomWeights(plan, 3);
  // Drop one tensor, misshape another, add a stray one.
  std::string dropped = tensors[3].first.name;
  tensors.erase(tensors.begin() + 3);
  tensors[0].first.shape[0] += 1;
  tensors[0].second.resize(tensors[0].second.size() +
                           size_t(tensors[0].first.shape[1]));
  tensors.push_back({{"model.extra", TensorType::F32, {2}}, {1.0f, 2.0f}});
  std::string path = writeSafetensors("wrong", tensors);
  std::unique_ptr<Model> model;
  Status s = Model::load(kPaged.plan, entries(kPaged.table), kPaged.size, path,
                         WeightNaming::Bart, model);
  ASSERT_FALSE(s);
  EXPECT_FALSE(model);
  EXPECT_NE(s.message().find(dropped), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(tensors[0].first.name), std::string::npos);
  EXPECT_NE(s.message().find("model.extra"), std::string::npos);

  s = Model::load(kPaged.plan, entries(kPaged.table), kPaged.size,
                  attn::test::testDirectory() + "/missing.safetensors",
                  WeightNaming::Bart, model);
  EXPECT_FALSE(s);
}

TEST(ModelTest, PlanAndKernelTableMustAgree) {
  // A table without its first kernel: the plan names it, load refuses.
  std::vector<KernelEntry> table(entries(kPaged.table) + 1,
                                 entries(kPaged.table) + kPaged.size);
  ModelPlan plan;
  Status s = parsePlan(kPaged.plan, table.data(), table.size(), plan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find(kPaged.table[0].name), std::string::npos)
      << s.message();
  EXPECT_FALSE(
      parsePlan("{not json", entries(kPaged.table), kPaged.size, plan));
}

TEST(ModelTest, APlanThatDisagreesWithItsKernelsFailsTheCall) {
  // An FFN width edited in the plan (64 -> 32 in every block), with
  // weights of the edited shapes: loading succeeds, and the kernels,
  // specialized for 64, refuse the buffers before touching them. That is a
  // KernelFailed status with Halide's message ("Output buffer ... is
  // accessed at 127, which is beyond the max (63)"); Halide's default
  // handler used to abort the process.
  std::string plan = kLlama.plan;
  const std::string from = "\"intermediate_size\": 64";
  size_t edits = 0;
  for (size_t at; (at = plan.find(from)) != std::string::npos; edits++)
    plan.replace(at, from.size(), "\"intermediate_size\": 32");
  ASSERT_GT(edits, 0u);
  ModelPlan parsed;
  ASSERT_TRUE(parsePlan(plan, entries(kLlama.table), kLlama.size, parsed));
  std::string path = writeSafetensors(
      "tampered", randomWeights(parsed, 5, WeightNaming::Llama));
  std::unique_ptr<Model> model;
  Status s = Model::load(plan, entries(kLlama.table), kLlama.size, path,
                         WeightNaming::Llama, model);
  ASSERT_TRUE(s) << s.message();
  KvCacheConfig config;
  ASSERT_TRUE(model->selfCacheConfig(1, config));
  KvCache cache;
  ASSERT_TRUE(KvCache::create(config, cache));
  SequenceId sequence;
  ASSERT_TRUE(cache.addSequence(sequence));
  ExecutionContext context(*model);
  std::vector<float> logits(model->targetVocabulary());
  const std::vector<int32_t> prompt = {1, 2, 3};
  s = model->prefill(prompt.data(), int(prompt.size()), cache, sequence,
                     logits.data(), context);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), StatusCode::KernelFailed);
  EXPECT_NE(s.message().find("is beyond the max"), std::string::npos)
      << s.message();
}

// Two ops that name one tensor in different shapes (block 0's FFN deleted
// from the plan, so both attention ops are block 0's, and layer1's head_dim
// halved) are refused at load, naming both: the loader packs each op by its
// own shape and would read the file's one tensor past its end (found by
// fuzz-plan in CI: heap-buffer-overflow in readFloats).
TEST(ModelTest, OpsThatExpectOneTensorInTwoShapesAreRefused) {
  std::string plan = kLlama.plan;
  const size_t ffn = plan.find("\"name\": \"block0_ffn\"");
  ASSERT_NE(ffn, std::string::npos);
  const size_t begin = plan.rfind('{', ffn), end = plan.find("},", ffn);
  plan.erase(begin, end + 2 - begin);
  const size_t layer1 = plan.find("\"name\": \"layer1\"");
  const size_t headDim = plan.rfind("\"head_dim\": 8,", layer1);
  ASSERT_NE(headDim, std::string::npos);
  plan.replace(headDim, 14, "\"head_dim\": 4,");
  ModelPlan parsed;
  Status s = parsePlan(plan, entries(kLlama.table), kLlama.size, parsed);
  ASSERT_TRUE(s) << s.message();
  std::string path = writeSafetensors(
      "shared", randomWeights(parsed, 5, WeightNaming::Llama));
  std::unique_ptr<Model> model;
  s = Model::load(plan, entries(kLlama.table), kLlama.size, path,
                  WeightNaming::Llama, model);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_FALSE(model);
  EXPECT_NE(s.message().find("'layer0' and 'layer1' expect tensor "
                             "'model.layers.0.self_attn.q_proj.weight' as "
                             "[48, 48] and [24, 48]"),
            std::string::npos)
      << s.message();
}

// A plan of another schema version, or naming an element type no reader
// knows, is refused at parse with what to do (an unknown cache dtype used
// to become f32 silently).
TEST(ModelTest, PlansOfAnotherVersionOrUnknownDtypesAreRefused) {
  // `from` replaced by `to` (its first occurrence after `after`).
  auto refused = [&](const std::string &from, const std::string &to,
                     const std::string &why, const std::string &after = "") {
    std::string plan = kLlama.plan;
    size_t at = plan.find(from, plan.find(after));
    ASSERT_NE(at, std::string::npos) << from;
    plan.replace(at, from.size(), to);
    ModelPlan parsed;
    Status s = parsePlan(plan, entries(kLlama.table), kLlama.size, parsed);
    ASSERT_FALSE(s) << to;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  const std::string version = std::to_string(attn::plan::kVersion),
                    next = std::to_string(attn::plan::kVersion + 1),
                    current = "\"plan_version\": " + version + ",";
  refused(current, "\"plan_version\": " + next + ",",
          "plan_version " + next + ", this runtime reads version " + version +
              " (regenerate the model library with this attnc)");
  refused(current, "", "plan_version missing");
  refused("\"dtype\": \"f32\"", "\"dtype\": \"f8\"",
          "dtype must be f32, f16, bf16 or i8, got 'f8'");
  // i4 is a weight type: no cache stores it.
  refused("\"dtype\": \"f32\"", "\"dtype\": \"i4\"",
          "dtype must be f32, f16, bf16 or i8, got 'i4'");
  // The output head's own weights (its op's weight_dtype): the model's, or
  // f32, f16, bf16 or i8.
  refused("\"weight_dtype\": \"f32\"", "\"weight_dtype\": \"i4\"",
          "output head's weight_dtype must be the model's (f32) or f32, f16, "
          "bf16 or i8, got 'i4'",
          "\"op\": \"output_head\"");
  // A checkpoint's own int4 format: known, and on i4 weights only.
  refused("\"weight_format\": \"\"", "\"weight_format\": \"marlin\"",
          "weight_format must be gptq, gptq_v2 or awq, got 'marlin'");
  refused("\"weight_format\": \"\"", "\"weight_format\": \"gptq\"",
          "weight_format gptq needs i4 weights, not f32");
  // QK-norm's scope: one the runtime lays weights out for.
  refused("\"rope_theta\"", "\"qk_norm\": \"layer\", \"rope_theta\"",
          "qk_norm must be \"head\" or \"projection\"");
}

TEST(ModelTest, PlanSizesOutOfRangeAreRefused) {
  // A zero head_dim (found by fuzz-plan, fuzz/corpus/plan/head_dim_zero.json)
  // made an output projection of no inputs, which packing indexed as if it
  // had rows (UBSan: a reference to null); sizes past 2^30 would not fit a
  // kernel's int32 extents.
  for (const auto &[from, to] :
       {std::pair<std::string, std::string>{"\"head_dim\": 8", "\"head_dim\": 0"},
        {"\"intermediate_size\": 64", "\"intermediate_size\": 4294967296"},
        {"\"num_kv_heads\": 2", "\"num_kv_heads\": -2"}}) {
    std::string plan = kLlama.plan;
    size_t at = plan.find(from, plan.find("\"layers\"")); // a layer's
    if (from.find("intermediate_size") != std::string::npos)
      at = plan.find(from); // an FFN op's
    ASSERT_NE(at, std::string::npos) << from;
    plan.replace(at, from.size(), to);
    ModelPlan parsed;
    Status s = parsePlan(plan, entries(kLlama.table), kLlama.size, parsed);
    ASSERT_FALSE(s) << to;
    EXPECT_NE(s.message().find("must be an integer in [1, 1073741824]"),
              std::string::npos)
        << s.message();
  }
}

TEST(ModelTest, PlansThatContradictThemselvesAreRefused) {
  // A plan is generated, but a hand-edited one must not reach a kernel:
  // a fused cache append on a layer without a cache (the encoder's first
  // layer), a negative learned-position offset.
  auto edited = [](const std::string &from, const std::string &to) {
    std::string plan = kPaged.plan;
    size_t at = plan.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? plan : plan.replace(at, from.size(), to);
  };
  ModelPlan plan;
  Status s = parsePlan(
      edited("\"fused_cache_append\": false", "\"fused_cache_append\": true")
          .c_str(),
      entries(kPaged.table), kPaged.size, plan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("fuses a cache append but has no cache"),
            std::string::npos)
      << s.message();
  s = parsePlan(
      edited("\"position_offset\": 0", "\"position_offset\": -1").c_str(),
      entries(kPaged.table), kPaged.size, plan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'position_offset' must be an integer in [0, "),
            std::string::npos)
      << s.message();

  // Weights the runtime cannot lay out. The model's keys are the plan's
  // top level (indented 2; the output head op has its own).
  const std::string top = "\n  ";
  s = parsePlan(edited(top + "\"weight_panel\": 16", top + "\"weight_panel\": 0"),
                entries(kPaged.table), kPaged.size, plan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("'weight_panel' must be an integer in [1, 1024]"),
            std::string::npos)
      << s.message();
  s = parsePlan(edited(top + "\"weight_dtype\": \"f32\"",
                       top + "\"weight_dtype\": \"f8\""),
                entries(kPaged.table), kPaged.size, plan);
  ASSERT_FALSE(s);
  EXPECT_NE(
      s.message().find("weight_dtype must be f32, f16, bf16, i8 or i4, got 'f8'"),
      std::string::npos)
      << s.message();
  // weight_group goes with i4 weights, and only with them.
  s = parsePlan(edited(top + "\"weight_group\": 0", top + "\"weight_group\": 64"),
                entries(kPaged.table), kPaged.size, plan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("weight_group 64 must be 0 for f32 weights"),
            std::string::npos)
      << s.message();
  // The head's own group: none for float weights (its op's key, after
  // the op's name).
  {
    std::string head = kPaged.plan;
    const size_t op = head.find("\"op\": \"output_head\"");
    ASSERT_NE(op, std::string::npos);
    const std::string group = "\"weight_group\": 0";
    const size_t at = head.find(group, op);
    ASSERT_NE(at, std::string::npos);
    head.replace(at, group.size(), "\"weight_group\": 16");
    s = parsePlan(head, entries(kPaged.table), kPaged.size, plan);
  }
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find(
                "output head's weight_group 16 does not suit its f32 weights"),
            std::string::npos)
      << s.message();
  s = parsePlan(edited(top + "\"weight_dtype\": \"f32\"",
                       top + "\"weight_dtype\": \"i4\""),
                entries(kPaged.table), kPaged.size, plan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("weight_group 0 must be 32, 64 or 128 for i4"),
            std::string::npos)
      << s.message();
  // i8 weights: a scale per feature (0) or per group of 16 or 32 inputs.
  {
    std::string i8 = edited(top + "\"weight_dtype\": \"f32\"",
                            top + "\"weight_dtype\": \"i8\"");
    const std::string group = top + "\"weight_group\": 0";
    i8.replace(i8.find(group), group.size(), top + "\"weight_group\": 64");
    s = parsePlan(i8, entries(kPaged.table), kPaged.size, plan);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("weight_group 64 must be 0, 16 or 32 for i8"),
              std::string::npos)
        << s.message();
  }
  // Each linear kernel's layout (linear_kernels): required, and valid.
  {
    nlohmann::json json = nlohmann::json::parse(kPaged.plan);
    json.erase("linear_kernels");
    s = parsePlan(json.dump(), entries(kPaged.table), kPaged.size, plan);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("missing the 'linear_kernels' object"),
              std::string::npos)
        << s.message();
    json = nlohmann::json::parse(kPaged.plan);
    json["linear_kernels"].begin().value()["weight_group"] = 64;
    s = parsePlan(json.dump(), entries(kPaged.table), kPaged.size, plan);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("weight_group 64 does not suit f32 weights"),
              std::string::npos)
        << s.message();
  }
  // V apart from K (value_kernel) only beside a K-only projection, whose
  // K and V the runtime stores: not on a fused layer.
  {
    nlohmann::json json = nlohmann::json::parse(kPaged.plan);
    nlohmann::json &layer = json["layers"][0];
    ASSERT_TRUE(layer["fused_projections"].get<bool>());
    layer["value_kernel"] = layer["query_kernel"];
    s = parsePlan(json.dump(), entries(kPaged.table), kPaged.size, plan);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("a value_kernel needs a self layer with a "
                               "key_value_kernel, without fused projections"),
              std::string::npos)
        << s.message();
  }
  // A plan whose weight dtype its kernels do not read: the weights load
  // (as bf16 pairs, as every linear kernel's layout says), and the first
  // call is refused by the kernel's metadata, not run on misread memory.
  {
    nlohmann::json json = nlohmann::json::parse(kPaged.plan);
    json["weight_dtype"] = "bf16";
    json["weight_panel"] = 32;
    for (auto &layout : json["linear_kernels"])
      layout = {{"weight_dtype", "bf16"}, {"weight_panel", 32},
                {"weight_group", 0}};
    for (auto &op : json["ops"])
      if (op["op"] == "output_head") {
        op["weight_dtype"] = "bf16";
        op["weight_panel"] = 32;
      }
    const std::string bf16 = json.dump();
    ASSERT_TRUE(parsePlan(bf16, entries(kPaged.table), kPaged.size, plan));
    std::unique_ptr<Model> model;
    ASSERT_TRUE(Model::load(bf16, entries(kPaged.table), kPaged.size,
                            writeSafetensors("bf16_plan", randomWeights(plan, 3)),
                            WeightNaming::Bart, model));
    ExecutionContext context(*model);
    std::vector<float> memory;
    const int32_t source[] = {1, 2, 3};
    s = model->encode(source, 3, memory, context);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("argument 'weight' is a"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("(plan and kernels disagree)"),
              std::string::npos)
        << s.message();
  }

  // A CUDA-only library: nothing the runtime can call.
  s = parsePlan(edited("\"cpu\"", "\"cuda\""), entries(kPaged.table),
                kPaged.size, plan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("the library holds no CPU kernels"),
            std::string::npos)
      << s.message();

  // A plan that says its head has no argmax while the kernel writes one
  // parses (the flags agree with each other), but its calls would pass one
  // buffer too few: the kernel's metadata refuses them before the call,
  // and the step grows nothing.
  std::string noArgmax = edited("\"argmax\": true", "\"argmax\": false");
  ASSERT_TRUE(parsePlan(noArgmax, entries(kPaged.table), kPaged.size, plan));
  std::string path = writeSafetensors("no_argmax", randomWeights(plan, 3));
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::load(noArgmax, entries(kPaged.table), kPaged.size, path,
                          WeightNaming::Bart, model));
  ExecutionContext context(*model);
  EncodedSource encoded;
  ASSERT_TRUE(encodeSource(*model, {1, 2, 3}, context, encoded));
  std::vector<float> logits(model->targetVocabulary());
  int32_t token = 1;
  s = model->decodeStep(&encoded.selfId, &encoded.crossId, &token, 1,
                        encoded.self, &encoded.cross, logits.data(), context);
  ASSERT_FALSE(s);
  EXPECT_NE(
      s.message().find("_argmax_gemv takes 'best_token', a 1-D int32 "
                       "buffer; the plan gives it none "
                       "(plan and kernels disagree)"),
      std::string::npos)
      << s.message();
  EXPECT_EQ(encoded.self.length(encoded.selfId), 0);
}

TEST(KernelCallTest, CallsAreCheckedAgainstTheKernelsMetadata) {
  // The layer norm kernel takes input [t][32], weight, bias, output (f32).
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kPaged.plan, entries(kPaged.table), kPaged.size, plan));
  auto norm = std::find_if(plan.ops.begin(), plan.ops.end(),
                           [](auto &op) { return op.kind == OpKind::Norm; });
  ASSERT_NE(norm, plan.ops.end());
  ASSERT_TRUE(norm->kernel.metadata);
  std::vector<float> x(4 * 32, 0.5f), weight(32, 1.0f), bias(32, 0.0f),
      out(4 * 32);
  std::vector<uint16_t> halves(4 * 32);
  const KernelArg input{"input", x.data(), float32Type(), {{32, 1}, {4, 32}}};
  const KernelArg halfInput{
      "input", halves.data(), {halide_type_float, 16, 1}, {{32, 1}, {4, 32}}};
  const KernelArg flatInput{"input", x.data(), float32Type(), {{128, 1}}};
  const KernelArg w{"weight", weight.data(), float32Type(), {{32, 1}}};
  const KernelArg b{"bias", bias.data(), float32Type(), {{32, 1}}};
  const KernelArg o{"output", out.data(), float32Type(), {{32, 1}, {4, 32}}};
  KernelArg residual = input;
  residual.name = "residual";
  // By name, in any order.
  EXPECT_TRUE(callKernel(norm->kernel, {o, input, b, w}));
  auto refused = [&](std::vector<KernelArg> args, const std::string &why) {
    Status s = callKernel(norm->kernel, args);
    EXPECT_FALSE(s);
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  refused({input, w, o},
          "takes 'bias', a 1-D float32 buffer; the plan gives it none");
  refused({input, w, b, residual, o},
          "takes no 'residual'; the plan gives it one");
  refused({halfInput, w, b, o},
          "argument 'input' is a 2-D float32 buffer; the plan gives it a 2-D "
          "float16");
  refused({flatInput, w, b, o}, "the plan gives it a 1-D float32 one");
  refused({input, w, b, o, o, o, o, o, o, o, o, o}, "called with 12 buffers");
}

} // namespace

// The generated header's <name>_library is what Model::load takes; a library
// of another ABI, attnc version or CPU is refused by name, never run.
TEST(ModelLibraryTest, LinkedLibraryLoadsAndMismatchesAreRefused) {
  std::shared_ptr<const ModelLibrary> library;
  ASSERT_TRUE(ModelLibrary::linked(llama_tiny_library, library));
  EXPECT_EQ(library->path(), "");
  EXPECT_STREQ(library->descriptor().name, "llama_tiny");
  ModelPlan plan;
  ASSERT_TRUE(parsePlan(kLlama.plan, entries(kLlama.table), kLlama.size, plan));
  WeightNaming naming;
  ASSERT_TRUE(Model::namingOf(plan, naming));
  EXPECT_EQ(naming, WeightNaming::Llama);
  std::string weights = attn::test::testDirectory() + "/library.safetensors";
  ASSERT_TRUE(Model::writeRandomWeights(plan, naming, 3, weights,
                                        TensorType::BF16));
  std::unique_ptr<Model> model;
  Status s = Model::load(library, weights, model);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(model->device(), "cpu");
  s = Model::load(library, weights, model, {.onDevice = true});
  EXPECT_EQ(s.message(), "model library 'llama_tiny' has no GPU kernels "
                         "(attnc --target=...,cuda adds them)");

  auto refusal = [](const attnc_model_library &other) {
    std::shared_ptr<const ModelLibrary> refused;
    Status status = ModelLibrary::linked(other, refused);
    EXPECT_EQ(refused, nullptr);
    return status.message();
  };
  attnc_model_library other = llama_tiny_library;
  other.abi = 99;
  EXPECT_EQ(refusal(other),
            "model library 'llama_tiny': written with model-library ABI 99; "
            "this runtime reads ABI " + std::to_string(ATTNC_LIBRARY_ABI) +
                ": rebuild it with this runtime's attnc");
  other = llama_tiny_library;
  other.attnc_version = "0.0.1";
  EXPECT_EQ(refusal(other), std::string("model library 'llama_tiny': built "
                                        "by attnc 0.0.1; this runtime is "
                                        "attnc ") +
                                ATTNC_VERSION +
                                ": rebuild it with this runtime's attnc");
  other = llama_tiny_library;
  other.set_custom_free = nullptr;
  EXPECT_EQ(refusal(other), "model library 'llama_tiny': an incomplete model "
                            "library (null fields)");
  other = llama_tiny_library;
  other.cpu_targets = "x86-64-linux-avx2,arm-64-linux";
  EXPECT_NE(refusal(other).find("cannot run here: its kernels are for arm"),
            std::string::npos)
      << refusal(other);

  s = ModelLibrary::open("/nonexistent/libmodel.so", library);
  EXPECT_EQ(s.code(), StatusCode::IoError);
  EXPECT_EQ(s.message().rfind("/nonexistent/libmodel.so: cannot be loaded: ",
                              0),
            0u)
      << s.message();
  s = ModelLibrary::open("libm.so.6", library);
  EXPECT_EQ(s.message(), "libm.so.6: not an attnc model library (it exports "
                         "no attnc_library(); attnc --shared writes one)");
}
