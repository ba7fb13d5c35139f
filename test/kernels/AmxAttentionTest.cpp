//===- AmxAttentionTest.cpp - the AMX prefill kernel vs a double reference ===//
//
// The bf16-product prefill pipeline where it runs on AMX tiles
// (attn::sdpaUsesAmx, AmxAttention.h), over the shapes its blocking has
// edges at: head sizes 32 to 256, query and key counts that are not
// multiples of the 32-row block or the 32-key step, causal masks with
// q_len below and above kv_len, sliding windows, key padding (all keys,
// none, some), GQA, chunks that divide nothing, and Q, K and V read in
// place from a fused QKV buffer. Tolerance: bf16Tolerance (Reference.h),
// as for every bf16-product kernel. Skipped, with the reason, where the
// CPU or the OS has no AMX (SdpaScheduleTest covers the same pipeline's
// own products there).
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "attn/schedules/AmxLinear.h"
#include "attn/schedules/Pipelines.h"

#include <gtest/gtest.h>

using namespace attn::test;

namespace {

struct AmxAttentionCase {
  int queryHeads, kvHeads, headDim, qLen, kvLen;
  bool causal = false;
  int window = 0, kvChunk = 256, batch = 1;
  std::vector<int> keyLengths; ///< non-empty: key padding
  bool fusedQkv = false;       ///< Q, K and V as views into one QKV buffer
};

std::string describe(const AmxAttentionCase &c) {
  return "Hq" + std::to_string(c.queryHeads) + " Hkv" +
         std::to_string(c.kvHeads) + " D" + std::to_string(c.headDim) + " q" +
         std::to_string(c.qLen) + " kv" + std::to_string(c.kvLen) +
         (c.causal ? " causal" : "") +
         (c.window ? " window" + std::to_string(c.window) : "") + " chunk" +
         std::to_string(c.kvChunk) + " batch" + std::to_string(c.batch) +
         (c.keyLengths.empty() ? "" : " key_padding") +
         (c.fusedQkv ? " fused_qkv" : "");
}

class AmxAttentionTest : public testing::TestWithParam<AmxAttentionCase> {};

TEST_P(AmxAttentionTest, MatchesDoubleReference) {
  std::string why;
  if (!attn::amx::available(&why))
    GTEST_SKIP() << why;
  const AmxAttentionCase &c = GetParam();
  SCOPED_TRACE(describe(c));
  attn::SdpaSpec spec;
  spec.functionName = "amx_attention";
  spec.numQueryHeads = c.queryHeads;
  spec.numKvHeads = c.kvHeads;
  spec.headDim = c.headDim;
  spec.causal = c.causal || c.window > 0;
  spec.window = c.window;
  spec.scale = 1.0f / std::sqrt(float(c.headDim));
  spec.keyPadding = !c.keyLengths.empty();
  spec.compute = attn::SdpaCompute::BF16;
  spec.schedule.kvChunk = c.kvChunk;
  Halide::Target target = Halide::get_jit_target_from_environment();
  ASSERT_TRUE(attn::sdpaUsesAmx(spec, target)) << target.to_string();
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
            bf16Tolerance(spec.scale, d));
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

INSTANTIATE_TEST_SUITE_P(
    Shapes, AmxAttentionTest,
    testing::Values(
        AmxAttentionCase{2, 2, 32, 1, 1},
        AmxAttentionCase{4, 2, 64, 33, 33, true},
        AmxAttentionCase{4, 4, 128, 100, 300},
        AmxAttentionCase{4, 1, 96, 5, 300, true, 0, 64},
        AmxAttentionCase{2, 2, 128, 70, 20, true}, // q_len > kv_len
        AmxAttentionCase{2, 2, 256, 129, 129, true, 0, 100},
        AmxAttentionCase{4, 2, 64, 300, 300, true, 37}, // sliding window
        AmxAttentionCase{2, 2, 64, 97, 97, false, 0, 512, 3, {97, 0, 41}},
        AmxAttentionCase{2, 1, 128, 65, 65, true, 0, 256, 2, {}, true},
        AmxAttentionCase{8, 2, 128, 1031, 1031, true, 0, 256, 1, {}, true}),
    [](const testing::TestParamInfo<AmxAttentionCase> &info) {
      return "case" + std::to_string(info.index);
    });

} // namespace
