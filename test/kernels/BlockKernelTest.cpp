//===- BlockKernelTest.cpp - norm, embedding and fused linear epilogues ---===//
//
// JIT-compiled pipelines for the rest of a transformer block against double
// references, over odd and round sizes and 1 to 37 tokens.
// Tolerances (fp32 kernels, inputs in [-1, 1]):
// - norms: 1e-5 absolute; outputs are O(1) (weights in [-1, 1]) and each is
//   a handful of roundings after an fp32 mean and variance over `dim` terms;
// - embedding: 1e-6; a copy plus one sin/cos of an fp32 angle (positions
//   below 4096 keep the angle's rounding under 1e-6 relative);
// - linear with an activation and a residual: 1e-5·sqrt(in), as in
//   LinearTest, since the activations are 1-Lipschitz.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "attn/schedules/Pipelines.h"

#include <gtest/gtest.h>

using namespace attn::test;

namespace {

Halide::Target jitTarget() { return Halide::get_jit_target_from_environment(); }

struct NormCase {
  attn::NormKind kind;
  int dim, tokens;
  bool residual = false; ///< a residual_add norm: + residual rows
};

class NormTest : public testing::TestWithParam<NormCase> {};

TEST_P(NormTest, MatchesDoubleReference) {
  const NormCase &c = GetParam();
  attn::NormSpec spec;
  spec.functionName = "norm";
  spec.kind = c.kind;
  spec.dim = c.dim;
  spec.eps = 1e-5f;
  spec.residual = c.residual;
  attn::KernelPipeline kernel = attn::buildNormPipeline(spec, jitTarget());
  kernel.pipeline.compile_jit(jitTarget());

  std::mt19937 rng(c.dim * 7 + c.tokens);
  std::vector<float> x = randomVector(size_t(c.tokens) * c.dim, rng),
                     w = randomVector(c.dim, rng), b = randomVector(c.dim, rng),
                     r = randomVector(size_t(c.tokens) * c.dim, rng);
  for (int i = 0; i < c.dim; i++) // an offset the mean must remove
    x[i] += 3.0f;
  Halide::Buffer<float> input(x.data(), c.dim, c.tokens),
      weight(w.data(), c.dim), bias(b.data(), c.dim),
      residual(r.data(), c.dim, c.tokens), output(c.dim, c.tokens);
  Halide::ParamMap params;
  size_t next = 0;
  params.set(kernel.inputs[next++], input);
  params.set(kernel.inputs[next++], weight);
  if (c.kind == attn::NormKind::LayerNorm)
    params.set(kernel.inputs[next++], bias);
  if (c.residual)
    params.set(kernel.inputs[next++], residual);
  ASSERT_EQ(next, kernel.inputs.size());
  kernel.pipeline.realize(output, jitTarget(), params);

  double worst = 0;
  for (int t = 0; t < c.tokens; t++) {
    const float *row = &x[size_t(t) * c.dim];
    double mean = 0, square = 0;
    if (c.kind == attn::NormKind::LayerNorm) {
      for (int i = 0; i < c.dim; i++)
        mean += row[i];
      mean /= c.dim;
    }
    for (int i = 0; i < c.dim; i++)
      square += (row[i] - mean) * (row[i] - mean);
    double inverse = 1 / std::sqrt(square / c.dim + 1e-5);
    for (int i = 0; i < c.dim; i++) {
      double expected = (row[i] - mean) * inverse * w[i] +
                        (c.kind == attn::NormKind::LayerNorm ? b[i] : 0.0) +
                        (c.residual ? r[size_t(t) * c.dim + i] : 0.0);
      worst = std::max(worst, std::fabs(output(i, t) - expected));
    }
  }
  EXPECT_LE(worst, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NormTest,
    testing::Values(NormCase{attn::NormKind::LayerNorm, 128, 1},
                    NormCase{attn::NormKind::LayerNorm, 128, 37},
                    NormCase{attn::NormKind::LayerNorm, 100, 9},
                    NormCase{attn::NormKind::LayerNorm, 7, 3},
                    NormCase{attn::NormKind::LayerNorm, 4096, 5},
                    NormCase{attn::NormKind::RmsNorm, 2048, 17},
                    NormCase{attn::NormKind::RmsNorm, 96, 1},
                    NormCase{attn::NormKind::RmsNorm, 33, 8},
                    // Gemma's norms of a sublayer's output, added to the
                    // stream.
                    NormCase{attn::NormKind::RmsNorm, 2048, 17, true},
                    NormCase{attn::NormKind::RmsNorm, 33, 1, true},
                    NormCase{attn::NormKind::LayerNorm, 100, 9, true}));

struct EmbeddingCase {
  attn::PositionKind positions;
  int vocab, dim, tokens;
  float scale = 1.0f;
  int positionOffset = 0; // learned positions: rows before position 0
};

class EmbeddingTest : public testing::TestWithParam<EmbeddingCase> {};

TEST_P(EmbeddingTest, MatchesReference) {
  const EmbeddingCase &c = GetParam();
  const int maxPositions = 4096;
  attn::EmbeddingSpec spec;
  spec.functionName = "embedding";
  spec.vocabSize = c.vocab;
  spec.dim = c.dim;
  spec.positions = c.positions;
  spec.maxPositions = maxPositions;
  spec.scale = c.scale;
  spec.positionOffset = c.positionOffset;
  attn::KernelPipeline kernel = attn::buildEmbeddingPipeline(spec, jitTarget());
  kernel.pipeline.compile_jit(jitTarget());

  std::mt19937 rng(c.vocab + c.dim);
  std::vector<float> table = randomVector(size_t(c.vocab) * c.dim, rng);
  const int positionRows = maxPositions + c.positionOffset;
  std::vector<float> positionTable =
      randomVector(size_t(positionRows) * c.dim, rng);
  std::vector<int32_t> ids(c.tokens), pos(c.tokens);
  for (int t = 0; t < c.tokens; t++) {
    ids[t] = (t * 7919) % c.vocab;
    pos[t] = (t * 977 + 3) % maxPositions;
  }
  Halide::Buffer<int32_t> tokens(ids.data(), c.tokens),
      positions(pos.data(), c.tokens);
  Halide::Buffer<float> tableBuffer(table.data(), c.dim, c.vocab),
      positionBuffer(positionTable.data(), c.dim, positionRows),
      output(c.dim, c.tokens);
  Halide::ParamMap params;
  params.set(kernel.inputs[0], tokens);
  params.set(kernel.inputs[1], positions);
  params.set(kernel.inputs[2], tableBuffer);
  if (c.positions == attn::PositionKind::Learned)
    params.set(kernel.inputs[3], positionBuffer);
  kernel.pipeline.realize(output, jitTarget(), params);

  double worst = 0;
  for (int t = 0; t < c.tokens; t++)
    for (int i = 0; i < c.dim; i++) {
      double expected = double(table[size_t(ids[t]) * c.dim + i]) * c.scale;
      if (c.positions == attn::PositionKind::Learned)
        expected +=
            positionTable[size_t(pos[t] + c.positionOffset) * c.dim + i];
      if (c.positions == attn::PositionKind::Sinusoidal) {
        float period = float(std::pow(10000.0, 2.0 * (i / 2) / c.dim));
        double angle = double(float(pos[t]) / period);
        expected += i % 2 == 0 ? std::sin(angle) : std::cos(angle);
      }
      if (c.positions == attn::PositionKind::SinusoidalHalves) {
        // transformers' MarianSinusoidalPositionalEmbedding: the angle of
        // column j is pos / 10000^(2·(j / 2) / dim) in float64; sines of
        // the even columns fill the first ceil(dim/2) channels, cosines of
        // the odd ones the rest; then rounded to float.
        const int sentinel = (c.dim + 1) / 2;
        const int j = i < sentinel ? 2 * i : 2 * (i - sentinel) + 1;
        const double angle = pos[t] / std::pow(10000.0, 2.0 * (j / 2) / c.dim);
        expected += float(i < sentinel ? std::sin(angle) : std::cos(angle));
      }
      worst = std::max(worst, std::fabs(output(i, t) - expected));
    }
  EXPECT_LE(worst, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EmbeddingTest,
    testing::Values(
        EmbeddingCase{attn::PositionKind::Sinusoidal, 19, 128, 15},
        EmbeddingCase{attn::PositionKind::Sinusoidal, 1000, 97, 1},
        EmbeddingCase{attn::PositionKind::Learned, 50257, 64, 33},
        EmbeddingCase{attn::PositionKind::None, 7, 8, 7},
        // BART: scaled by √d_model, positions 2 rows in
        EmbeddingCase{attn::PositionKind::Learned, 101, 48, 9, 6.92820323f, 2},
        EmbeddingCase{attn::PositionKind::Sinusoidal, 30, 16, 5, 4.0f},
        // Marian (scaled by √d_model), even and odd widths
        EmbeddingCase{attn::PositionKind::SinusoidalHalves, 65, 512, 9,
                      22.627417f},
        EmbeddingCase{attn::PositionKind::SinusoidalHalves, 40, 97, 17}));

struct EpilogueCase {
  int in, out, tokens;
  attn::Activation activation;
  bool bias, residual;
  attn::Activation inputGate = attn::Activation::None;
  float softcap = 0; ///< an output head's logit cap
};

double activate(double y, attn::Activation activation) {
  switch (activation) {
  case attn::Activation::GeluTanh:
    return 0.5 * y *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (y + 0.044715 * y * y * y)));
  case attn::Activation::Relu:
    return std::max(y, 0.0);
  case attn::Activation::Silu:
    return y / (1 + std::exp(-y));
  case attn::Activation::Gelu:
    return 0.5 * y * (1 + std::erf(y / std::sqrt(2.0)));
  case attn::Activation::None:
    break;
  }
  return y;
}

class LinearEpilogueTest : public testing::TestWithParam<EpilogueCase> {};

TEST_P(LinearEpilogueTest, MatchesDoubleReference) {
  const EpilogueCase &c = GetParam();
  attn::LinearSpec spec;
  spec.functionName = "linear";
  spec.inFeatures = c.in;
  spec.outFeatures = c.out;
  spec.bias = c.bias;
  spec.activation = c.activation;
  spec.residual = c.residual;
  spec.inputGate = c.inputGate;
  spec.softcap = c.softcap;
  const bool gated = c.inputGate != attn::Activation::None;
  const int width = gated ? 2 * c.in : c.in;
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, jitTarget());
  kernel.pipeline.compile_jit(jitTarget());

  std::mt19937 rng(c.in * 13 + c.out);
  std::vector<float> x = randomVector(size_t(c.tokens) * width, rng),
                     w = randomVector(size_t(c.in) * c.out, rng),
                     b = randomVector(c.out, rng),
                     r = randomVector(size_t(c.tokens) * c.out, rng);
  Halide::Buffer<float> input(x.data(), width, c.tokens), bias(b.data(), c.out),
      residual(r.data(), c.out, c.tokens), output(c.out, c.tokens);
  Halide::Buffer<> weight = attn::packLinearWeights(w.data(), c.in, c.out);
  Halide::ParamMap params;
  size_t next = 0;
  params.set(kernel.inputs[next++], input);
  params.set(kernel.inputs[next++], weight);
  if (c.bias)
    params.set(kernel.inputs[next++], bias);
  if (c.residual)
    params.set(kernel.inputs[next++], residual);
  ASSERT_EQ(next, kernel.inputs.size());
  kernel.pipeline.realize(output, jitTarget(), params);

  double worst = 0;
  for (int m = 0; m < c.tokens; m++)
    for (int n = 0; n < c.out; n++) {
      double y = c.bias ? b[n] : 0.0;
      for (int k = 0; k < c.in; k++) {
        const float *row = &x[size_t(m) * width];
        double value = gated ? activate(row[k], c.inputGate) * row[k + c.in]
                             : double(row[k]);
        y += value * w[size_t(k) * c.out + n];
      }
      y = activate(y, c.activation);
      if (c.softcap > 0)
        y = c.softcap * std::tanh(y / c.softcap);
      if (c.residual)
        y += r[size_t(m) * c.out + n];
      worst = std::max(worst, std::fabs(output(n, m) - y));
    }
  EXPECT_LE(worst, 1e-5 * std::sqrt(double(c.in)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LinearEpilogueTest,
    testing::Values(
        EpilogueCase{128, 512, 15, attn::Activation::GeluTanh, true, false},
        EpilogueCase{512, 128, 15, attn::Activation::None, true, true},
        EpilogueCase{128, 128, 1, attn::Activation::None, true, true},
        EpilogueCase{100, 37, 7, attn::Activation::Relu, false, true},
        EpilogueCase{64, 176, 33, attn::Activation::Silu, true, false},
        EpilogueCase{33, 65, 2, attn::Activation::GeluTanh, false, true},
        EpilogueCase{64, 96, 13, attn::Activation::Gelu, true, false},
        // Gated FFN down projections (SwiGLU, GeGLU): act(gate)·up in.
        EpilogueCase{96, 64, 9, attn::Activation::None, false, true,
                     attn::Activation::Silu},
        EpilogueCase{50, 33, 1, attn::Activation::None, true, false,
                     attn::Activation::GeluTanh},
        // A wide gated down projection: the K-blocked reduction (3 blocks
        // of 1536 gated features) with the residual epilogue.
        EpilogueCase{4608, 128, 11, attn::Activation::None, false, true,
                     attn::Activation::Silu},
        // Gemma 2's final logit cap (small enough to bite: outputs are
        // O(sqrt(in))), prompt and one token.
        EpilogueCase{256, 1000, 9, attn::Activation::None, true, false,
                     attn::Activation::None, 3.0f},
        EpilogueCase{64, 33, 1, attn::Activation::None, false, false,
                     attn::Activation::None, 1.0f}));

} // namespace
