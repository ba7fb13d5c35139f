//===- GpuNumericsTest.cpp - CUDA kernels on a device vs double references ===//
//
// The CUDA schedules JIT-compiled for the machine's GPU and run on it, each
// compared with the double-accumulation reference (Reference.h) on the same
// inputs, over odd and round shapes. Tolerances as for the CPU kernels
// (1e-5 absolute for fp32 attention with O(1) inputs; 1e-5·sqrt(in) for
// projections): the GPU kernels accumulate in fp32 like them.
//
// Skips, saying why, when the machine has no CUDA driver (libcuda.so.1) or
// no device: CI and most development machines. tools/gpu-check.sh runs it
// where a GPU is at hand.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "attn/runtime/DeviceProbe.h"
#include "attn/schedules/CudaDevice.h"
#include "attn/schedules/Pipelines.h"

#include <gtest/gtest.h>

using namespace attn::test;

namespace {

Halide::Target deviceTarget() { return attn::cudaJitTarget(); }

class GpuNumerics : public testing::Test {
protected:
  void SetUp() override {
    static const std::string reason = attn::runtime::whyNoDevice("cuda");
    if (!reason.empty())
      GTEST_SKIP() << reason;
  }
};

struct PrefillCase {
  int hq, hkv, d, qLen, kvLen;
  bool causal;
  int window = 0;
};

TEST_F(GpuNumerics, PrefillMatchesDoubleReference) {
  for (const PrefillCase &c : {PrefillCase{4, 4, 64, 33, 33, false},
                               PrefillCase{8, 2, 128, 100, 100, true},
                               PrefillCase{6, 3, 80, 7, 50, true, 16},
                               PrefillCase{2, 1, 96, 1, 1000, true}}) {
    SCOPED_TRACE(testing::Message()
                 << "hq " << c.hq << " hkv " << c.hkv << " d " << c.d << " q "
                 << c.qLen << " kv " << c.kvLen);
    attn::SdpaSpec spec;
    spec.functionName = "prefill";
    spec.numQueryHeads = c.hq;
    spec.numKvHeads = c.hkv;
    spec.headDim = c.d;
    spec.causal = c.causal;
    spec.window = c.window;
    spec.scale = 1.0f / std::sqrt(float(c.d));
    Halide::Target target = deviceTarget();
    attn::KernelPipeline kernel = attn::buildSdpaPipeline(spec, target);
    kernel.pipeline.compile_jit(target);
    std::mt19937 rng(c.qLen * 7 + c.kvLen);
    std::vector<float> q = randomVector(size_t(c.qLen) * c.hq * c.d, rng),
                       k = randomVector(size_t(c.kvLen) * c.hkv * c.d, rng),
                       v = randomVector(k.size(), rng);
    Halide::Buffer<float> query(q.data(), c.d, c.hq, c.qLen, 1),
        key(k.data(), c.d, c.hkv, c.kvLen, 1),
        value(v.data(), c.d, c.hkv, c.kvLen, 1), out(c.d, c.hq, c.qLen, 1);
    Halide::ParamMap params;
    params.set(kernel.inputs[0], query);
    params.set(kernel.inputs[1], key);
    params.set(kernel.inputs[2], value);
    kernel.pipeline.realize(out, target, params);
    out.copy_to_host();
    AttentionShape shape{1,   c.qLen,   c.kvLen,    c.hq,    c.hkv,
                         c.d, c.causal, spec.scale, c.window};
    std::vector<double> expected =
        referenceAttention(shape, q.data(), k.data(), v.data());
    std::vector<float> got(out.data(), out.data() + out.number_of_elements());
    EXPECT_LE(maxAbsError(got, expected), 1e-5);
  }
}

TEST_F(GpuNumerics, DecodeMatchesDoubleReference) {
  // A contiguous f32 cache of one page per sequence; two sequences of
  // different lengths, 1 and 3 new tokens.
  for (int qLen : {1, 3}) {
    const int hq = 8, hkv = 2, d = 64, maxLength = 700;
    const std::vector<int> lengths = {700, 129};
    attn::DecodeSpec spec;
    spec.functionName = "decode";
    spec.numQueryHeads = hq;
    spec.numKvHeads = hkv;
    spec.headDim = d;
    spec.pageSize = maxLength;
    spec.scale = 0.125f;
    Halide::Target target = deviceTarget();
    attn::KernelPipeline kernel = attn::buildDecodePipeline(spec, target);
    kernel.pipeline.compile_jit(target);
    std::mt19937 rng(qLen);
    const int batch = int(lengths.size());
    std::vector<float> q = randomVector(size_t(batch) * qLen * hq * d, rng),
                       pages = randomVector(size_t(batch) * maxLength * hkv * d,
                                            rng),
                       vpages = randomVector(pages.size(), rng);
    Halide::Buffer<float> query(q.data(), d, hq, qLen, batch),
        keys(pages.data(), d, hkv, maxLength, batch),
        values(vpages.data(), d, hkv, maxLength, batch),
        out(d, hq, qLen, batch);
    Halide::Buffer<int32_t> table(1, batch), seqLens(batch);
    for (int b = 0; b < batch; b++) {
      table(0, b) = b;
      seqLens(b) = lengths[b];
    }
    Halide::ParamMap params;
    params.set(kernel.inputs[0], query);
    params.set(kernel.inputs[1], keys);
    params.set(kernel.inputs[2], values);
    params.set(kernel.inputs[3], table);
    params.set(kernel.inputs[4], seqLens);
    kernel.pipeline.realize(out, target, params);
    out.copy_to_host();
    for (int b = 0; b < batch; b++) {
      AttentionShape shape{1, qLen, lengths[b], hq, hkv, d, true, 0.125};
      const size_t row = size_t(qLen) * hq * d,
                   page = size_t(maxLength) * hkv * d;
      std::vector<double> expected = referenceAttention(
          shape, &q[b * row], &pages[b * page], &vpages[b * page]);
      std::vector<float> got(&out(0, 0, 0, b), &out(0, 0, 0, b) + row);
      EXPECT_LE(maxAbsError(got, expected), 1e-5) << "sequence " << b;
    }
  }
}

TEST_F(GpuNumerics, LinearMatchesDoubleReference) {
  const int in = 96, out = 200, tokens = 9;
  attn::LinearSpec spec;
  spec.functionName = "linear";
  spec.inFeatures = in;
  spec.outFeatures = out;
  spec.bias = true;
  spec.activation = attn::Activation::Gelu;
  Halide::Target target = deviceTarget();
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, target);
  kernel.pipeline.compile_jit(target);
  std::mt19937 rng(5);
  std::vector<float> x = randomVector(size_t(tokens) * in, rng),
                     w = randomVector(size_t(in) * out, rng),
                     bias = randomVector(out, rng);
  Halide::Buffer<float> input(x.data(), in, tokens),
      biasBuffer(bias.data(), out), output(out, tokens);
  Halide::Buffer<> weight = attn::packLinearWeights(w.data(), in, out);
  Halide::ParamMap params;
  params.set(kernel.inputs[0], input);
  params.set(kernel.inputs[1], weight);
  params.set(kernel.inputs[2], biasBuffer);
  kernel.pipeline.realize(output, target, params);
  output.copy_to_host();
  double worst = 0;
  for (int m = 0; m < tokens; m++)
    for (int n = 0; n < out; n++) {
      double y = bias[n];
      for (int k = 0; k < in; k++)
        y += double(x[size_t(m) * in + k]) * w[size_t(k) * out + n];
      y = 0.5 * y * (1 + std::erf(y / std::sqrt(2.0)));
      worst = std::max(worst, std::fabs(output(n, m) - y));
    }
  EXPECT_LE(worst, 1e-5 * std::sqrt(double(in)));
}

} // namespace
