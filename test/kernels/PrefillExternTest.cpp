//===- PrefillExternTest.cpp - prefill micro-kernels vs a double reference ===//
//
// The prefill pipelines where they run hand-written micro-kernels as
// extern stages: bf16 products on AMX tiles (attn::sdpaUsesAmx,
// AmxAttention.h) and fp32 full attention on AVX-512 micro-kernels
// (attn::sdpaUsesAvx512Kernel, Avx512Attention.h; on every CPU with
// AVX-512F, whatever its family's row in CpuFamily.cpp chooses), over the shapes their
// blocking has edges at: head sizes 32 to 256, query and key counts that
// are not multiples of a block, a register tile or a 32-key step, causal
// masks with q_len below and above kv_len, sliding windows, key padding
// (all keys, none, some), GQA, chunks that divide nothing, and Q, K and V
// read in place from a fused QKV buffer. Tolerance: bf16Tolerance
// (Reference.h) for bf16 products, 1e-5 for fp32 ones, as for every
// kernel. Skipped, with the reason, where the CPU or the OS cannot run the
// micro-kernel (SdpaScheduleTest covers the same pipelines' own products
// there).
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "attn/schedules/AmxLinear.h"
#include "attn/schedules/Avx512Attention.h"
#include "attn/schedules/Pipelines.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace attn::test;

namespace {

// The micro-kernels are checked wherever they can run: this binary's
// process takes them whatever the CPU family's row says (the override
// CpuFamily.h documents), before any kernel asks.
const bool kAvx512AttentionForced = setenv("ATTN_AVX512_ATTENTION", "1", 1) == 0;

struct PrefillCase {
  int queryHeads, kvHeads, headDim, qLen, kvLen;
  bool causal = false;
  int window = 0, kvChunk = 256, batch = 1;
  std::vector<int> keyLengths; ///< non-empty: key padding
  bool fusedQkv = false;       ///< Q, K and V as views into one QKV buffer
};

std::string describe(const PrefillCase &c) {
  return "Hq" + std::to_string(c.queryHeads) + " Hkv" +
         std::to_string(c.kvHeads) + " D" + std::to_string(c.headDim) + " q" +
         std::to_string(c.qLen) + " kv" + std::to_string(c.kvLen) +
         (c.causal ? " causal" : "") +
         (c.window ? " window" + std::to_string(c.window) : "") + " chunk" +
         std::to_string(c.kvChunk) + " batch" + std::to_string(c.batch) +
         (c.keyLengths.empty() ? "" : " key_padding") +
         (c.fusedQkv ? " fused_qkv" : "");
}

/// Runs the prefill pipeline of `compute` products on case `c` (the
/// micro-kernel where `runsExtern` says the pipeline calls it) and checks it
/// against the double reference.
void checkAgainstReference(const PrefillCase &c, attn::SdpaCompute compute,
                           bool (*runsExtern)(const attn::SdpaSpec &,
                                              const Halide::Target &)) {
  SCOPED_TRACE(describe(c));
  attn::SdpaSpec spec;
  spec.functionName = "prefill_extern";
  spec.numQueryHeads = c.queryHeads;
  spec.numKvHeads = c.kvHeads;
  spec.headDim = c.headDim;
  spec.causal = c.causal || c.window > 0;
  spec.window = c.window;
  spec.scale = 1.0f / std::sqrt(float(c.headDim));
  spec.keyPadding = !c.keyLengths.empty();
  spec.compute = compute;
  spec.schedule.kvChunk = c.kvChunk;
  Halide::Target target = Halide::get_jit_target_from_environment();
  ASSERT_TRUE(runsExtern(spec, target)) << target.to_string();
  attn::KernelPipeline kernel = attn::buildSdpaPipeline(spec, target);
  kernel.pipeline.compile_jit(target);

  const int d = c.headDim, hq = c.queryHeads, hkv = c.kvHeads;
  // With fusedQkv, one [batch][token][Hq + 2·Hkv][d] buffer (q_len =
  // kv_len) holds Q, K and V: each a view with the fused token stride.
  Halide::Buffer<float> qkv(d, hq + 2 * hkv, c.qLen, c.batch);
  Halide::Buffer<float> q(d, hq, c.qLen, c.batch), k(d, hkv, c.kvLen, c.batch),
      v(d, hkv, c.kvLen, c.batch);
  if (c.fusedQkv) {
    auto view = [&](int first, int heads) {
      return Halide::Buffer<float>(
          qkv.get()->cropped(1, first, heads).translated(1, -first));
    };
    q = view(0, hq);
    k = view(hq, hkv);
    v = view(hq + hkv, hkv);
  }
  std::mt19937 rng(c.qLen * 131 + c.kvLen * 7 + d);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Halide::Buffer<float> *buffer : {&q, &k, &v})
    buffer->for_each_value([&](float &x) { x = uniform(rng); });
  // The reference takes dense [batch][token][heads][d] arrays.
  auto dense = [](const Halide::Buffer<float> &b) {
    Halide::Buffer<float> copy(b.dim(0).extent(), b.dim(1).extent(),
                               b.dim(2).extent(), b.dim(3).extent());
    copy.for_each_element(
        [&](int x, int y, int z, int w) { copy(x, y, z, w) = b(x, y, z, w); });
    return copy;
  };
  Halide::Buffer<float> qd = dense(q), kd = dense(k), vd = dense(v);

  Halide::Buffer<float> out(d, hq, c.qLen, c.batch);
  Halide::ParamMap params;
  params.set(kernel.inputs[0], q);
  params.set(kernel.inputs[1], k);
  params.set(kernel.inputs[2], v);
  Halide::Buffer<int32_t> keyLengths(std::max<int>(1, c.keyLengths.size()));
  if (spec.keyPadding) {
    std::copy(c.keyLengths.begin(), c.keyLengths.end(), keyLengths.data());
    params.set(kernel.inputs[3], keyLengths);
  }
  kernel.pipeline.realize(out, target, params);

  AttentionShape shape{c.batch,  c.qLen, c.kvLen,     hq,
                       hkv,      d,      spec.causal, spec.scale,
                       c.window, 0,      {},          c.keyLengths};
  std::vector<float> got(out.data(), out.data() + out.number_of_elements());
  EXPECT_LE(maxAbsError(got, referenceAttention(shape, qd.data(), kd.data(),
                                                vd.data())),
            compute == attn::SdpaCompute::BF16 ? bf16Tolerance(spec.scale, d)
                                               : 1e-5);
}

class AmxAttentionTest : public testing::TestWithParam<PrefillCase> {};

TEST_P(AmxAttentionTest, MatchesDoubleReference) {
  std::string why;
  if (!attn::amx::available(&why))
    GTEST_SKIP() << why;
  checkAgainstReference(GetParam(), attn::SdpaCompute::BF16,
                        attn::sdpaUsesAmx);
}

class Avx512AttentionTest : public testing::TestWithParam<PrefillCase> {};

TEST_P(Avx512AttentionTest, MatchesDoubleReference) {
  ASSERT_TRUE(kAvx512AttentionForced);
  if (!attn_avx512_attention_ready())
    GTEST_SKIP() << "no AVX-512F (the pipeline keeps its own fp32 products)";
  checkAgainstReference(GetParam(), attn::SdpaCompute::F32,
                        attn::sdpaUsesAvx512Kernel);
}

// attnc clears x86Object where it has no AMX object to put in a library
// (an attnc built for another architecture): no kernel may then call it.
TEST(AmxAttentionSelection, FollowsTheSpecAndTheTarget) {
  attn::SdpaSpec spec;
  spec.numQueryHeads = spec.numKvHeads = 2;
  spec.headDim = 64;
  spec.compute = attn::SdpaCompute::BF16;
  const Halide::Target sapphireRapids("x86-64-linux-avx512_sapphirerapids");
  EXPECT_TRUE(attn::sdpaUsesAmx(spec, sapphireRapids));
  EXPECT_FALSE(attn::sdpaUsesAmx(spec, Halide::Target("x86-64-linux-avx512")));
  spec.x86Object = false;
  EXPECT_FALSE(attn::sdpaUsesAmx(spec, sapphireRapids));
  spec.x86Object = true;
  spec.headDim = 80; // not whole 32-channel steps
  EXPECT_FALSE(attn::sdpaUsesAmx(spec, sapphireRapids));
  spec.headDim = 64;
  spec.softcap = 30.0f;
  EXPECT_FALSE(attn::sdpaUsesAmx(spec, sapphireRapids));
}

TEST(Avx512AttentionSelection, FollowsTheSpecAndTheTarget) {
  attn::SdpaSpec spec;
  spec.numQueryHeads = spec.numKvHeads = 2;
  spec.headDim = 128;
  const Halide::Target avx512("x86-64-linux-avx512");
  EXPECT_TRUE(attn::sdpaUsesAvx512Kernel(spec, avx512));
  EXPECT_FALSE(attn::sdpaUsesAvx512Kernel(spec, Halide::Target("x86-64-linux-avx2")));
  spec.x86Object = false;
  EXPECT_FALSE(attn::sdpaUsesAvx512Kernel(spec, avx512));
  spec.x86Object = true;
  spec.compute = attn::SdpaCompute::BF16;
  EXPECT_FALSE(attn::sdpaUsesAvx512Kernel(spec, avx512));
  spec.compute = attn::SdpaCompute::F32;
  spec.causal = true; // causal attention keeps the Halide products
  EXPECT_FALSE(attn::sdpaUsesAvx512Kernel(spec, avx512));
  spec.causal = false;
  spec.headDim = 96; // not whole 64-channel output tiles
  EXPECT_FALSE(attn::sdpaUsesAvx512Kernel(spec, avx512));
  spec.headDim = 128;
  spec.alibi = true;
  EXPECT_FALSE(attn::sdpaUsesAvx512Kernel(spec, avx512));
}

std::string caseName(const testing::TestParamInfo<PrefillCase> &info) {
  return "case" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AmxAttentionTest,
    testing::Values(
        PrefillCase{2, 2, 32, 1, 1}, PrefillCase{4, 2, 64, 33, 33, true},
        PrefillCase{4, 4, 128, 100, 300},
        PrefillCase{4, 1, 96, 5, 300, true, 0, 64},
        PrefillCase{2, 2, 128, 70, 20, true}, // q_len > kv_len
        PrefillCase{2, 2, 256, 129, 129, true, 0, 100},
        PrefillCase{4, 2, 64, 300, 300, true, 37}, // sliding window
        PrefillCase{2, 2, 64, 97, 97, false, 0, 512, 3, {97, 0, 41}},
        PrefillCase{2, 1, 128, 65, 65, true, 0, 256, 2, {}, true},
        PrefillCase{8, 2, 128, 1031, 1031, true, 0, 256, 1, {}, true}),
    caseName);

// Full attention only; blocks of 132 rows (12-row score tiles, 6-row output
// tiles), 32-key panels, 64-channel output tiles.
INSTANTIATE_TEST_SUITE_P(
    Shapes, Avx512AttentionTest,
    testing::Values(
        PrefillCase{2, 2, 64, 1, 1}, PrefillCase{4, 2, 64, 33, 33},
        PrefillCase{4, 4, 128, 100, 300},
        PrefillCase{4, 1, 128, 5, 300, false, 0, 64},
        PrefillCase{2, 2, 128, 70, 20}, // q_len > kv_len
        PrefillCase{2, 2, 256, 133, 129, false, 0, 100},
        PrefillCase{2, 2, 192, 140, 257, false, 0, 512},
        PrefillCase{2, 2, 64, 97, 97, false, 0, 512, 3, {97, 0, 41}},
        PrefillCase{2, 1, 128, 65, 65, false, 0, 256, 2, {}, true},
        PrefillCase{8, 2, 128, 1031, 1031, false, 0, 256, 1, {}, true}),
    caseName);

} // namespace
