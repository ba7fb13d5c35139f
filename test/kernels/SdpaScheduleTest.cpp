//===- SdpaScheduleTest.cpp - every schedule, every variant, vs reference -===//
//
// A seeded random matrix of kernel variants (MHA / GQA / MQA, causal or not,
// sliding windows, softcap, ALiBi, attention sinks, key padding with
// per-entry lengths from 0
// to all keys, head sizes from 8 to 256 including odd ones and 80/96),
// schedule parameters
// (block, chunk and tile sizes, including ones that divide nothing) and
// shapes (lengths 1, 7, 33, >= 1000, q_len below, equal to and above
// kv_len). Each variant is JIT-compiled from the same pipeline builder attnc
// uses and compared with the double reference.
//
// 60 variants (40 fp32, 20 with bf16 products), five shapes each; those
// with a per-family tile run each shape as on an Intel and on another CPU.
//
// Tolerance 1e-5 absolute in fp32, as in SdpaTest.cpp: inputs in [-1, 1],
// outputs convex combinations of V rows, the exp2 polynomial is within 2e-7
// relative, and fp32 sums over <= 1100 keys stay near 1e-6. bf16: see
// bf16Tolerance in Reference.h.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "attn/schedules/Pipelines.h"

#include <gtest/gtest.h>

#include <map>

using namespace attn::test;

namespace {

struct Variant {
  attn::SdpaSpec spec;
  std::vector<AttentionShape> shapes;
};

std::vector<Variant> makeVariants() {
  std::mt19937 rng(20261129);
  auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() + rng() % values.size());
  };
  std::vector<Variant> variants;
  // 40 fp32 variants, then 20 with bf16 products (even head sizes only).
  for (int n = 0; n < 60; n++) {
    Variant variant;
    attn::SdpaSpec &spec = variant.spec;
    const bool bf16 = n >= 40;
    spec.functionName = (bf16 ? "bf16_variant" : "variant") + std::to_string(n);
    spec.compute = bf16 ? attn::SdpaCompute::BF16 : attn::SdpaCompute::F32;
    spec.numKvHeads = pick({1, 2, 3});
    spec.numQueryHeads = spec.numKvHeads * pick({1, 2, 4});
    spec.headDim = bf16 ? pick({8, 32, 40, 64, 80, 96, 128, 200, 256})
                        : pick({8, 13, 32, 40, 64, 80, 96, 128, 200, 256});
    spec.causal = rng() % 2;
    if (n % 4 == 3) // sliding windows, causal by definition
      spec.window = pick({1, 5, 100, 700});
    if (n % 5 == 1)
      spec.softcap = 1.5f; // scores reach about ±2 here: the cap bites
    spec.alibi = n % 6 == 2;
    spec.keyPadding = n % 5 == 3;
    // Sinks from their own generator (the other draws stay as they were):
    // logits from below the scores to above them, so a sink takes from a
    // little to most of a row's weight.
    spec.sinks = n % 7 == 4;
    std::vector<float> sinks;
    std::mt19937 sinkRng(n);
    std::uniform_real_distribution<float> sinkLogit(-2.0f, 4.0f);
    for (int h = 0; spec.sinks && h < spec.numQueryHeads; h++)
      sinks.push_back(sinkLogit(sinkRng));
    spec.scale = pick({0, 1}) ? 1.0f / std::sqrt(float(spec.headDim)) : 0.3f;
    spec.schedule.queryBlock = pick({1, 7, 16, 32, 48, 64});
    spec.schedule.kvChunk = pick({16, 64, 100, 256, 512});
    spec.schedule.qkTileKeys = bf16 ? pick({1, 4, 6, 12}) : pick({4, 8, 12});
    spec.schedule.pvTileRows = pick({1, 4, 6});
    // A second Q·Kᵀ tile for Intel cores on two fp32 variants in three:
    // both loop nests are checked (vendor below).
    if (!bf16 && n % 3 != 0)
      spec.schedule.intelQkTile = {n % 3 == 1 ? 4 : 3, n % 2 ? 4 : 6};
    // Five shapes per variant: 200 configurations in all. Long sequences
    // only where the double reference stays cheap.
    const int lengths[] = {1, 7, 33, 64, 129};
    for (int s = 0; s < 5; s++) {
      int qLen = lengths[s], kvLen = qLen;
      if (s == 3) // decode: a few new tokens over a longer cache
        qLen = pick({1, 2, 5, 8}), kvLen = pick({57, 300, 1100});
      if (s == 4 && spec.headDim <= 96 && spec.numQueryHeads <= 4)
        qLen = kvLen = pick({1000, 1031});
      if (s == 2 && n % 3 == 0) // cross-shaped: q_len > kv_len
        kvLen = 20;
      int batch = spec.keyPadding ? 3 : 1 + int(rng() % 2);
      std::vector<int> keyLengths;
      if (spec.keyPadding) // all keys, none, and a random count
        keyLengths = {kvLen, s == 0 ? 1 : 0, int(rng() % (kvLen + 1))};
      variant.shapes.push_back(
          {batch, qLen, kvLen, spec.numQueryHeads, spec.numKvHeads,
           spec.headDim, spec.causal, spec.scale, spec.window, spec.softcap,
           spec.alibi ? attn::alibiSlopes(spec.numQueryHeads)
                      : std::vector<float>(),
           keyLengths, sinks});
    }
    variants.push_back(variant);
  }
  // Latent attention's shape: many query heads over one key head of rank +
  // rope channels (DeepSeek's 512 + 64, and a smaller one), causal, the
  // scale over the heads' query channels (128 + 64).
  for (int n = 0; n < 2; n++) {
    Variant variant;
    attn::SdpaSpec &spec = variant.spec;
    spec.functionName = "latent" + std::to_string(n);
    spec.numQueryHeads = n ? 4 : 16;
    spec.numKvHeads = 1;
    spec.headDim = n ? 96 + 32 : 576;
    spec.causal = true;
    spec.scale = 1.0f / std::sqrt(192.0f);
    spec.schedule.queryBlock = n ? 16 : 32;
    spec.schedule.kvChunk = n ? 64 : 256;
    for (auto [qLen, kvLen] : {std::pair{1, 1}, {7, 7}, {65, 65}, {3, 200}})
      variant.shapes.push_back({1, qLen, kvLen, spec.numQueryHeads, 1,
                                spec.headDim, true, spec.scale, 0, 0.0f,
                                {}, {}, {}});
    variants.push_back(variant);
  }
  return variants;
}

std::string describe(const attn::SdpaSpec &spec) {
  const attn::SdpaSchedule &s = spec.schedule;
  return "Hq" + std::to_string(spec.numQueryHeads) + " Hkv" +
         std::to_string(spec.numKvHeads) + " D" + std::to_string(spec.headDim) +
         (spec.causal ? " causal" : "") +
         (spec.keyPadding ? " key_padding" : "") +
         (spec.sinks ? " sinks" : "") + " schedule " +
         std::to_string(s.queryBlock) + "," + std::to_string(s.kvChunk) + "," +
         std::to_string(s.qkTileKeys) + "," + std::to_string(s.pvTileRows) +
         (s.intelQkTile.keys
              ? " (Intel tiles " + std::to_string(s.intelQkTile.rowVectors) +
                    " x " + std::to_string(s.intelQkTile.keys) + ")"
              : "");
}

/// What the kernels' CPU-vendor probe answers in this test.
int gIntel = 0;
int pretendVendor() { return gIntel; }
/// The AVX-512 micro-kernels' probe, answered "no": this test checks the
/// pipeline's own products on every CPU (PrefillExternTest checks the
/// micro-kernels).
int noMicroKernels() { return 0; }

class SdpaScheduleTest : public testing::TestWithParam<Variant> {};

TEST_P(SdpaScheduleTest, MatchesDoubleReference) {
  const Variant &variant = GetParam();
  SCOPED_TRACE(describe(variant.spec));
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildSdpaPipeline(variant.spec, target);
  const bool perVendor = variant.spec.schedule.intelQkTile.keys > 0 &&
                         target.arch == Halide::Target::X86;
  std::map<std::string, Halide::JITExtern> externs =
      kernel.pipeline.get_jit_externs();
  if (perVendor)
    externs.insert_or_assign("attn_cpu_intel_qk_tile",
                             Halide::JITExtern(pretendVendor));
  if (externs.count("attn_avx512_attention_ready"))
    externs.insert_or_assign("attn_avx512_attention_ready",
                             Halide::JITExtern(noMicroKernels));
  kernel.pipeline.set_jit_externs(externs);
  kernel.pipeline.compile_jit(target);
  std::mt19937 rng(7);
  for (int run = 0; run < 2 * int(variant.shapes.size()); run++) {
    gIntel = run % 2;
    if (gIntel && !perVendor)
      continue;
    const AttentionShape &s = variant.shapes[run / 2];
    SCOPED_TRACE(testing::Message()
                 << "batch " << s.batch << " q_len " << s.qLen << " kv_len "
                 << s.kvLen << (gIntel ? " as on Intel" : ""));
    Halide::Buffer<float> q(s.headDim, s.queryHeads, s.qLen, s.batch),
        k(s.headDim, s.kvHeads, s.kvLen, s.batch),
        v(s.headDim, s.kvHeads, s.kvLen, s.batch),
        out(s.headDim, s.queryHeads, s.qLen, s.batch);
    for (Halide::Buffer<float> *buffer : {&q, &k, &v}) {
      std::vector<float> values =
          randomVector(buffer->number_of_elements(), rng);
      std::copy(values.begin(), values.end(), buffer->data());
    }
    Halide::ParamMap params;
    params.set(kernel.inputs[0], q);
    params.set(kernel.inputs[1], k);
    params.set(kernel.inputs[2], v);
    Halide::Buffer<int32_t> keyLengths(std::max<int>(1, s.keyLengths.size()));
    if (variant.spec.keyPadding) {
      std::copy(s.keyLengths.begin(), s.keyLengths.end(), keyLengths.data());
      params.set(kernel.inputs[3], keyLengths);
    }
    std::vector<float> sinkValues = s.sinks;
    Halide::Buffer<float> sinks(sinkValues.data(),
                                std::max<int>(1, sinkValues.size()));
    if (variant.spec.sinks)
      params.set(kernel.inputs[variant.spec.keyPadding ? 4 : 3], sinks);
    kernel.pipeline.realize(out, target, params);
    std::vector<float> got(out.data(), out.data() + out.number_of_elements());
    EXPECT_LE(
        maxAbsError(got, referenceAttention(s, q.data(), k.data(), v.data())),
        variant.spec.compute == attn::SdpaCompute::BF16
            ? bf16Tolerance(variant.spec.scale, variant.spec.headDim)
            : 1e-5);
  }
}

// The bf16 pipeline on targets without AVX512-BF16 (the AVX2 and AVX-512
// variants of a dispatch library): Halide lowers the pairwise products
// generically there; same answers.
TEST(SdpaBf16Test, MatchesWithoutBf16Instructions) {
  Halide::Target host = Halide::get_jit_target_from_environment();
  attn::SdpaSpec spec;
  spec.functionName = "bf16_generic";
  spec.numQueryHeads = 4;
  spec.numKvHeads = 2;
  spec.headDim = 80;
  spec.causal = true;
  spec.scale = 1.0f / std::sqrt(80.0f);
  spec.compute = attn::SdpaCompute::BF16;
  AttentionShape s{2, 77, 77, 4, 2, 80, true, spec.scale};
  std::mt19937 rng(5);
  Halide::Buffer<float> q(80, 4, 77, 2), k(80, 2, 77, 2), v(80, 2, 77, 2),
      out(80, 4, 77, 2);
  for (Halide::Buffer<float> *buffer : {&q, &k, &v}) {
    std::vector<float> values = randomVector(buffer->number_of_elements(), rng);
    std::copy(values.begin(), values.end(), buffer->data());
  }
  std::vector<double> expected =
      referenceAttention(s, q.data(), k.data(), v.data());
  for (Halide::Target target :
       {host.without_feature(Halide::Target::AVX512_SapphireRapids),
        Halide::Target(host.os, host.arch, host.bits,
                       {Halide::Target::AVX, Halide::Target::AVX2,
                        Halide::Target::FMA, Halide::Target::F16C,
                        Halide::Target::SSE41})}) {
    if (!host.has_feature(Halide::Target::AVX2))
      GTEST_SKIP() << "host without AVX2";
    SCOPED_TRACE(target.to_string());
    attn::KernelPipeline kernel = attn::buildSdpaPipeline(spec, target);
    kernel.pipeline.compile_jit(target.with_feature(Halide::Target::JIT));
    Halide::ParamMap params;
    params.set(kernel.inputs[0], q);
    params.set(kernel.inputs[1], k);
    params.set(kernel.inputs[2], v);
    kernel.pipeline.realize(out, target, params);
    std::vector<float> got(out.data(), out.data() + out.number_of_elements());
    EXPECT_LE(maxAbsError(got, expected),
              bf16Tolerance(spec.scale, spec.headDim));
  }
}

// An odd head size has no pairs for the bf16 products: refused, not
// miscomputed.
TEST(SdpaBf16Test, RefusesOddHeadDim) {
  attn::SdpaSpec spec;
  spec.functionName = "bf16_odd";
  spec.numQueryHeads = spec.numKvHeads = 1;
  spec.headDim = 13;
  spec.scale = 0.25f;
  spec.compute = attn::SdpaCompute::BF16;
  EXPECT_THROW(
      attn::buildSdpaPipeline(spec, Halide::get_jit_target_from_environment()),
      std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(RandomMatrix, SdpaScheduleTest,
                         testing::ValuesIn(makeVariants()),
                         [](const auto &info) {
                           return info.param.spec.functionName;
                         });

} // namespace
