//===- LinearTest.cpp - the linear kernel vs a double reference -----------===//
//
// JIT-compiled linear pipelines over odd and round sizes, with and without
// bias, from one token (decode) to many (prefill), several schedules, and
// input widths that take the K-blocked reduction.
// Tolerance: 1e-5 relative to sqrt(inFeatures) — inputs in [-1, 1] make
// outputs sums of inFeatures products, whose fp32 rounding grows like the
// square root of their count. int8 weights: the same, against the inputs
// as the kernel rounds them (int16 per block); the exact inputs' result
// differs by at most the rounding's bound (checked), here about
// 1.5e-5 · sum |W|. bf16 weights on AMX tiles likewise, against the inputs
// rounded to bf16 (the exact inputs' result within 2^-9 · sum |x·W|).
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include "attn/runtime/Int4Weights.h"
#include "attn/schedules/AmxLinear.h"
#include "attn/schedules/Pipelines.h"

#include <gtest/gtest.h>

#include <limits>

using namespace attn::test;

namespace {

struct LinearCase {
  int in, out, tokens;
  bool bias;
  attn::LinearSchedule schedule;
  // RoPE on the first ropeHeads heads of ropeHeadDim features (0: none).
  int ropeHeads = 0, ropeHeadDim = 0;
  float ropeTheta = 0.0f;
  attn::RopeScaling ropeScaling = {};
  /// W's element type (F32, F16, BF16, I8, I4, MXFP4); the reference uses
  /// the same rounded (dequantized) values.
  attn::DType weights = attn::DType::F32;
  /// I4 and grouped I8: inputs per scale, and (I4) random zero points of
  /// their own (else 8).
  int group = 0;
  bool zeros = false;
  /// > 0: QK-norm of the RoPE heads (with random per-feature weights).
  float qkNormEps = 0.0f;
  attn::QkNormScope qkNormScope = attn::QkNormScope::Head;
  /// Partial rotary: the first ropeDim features of each RoPE head rotate.
  int ropeDim = 0;
  /// I4 with a minimum per (group, feature) instead of a zero point (GGUF's
  /// Q4_1, Q4_K): W = u · s + m.
  bool mins = false;
};

/// `w` rounded to nearest even as bf16 or f16 weights store it.
void roundTo(std::vector<float> &w, attn::DType type) {
  for (float &v : w)
    v = type == attn::DType::BF16  ? float(Halide::bfloat16_t(v))
        : type == attn::DType::F16 ? float(Halide::float16_t(v))
                                   : v;
}

/// Zero points for int4 weights of `scales`' shape: random per (group,
/// feature) where `random`, else 8 (symmetric).
Halide::Buffer<uint8_t> int4Zeros(const Halide::Buffer<float> &scales,
                                  bool random, std::mt19937 &rng) {
  Halide::Buffer<uint8_t> zeros(scales.width(), scales.height(),
                                scales.channels());
  std::uniform_int_distribution<int> zero(0, 15);
  zeros.for_each_value([&](uint8_t &z) {
    z = random ? uint8_t(zero(rng)) : attn::kInt4SymmetricZero;
  });
  return zeros;
}

/// `w` [in][out] replaced by what a kernel multiplies for int8, int4 and
/// mxfp4 weights packed from it: q · scale, (u - z) · s (rounded to bf16
/// where `bf16`, as AMX tiles read it), and e2m1(u) · 2^(e - 127) with the
/// exponents `exponents`; other types keep their values.
void dequantize(std::vector<float> &w, int in, int out, attn::DType type,
                int group, const Halide::Buffer<> &packed,
                const Halide::Buffer<float> &scales,
                const Halide::Buffer<uint8_t> &zeros, bool bf16 = false,
                const Halide::Buffer<uint8_t> *exponents = nullptr,
                const Halide::Buffer<float> *mins = nullptr) {
  const attn::Int4Layout layout{in, out, group};
  for (int k = 0; k < in; k++)
    for (int n = 0; n < out; n++) {
      float &v = w[size_t(k) * out + n];
      if (type == attn::DType::MXFP4)
        v = attn::e2m1Value(layout.get(packed.as<uint16_t>().data(), k, n)) *
            attn::e8m0Scale(
                exponents->data()[layout.scaleOf(k / attn::kMxBlock, n)]);
      if (type == attn::DType::I8)
        v = float(packed.as<int8_t>()(2 * (n % 16) + k % 2, k / 2, n / 16)) *
            (group ? scales.data()[layout.scaleOf(k / group, n)] : scales(n));
      if (type == attn::DType::I4) {
        const size_t at = layout.scaleOf(k / group, n);
        const int u = layout.get(packed.as<uint16_t>().data(), k, n);
        const float value =
            mins && mins->defined()
                ? float(u) * scales.data()[at] + mins->data()[at]
                : float(u - int(zeros.data()[at])) * scales.data()[at];
        v = bf16 ? float(Halide::bfloat16_t(value)) : value;
      }
    }
}

/// `c` with only the first `dim` features of each RoPE head rotating.
LinearCase withRopeDim(LinearCase c, int dim) {
  c.ropeDim = dim;
  return c;
}

/// LongRoPE over `pairs` channel pairs against an original context of
/// `original` positions (the test's positions reach 4K): distinct short and
/// long factors, Phi-3's attention factor for a 32x context.
attn::RopeScaling longRope(int pairs, double original) {
  attn::RopeScaling rule;
  rule.type = attn::RopeScaling::Type::LongRope;
  rule.originalMaxPositions = original;
  rule.factor = 32;
  rule.attentionFactor = std::sqrt(1 + std::log(32.0) / std::log(original));
  for (int i = 0; i < pairs; i++) {
    rule.shortFactors.push_back(1.0 + 0.05 * i);
    rule.longFactors.push_back(1.0 + 1.5 * i);
  }
  return rule;
}

/// `c` with QK-norm of its RoPE heads.
LinearCase withQkNorm(LinearCase c, float eps = 1e-6f) {
  c.qkNormEps = eps;
  return c;
}

/// `c` with QK-norm over all its query heads and all its key heads (OLMo
/// 2's): the key heads are the RoPE heads past out/ropeHeadDim - ropeHeads.
LinearCase withProjectionQkNorm(LinearCase c, float eps = 1e-6f) {
  c.qkNormEps = eps;
  c.qkNormScope = attn::QkNormScope::Projection;
  return c;
}

/// RoPE's inverse frequency of channel pair i of d, as transformers'
/// modeling_rope_utils computes it (written from its formulas, not from
/// attnc's).
double referenceFrequency(int i, int d, double theta,
                          const attn::RopeScaling &s) {
  double f = 1.0 / std::pow(theta, 2.0 * i / d);
  if (s.type == attn::RopeScaling::Type::Linear)
    return f / s.factor;
  if (s.type == attn::RopeScaling::Type::Yarn) {
    // find_correction_dim for beta_fast and beta_slow, truncated and
    // clamped to [0, d - 1]; then the linear ramp over pair index i.
    const double pi = std::acos(-1.0);
    auto correction = [&](double rotations) {
      return d * std::log(s.originalMaxPositions / (rotations * 2 * pi)) /
             (2 * std::log(theta));
    };
    double low = std::max(0.0, std::floor(correction(s.betaFast)));
    double high = std::min(double(d - 1), std::ceil(correction(s.betaSlow)));
    if (low == high)
      high += 0.001;
    double ramp = std::min(1.0, std::max(0.0, (i - low) / (high - low)));
    double extrapolationFactor = 1 - ramp;
    return (f / s.factor) * (1 - extrapolationFactor) +
           f * extrapolationFactor;
  }
  if (s.type != attn::RopeScaling::Type::Llama3)
    return f;
  const double pi = std::acos(-1.0), wavelen = 2 * pi / f,
               lowWavelen = s.originalMaxPositions / s.lowFreqFactor,
               highWavelen = s.originalMaxPositions / s.highFreqFactor;
  double llama = wavelen > lowWavelen ? f / s.factor : f;
  double smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) /
                  (s.highFreqFactor - s.lowFreqFactor);
  double smoothed = (1 - smooth) * llama / s.factor + smooth * llama;
  bool medium = !(wavelen < highWavelen) && !(wavelen > lowWavelen);
  return medium ? smoothed : llama;
}

/// Dynamic NTK's frequency for a call whose longest sequence is `length`
/// (transformers' _compute_dynamic_ntk_parameters; the default ones until
/// the call passes the original context).
double dynamicFrequency(int i, int d, double theta, double length,
                        const attn::RopeScaling &s) {
  if (length <= s.originalMaxPositions)
    return 1.0 / std::pow(theta, 2.0 * i / d);
  double base = theta * std::pow(s.factor * length / s.originalMaxPositions -
                                     (s.factor - 1),
                                 double(d) / (d - 2));
  return 1.0 / std::pow(base, 2.0 * i / d);
}

class LinearTest : public testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, MatchesDoubleReference) {
  const LinearCase &c = GetParam();
  attn::LinearSpec spec;
  spec.functionName = "linear";
  spec.inFeatures = c.in;
  spec.outFeatures = c.out;
  spec.bias = c.bias;
  spec.schedule = c.schedule;
  spec.ropeHeads = c.ropeHeads;
  spec.ropeHeadDim = c.ropeHeadDim;
  spec.ropeTheta = c.ropeTheta;
  spec.ropeScaling = c.ropeScaling;
  spec.weightElement = c.weights;
  spec.weightGroup = c.group;
  spec.weightZeros = c.zeros;
  spec.weightMins = c.mins;
  spec.qkNormEps = c.qkNormEps;
  spec.qkNormScope = c.qkNormScope;
  spec.ropeDim = c.ropeDim;
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, target);
  kernel.pipeline.compile_jit(target);

  std::mt19937 rng(c.in * 31 + c.out);
  std::vector<float> x = randomVector(size_t(c.tokens) * c.in, rng),
                     w = randomVector(size_t(c.in) * c.out, rng),
                     b = randomVector(c.out, rng);
  std::vector<int32_t> pos(c.tokens);
  for (int m = 0; m < c.tokens; m++)
    pos[m] = (m * 977) % 4096; // out of order, up to 4K
  Halide::Buffer<float> input(x.data(), c.in, c.tokens), bias(b.data(), c.out),
      output(c.out, c.tokens);
  // Narrow weights: rounded to nearest even, and the rounded values are
  // what the reference multiplies. The kernel takes them in panels.
  roundTo(w, c.weights);
  // int8: the reference multiplies the dequantized values q · scale;
  // int4 (u - z) · s, read back through Int4Layout, with z random per
  // (group, feature) for `zeros` (then W is no quantization of the drawn
  // one: only the kernel's arithmetic is checked), else 8. On AMX tiles
  // int4's (u - z) · s is rounded to bf16 as the product reads it.
  const bool amx =
      attn::linearUsesAmx(spec, target) && attn::amx::available();
  Halide::Buffer<float> scales;
  Halide::Buffer<uint8_t> exponents; // mxfp4's
  Halide::Buffer<float> mins;        // int4 with minimums
  Halide::Buffer<> packed =
      attn::packLinearWeights(w.data(), c.in, c.out, c.weights, &scales,
                              c.group, &exponents, c.mins ? &mins : nullptr);
  const bool int8 = c.weights == attn::DType::I8;
  const bool int4 = c.weights == attn::DType::I4;
  const bool mx = c.weights == attn::DType::MXFP4;
  const std::vector<float> drawn = w;
  const attn::Int4Layout layout{c.in, c.out, c.group};
  Halide::Buffer<uint8_t> zeros;
  if (int4)
    zeros = int4Zeros(scales, c.zeros, rng);
  dequantize(w, c.in, c.out, c.weights, c.group, packed, scales, zeros, amx,
             &exponents, &mins);
  Halide::ParamMap params;
  size_t next = 0;
  params.set(kernel.inputs[next++], input);
  params.set(kernel.inputs[next++], packed);
  if (int8 || int4)
    params.set(kernel.inputs[next++], scales);
  if (mx)
    params.set(kernel.inputs[next++], exponents);
  if (c.zeros)
    params.set(kernel.inputs[next++], zeros);
  if (c.mins)
    params.set(kernel.inputs[next++], mins);
  if (c.bias)
    params.set(kernel.inputs[next++], bias);
  Halide::Buffer<int32_t> positions(pos.data(), c.tokens);
  if (c.ropeTheta > 0)
    params.set(kernel.inputs[next++], positions);
  // QK-norm's per-feature weights around 1, as trained ones are.
  const int normed = c.ropeHeads * c.ropeHeadDim;
  std::vector<float> normWeight(std::max(normed, 1));
  std::uniform_real_distribution<float> nearOne(0.5f, 1.5f);
  for (float &v : normWeight)
    v = nearOne(rng);
  Halide::Buffer<float> qkNormWeight(normWeight.data(), normed);
  if (c.qkNormEps > 0)
    params.set(kernel.inputs[next++], qkNormWeight);
  ASSERT_EQ(next, kernel.inputs.size());
  kernel.pipeline.realize(output, target, params);

  // int8 kernels see each input rounded to int16 per block of
  // kInt8InputBlock (scale: the block's max |x| / 32767), int4 ones per
  // group, to int16 or, for vpdpbusd (linearUsesInt8Inputs), int8 (max |x|
  // / 127): the reference
  // takes the same values, and the exact inputs' result must lie within
  // the rounding's bound, sum_k |W(k, n)| · scale(k) / 2. bf16 weights on
  // AMX tiles (a CPU with AMX, prompt-sized variants): each input rounded
  // to bf16, within half a unit in the last place, |x|·2^-9.
  auto seen = [&](int m) {
    std::vector<double> row(x.begin() + size_t(m) * c.in,
                            x.begin() + size_t(m + 1) * c.in),
        halfStep(c.in, 0.0);
    if (amx) {
      for (int k = 0; k < c.in; k++) {
        halfStep[k] = std::fabs(row[k]) * std::ldexp(1.0, -9);
        row[k] = float(Halide::bfloat16_t(float(row[k])));
      }
      return std::pair{row, halfStep};
    }
    if (!int8 && !int4 && !mx)
      return std::pair{row, halfStep};
    const int block = c.group ? c.group : attn::kInt8InputBlock;
    const float levels =
        attn::linearUsesInt8Inputs(spec, target) ? 127.0f : 32767.0f;
    for (int b0 = 0; b0 < c.in; b0 += block) {
      const int b1 = std::min(c.in, b0 + block);
      float largest = 0;
      for (int k = b0; k < b1; k++)
        largest = std::max(largest, std::fabs(float(row[k])));
      const float scale = largest / levels;
      for (int k = b0; k < b1; k++) {
        row[k] = std::nearbyint(float(row[k]) / scale) * double(scale);
        halfStep[k] = scale / 2.0;
      }
    }
    return std::pair{row, halfStep};
  };
  // Symmetric int4 is a quantization of the drawn W: |W - Wq| <= s / 2,
  // so the output lies within sum_k |x_k| · s(k, n) / 2 (more the inputs'
  // rounding) of the drawn weights' product.
  const double tolerance = 1e-5 * std::sqrt(double(c.in));
  double worst = 0;
  std::vector<double> linear(c.out);
  for (int m = 0; m < c.tokens; m++) {
    auto [row, halfStep] = seen(m);
    for (int n = 0; n < c.out; n++) {
      linear[n] = c.bias ? b[n] : 0.0;
      double exact = linear[n], bound = 0, unquantized = linear[n],
             quantization = 0;
      for (int k = 0; k < c.in; k++) {
        const double weight = w[size_t(k) * c.out + n];
        const double xk = x[size_t(m) * c.in + k];
        linear[n] += row[k] * weight;
        exact += xk * weight;
        bound += std::fabs(weight) * halfStep[k];
        if (int4 && !c.zeros) {
          unquantized += xk * drawn[size_t(k) * c.out + n];
          quantization +=
              std::fabs(xk) *
              (scales.data()[layout.scaleOf(k / c.group, n)] / 2 +
               (amx ? std::fabs(weight) * std::ldexp(1.0, -9) : 0.0));
        }
        // MXFP4 of the drawn W: within twice the block's scale (E2M1's
        // steps reach 2 between 4 and 6; values saturate from 6 to 8).
        if (mx) {
          unquantized += xk * drawn[size_t(k) * c.out + n];
          quantization +=
              std::fabs(xk) * 2 *
              attn::e8m0Scale(
                  exponents.data()[layout.scaleOf(k / attn::kMxBlock, n)]);
        }
      }
      if (n >= c.ropeHeads * c.ropeHeadDim) { // unrotated
        EXPECT_LE(std::fabs(output(n, m) - exact), bound + tolerance);
        if ((int4 && !c.zeros) || mx)
          EXPECT_LE(std::fabs(output(n, m) - unquantized),
                    quantization + bound + tolerance);
      }
    }
    // QK-norm: each RoPE head over its RMS, or the query heads together
    // and the key heads together; times its weights, in double.
    auto normalize = [&](int begin, int count) {
      double squares = 0;
      for (int i = begin; i < begin + count; i++)
        squares += linear[i] * linear[i];
      const double scale = 1.0 / std::sqrt(squares / count + c.qkNormEps);
      for (int i = begin; i < begin + count; i++)
        linear[i] *= scale * normWeight[i];
    };
    const int d = c.ropeHeadDim;
    if (c.qkNormEps > 0 && c.qkNormScope == attn::QkNormScope::Head)
      for (int h = 0; h < c.ropeHeads; h++)
        normalize(h * d, d);
    if (c.qkNormEps > 0 && c.qkNormScope == attn::QkNormScope::Projection) {
      const int keyHeads = c.out / d - c.ropeHeads,
                queryHeads = c.ropeHeads - keyHeads;
      if (queryHeads > 0)
        normalize(0, queryHeads * d);
      if (keyHeads > 0)
        normalize(queryHeads * d, keyHeads * d);
    }
    for (int n = 0; n < c.out; n++) {
      double expected = linear[n];
      const int rotary = c.ropeDim > 0 ? c.ropeDim : c.ropeHeadDim;
      if (c.ropeTheta > 0 && n < c.ropeHeads * c.ropeHeadDim &&
          n % c.ropeHeadDim < rotary) {
        // rotate_half over the rotary features: feature i pairs with
        // i ± rotary/2; fp32 angles.
        int d = rotary, half = d / 2, i = n % c.ropeHeadDim;
        float frequency =
            c.ropeScaling.type == attn::RopeScaling::Type::Dynamic
                ? float(dynamicFrequency(
                      i % half, d, c.ropeTheta,
                      *std::max_element(pos.begin(), pos.end()) + 1.0,
                      c.ropeScaling))
            : c.ropeScaling.type == attn::RopeScaling::Type::LongRope
                // transformers' longrope: the long factors once the call's
                // longest sequence passes the original context.
                ? float(std::pow(double(c.ropeTheta), -2.0 * (i % half) / d) /
                        (*std::max_element(pos.begin(), pos.end()) + 1.0 >
                                 c.ropeScaling.originalMaxPositions
                             ? c.ropeScaling.longFactors
                             : c.ropeScaling.shortFactors)[size_t(i % half)])
                : float(referenceFrequency(i % half, d, c.ropeTheta,
                                           c.ropeScaling));
        double angle = double(float(pos[m]) * frequency);
        int partner = n - i + (i + half) % d;
        expected = (linear[n] * std::cos(angle) +
                    (i < half ? -1.0 : 1.0) * linear[partner] *
                        std::sin(angle)) *
                   c.ropeScaling.attentionFactor;
      }
      worst = std::max(worst, std::fabs(output(n, m) - expected));
    }
  }
  EXPECT_LE(worst, tolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LinearTest,
    testing::Values(LinearCase{64, 192, 1, false, {}},  // decode QKV-like
                    LinearCase{512, 1536, 7, true, {}}, // prefill, bias
                    LinearCase{100, 37, 13, true, {}},  // odd everything
                    LinearCase{13, 5, 1, false, {}},    // tiny
                    LinearCase{256, 1000, 33, true, {0, 2, 4}},
                    LinearCase{128, 80, 25, false, {8, 1, 1}},
                    // One-row tiles (the `_gemv` variants attnc emits).
                    LinearCase{128, 384, 1, true, {0, 4, 1}},
                    LinearCase{100, 37, 2, true, {0, 4, 1}},
                    // Fused QKV with RoPE on Q and K: 4 query + 2 KV heads
                    // of 16 (rotated), then 2 V heads (not rotated).
                    LinearCase{64, 128, 5, true, {}, 6, 16, 10000.0f},
                    LinearCase{96, 8 * 64, 9, false, {}, 6, 64, 500000.0f},
                    // Scaled RoPE: linear, and Llama 3.1's rule, whose
                    // 32 frequencies of a 64-wide head fall in all three
                    // bands (kept, blended, divided by the factor).
                    LinearCase{96, 8 * 64, 9, false, {}, 6, 64, 500000.0f,
                               {attn::RopeScaling::Type::Linear, 4.0}},
                    LinearCase{96, 8 * 64, 9, true, {}, 6, 64, 500000.0f,
                               {attn::RopeScaling::Type::Llama3, 8.0, 1.0,
                                4.0, 8192.0}},
                    // yarn (Qwen2.5's: factor 4 over 32768 positions, so
                    // d 64's ramp runs over pairs 11-20 of 32), with its
                    // attention factor 0.1·ln 4 + 1 on Q and K.
                    LinearCase{96, 8 * 64, 9, true, {}, 6, 64, 1000000.0f,
                               {attn::RopeScaling::Type::Yarn, 4.0, 1.0, 4.0,
                                32768.0, 32.0, 1.0, true,
                                0.1 * std::log(4.0) + 1.0}},
                    // Dynamic NTK: positions up to 4K against an original
                    // context of 2048 (the base grows), and of 8192 (it
                    // does not).
                    LinearCase{96, 8 * 64, 9, true, {}, 6, 64, 10000.0f,
                               {attn::RopeScaling::Type::Dynamic, 2.0, 1.0,
                                4.0, 2048.0}},
                    LinearCase{96, 8 * 64, 9, false, {}, 6, 64, 10000.0f,
                               {attn::RopeScaling::Type::Dynamic, 2.0, 1.0,
                                4.0, 8192.0}},
                    // Wide inputs: W slices past L2 (in x 64 features, or
                    // x 128 for RoPE tiles, over 1 MiB) take the K-blocked
                    // reduction (4 blocks of 1250; 3 of 1536 with a tail of
                    // output features; 4 of 1088), and an input width no
                    // block size divides keeps the plain one. (Dropping a
                    // block fails the first three: checked.)
                    LinearCase{5000, 128, 13, true, {}},
                    LinearCase{4608, 200, 7, false, {}},
                    LinearCase{4352, 3 * 128, 5, true, {}, 2, 128, 10000.0f},
                    LinearCase{4099, 64, 9, true, {}},
                    // Narrow weights, widened as read: register tiles,
                    // one-row tiles, K-blocked, RoPE, odd sizes.
                    LinearCase{512, 1536, 7, true, {}, 0, 0, 0.0f, {},
                               attn::DType::BF16},
                    LinearCase{128, 384, 1, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::BF16},
                    LinearCase{100, 37, 2, false, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::F16},
                    LinearCase{5000, 128, 13, true, {}, 0, 0, 0.0f, {},
                               attn::DType::BF16},
                    LinearCase{64, 128, 5, true, {}, 6, 16, 10000.0f, {},
                               attn::DType::F16},
                    LinearCase{64, 128, 5, true, {}, 6, 16, 10000.0f, {},
                               attn::DType::BF16},
                    LinearCase{4352, 3 * 128, 5, false, {}, 2, 128, 10000.0f,
                               {}, attn::DType::BF16},
                    LinearCase{100, 37, 13, true, {}, 0, 0, 0.0f, {},
                               attn::DType::BF16},
                    // More tokens than one AMX block (32), a tail of 6.
                    LinearCase{96, 200, 70, true, {}, 0, 0, 0.0f, {},
                               attn::DType::BF16},
                    // int8 with a scale per output feature: register and
                    // one-row tiles, K-blocked, RoPE after the scale, odd.
                    LinearCase{512, 1536, 7, true, {}, 0, 0, 0.0f, {},
                               attn::DType::I8},
                    LinearCase{128, 384, 1, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::I8},
                    LinearCase{5000, 128, 13, false, {}, 0, 0, 0.0f, {},
                               attn::DType::I8},
                    LinearCase{64, 128, 5, true, {}, 6, 16, 10000.0f, {},
                               attn::DType::I8},
                    LinearCase{100, 37, 2, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::I8},
                    // Odd inputs (a last pair of one), a feature tail and
                    // more tokens than one AMX block.
                    LinearCase{97, 200, 70, true, {}, 0, 0, 0.0f, {},
                               attn::DType::I8},
                    // int8 with a scale per group of 32 or 16 inputs and
                    // feature (GGUF's Q8_0, Q6_K): register and one-row
                    // tiles, a partial last group (100 inputs), a feature
                    // tail, RoPE after the scales, odd inputs.
                    LinearCase{512, 1536, 7, true, {}, 0, 0, 0.0f, {},
                               attn::DType::I8, 32},
                    LinearCase{128, 384, 1, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::I8, 32},
                    LinearCase{100, 37, 2, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::I8, 16},
                    LinearCase{64, 128, 5, true, {}, 6, 16, 10000.0f, {},
                               attn::DType::I8, 32},
                    LinearCase{97, 200, 70, true, {}, 0, 0, 0.0f, {},
                               attn::DType::I8, 16},
                    // int4 in groups of 32, 64 and 128 inputs: register and
                    // one-row tiles, a partial last group (100 inputs), a
                    // feature tail, RoPE after the scales, wide inputs, and
                    // zero points of their own (GPTQ's and AWQ's).
                    LinearCase{512, 1536, 7, true, {}, 0, 0, 0.0f, {},
                               attn::DType::I4, 128},
                    LinearCase{128, 384, 1, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::I4, 32},
                    LinearCase{100, 37, 2, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::I4, 64},
                    LinearCase{100, 37, 13, false, {}, 0, 0, 0.0f, {},
                               attn::DType::I4, 32},
                    LinearCase{64, 128, 5, true, {}, 6, 16, 10000.0f, {},
                               attn::DType::I4, 32},
                    LinearCase{4352, 200, 5, false, {}, 0, 0, 0.0f, {},
                               attn::DType::I4, 128},
                    LinearCase{256, 96, 9, true, {}, 0, 0, 0.0f, {},
                               attn::DType::I4, 64, true},
                    LinearCase{96, 40, 1, false, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::I4, 32, true},
                    // int4 with minimums (GGUF's Q4_1 and Q4_K): register
                    // and one-row tiles, a partial last group, RoPE.
                    LinearCase{512, 1536, 7, true, {}, 0, 0, 0.0f, {},
                               attn::DType::I4, 32, false, 0.0f,
                               attn::QkNormScope::Head, 0, true},
                    LinearCase{100, 37, 1, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::I4, 32, false, 0.0f,
                               attn::QkNormScope::Head, 0, true},
                    LinearCase{64, 128, 5, false, {}, 6, 16, 10000.0f, {},
                               attn::DType::I4, 32, false, 0.0f,
                               attn::QkNormScope::Head, 0, true},
                    // MXFP4 (gpt-oss's experts): one-row tiles (decode),
                    // prompt tiles (vpdpbusd where linearUsesInt8Inputs),
                    // a partial last block (100 inputs), a feature tail.
                    LinearCase{128, 384, 1, true, {0, 4, 1}, 0, 0, 0.0f, {},
                               attn::DType::MXFP4, 32},
                    LinearCase{100, 37, 13, false, {}, 0, 0, 0.0f, {},
                               attn::DType::MXFP4, 32},
                    LinearCase{512, 256, 7, true, {}, 0, 0, 0.0f, {},
                               attn::DType::MXFP4, 32},
                    // QK-norm of the RoPE heads (Qwen3's q_norm and k_norm
                    // as one per-feature weight): fused QKV and a K/V
                    // projection, prompt and one-row tiles, head sizes that
                    // sum in 16 and 8 lanes (48, 24), the K-blocked
                    // reduction, narrow and quantized weights, AMX-sized
                    // prompts, a large eps, and scaled RoPE after it.
                    withQkNorm({64, 128, 5, false, {}, 6, 16, 1000000.0f}),
                    withQkNorm({96, 8 * 64, 9, true, {}, 6, 64, 10000.0f}),
                    withQkNorm({96, 8 * 64, 1, false, {0, 4, 1}, 6, 64,
                                10000.0f}),
                    withQkNorm({80, 2 * 2 * 128, 3, false, {}, 2, 128,
                                10000.0f}),
                    withQkNorm({64, 5 * 48, 7, true, {}, 4, 48, 10000.0f}),
                    withQkNorm({64, 5 * 24, 2, false, {0, 4, 1}, 3, 24,
                                10000.0f}),
                    withQkNorm({4352, 3 * 128, 5, true, {}, 2, 128,
                                10000.0f}),
                    withQkNorm({96, 8 * 64, 40, false, {}, 6, 64, 10000.0f,
                                {}, attn::DType::BF16}),
                    withQkNorm({96, 8 * 64, 1, false, {0, 4, 1}, 6, 64,
                                10000.0f, {}, attn::DType::BF16}),
                    withQkNorm({64, 128, 5, true, {}, 6, 16, 10000.0f, {},
                                attn::DType::I8}),
                    withQkNorm({64, 128, 5, true, {}, 6, 16, 10000.0f, {},
                                attn::DType::I4, 32}),
                    withQkNorm({96, 8 * 64, 9, true, {}, 6, 64, 500000.0f,
                                {attn::RopeScaling::Type::Llama3, 8.0, 1.0,
                                 4.0, 8192.0}},
                               1e-2f),
                    // Partial rotary (Phi-4-mini's 0.75, GPT-NeoX's 0.25):
                    // the first features of each head rotate over their own
                    // frequencies, the rest pass through; with QK-norm,
                    // narrow weights, one row, dynamic NTK over the rotary
                    // features, and a quarter of 64.
                    withRopeDim({96, 8 * 64, 9, true, {}, 6, 64, 10000.0f}, 48),
                    withRopeDim({96, 8 * 64, 1, false, {0, 4, 1}, 6, 64,
                                 10000.0f, {}, attn::DType::BF16},
                                16),
                    withRopeDim(withQkNorm({64, 5 * 48, 7, true, {}, 4, 48,
                                            10000.0f}),
                                36),
                    withRopeDim({96, 8 * 64, 9, true, {}, 6, 64, 10000.0f,
                                 {attn::RopeScaling::Type::Dynamic, 2.0, 1.0,
                                  4.0, 2048.0}},
                                48),
                    // QK-norm over the whole projection (OLMo 2): fused
                    // QKV with GQA (4 query, 2 key heads), one row, a
                    // query-only and a key/value-only projection (one
                    // group), narrow and int4 weights, partial rotary, the
                    // K-blocked reduction.
                    withProjectionQkNorm(
                        {96, 8 * 64, 9, true, {}, 6, 64, 10000.0f}),
                    withProjectionQkNorm(
                        {96, 8 * 64, 1, false, {0, 4, 1}, 6, 64, 10000.0f}),
                    withProjectionQkNorm(
                        {64, 4 * 48, 5, true, {}, 4, 48, 10000.0f}),
                    withProjectionQkNorm(
                        {64, 2 * 2 * 32, 3, false, {}, 2, 32, 10000.0f}),
                    withProjectionQkNorm({96, 8 * 64, 40, false, {}, 6, 64,
                                          10000.0f, {}, attn::DType::BF16}),
                    withProjectionQkNorm({64, 128, 5, true, {}, 6, 16,
                                          10000.0f, {}, attn::DType::I4, 32}),
                    withRopeDim(withProjectionQkNorm(
                                    {64, 5 * 48, 7, true, {}, 4, 48, 10000.0f}),
                                36),
                    withProjectionQkNorm(
                        {4352, 3 * 128, 5, true, {}, 2, 128, 10000.0f}),
                    // LongRoPE (Phi-3.5, Phi-4-mini): positions up to 4K
                    // past an original context of 2048 (long factors) and
                    // within one of 8192 (short), partial rotary as in
                    // Phi-4-mini, one row.
                    withRopeDim({96, 8 * 64, 9, true, {}, 6, 64, 10000.0f,
                                 longRope(24, 2048.0)},
                                48),
                    withRopeDim({96, 8 * 64, 9, false, {}, 6, 64, 10000.0f,
                                 longRope(24, 8192.0)},
                                48),
                    LinearCase{96, 8 * 64, 1, false, {0, 4, 1}, 6, 64,
                               10000.0f, longRope(32, 2048.0)}));

// The output head's fused argmax (LinearSpec::argmax): each token's
// best_token is the first maximum of the kernel's own output row (exact: the
// same floats, so no tolerance), -1 for a row with a NaN. Rows are planted
// with a tie of the maximum (the lower index must win), an all -inf row
// (index 0, as std::max_element) and a NaN input.
struct ArgmaxCase {
  int in, vocabulary, tokens;
  attn::LinearSchedule schedule;
};

class ArgmaxTest : public testing::TestWithParam<ArgmaxCase> {};

TEST_P(ArgmaxTest, PicksTheFirstMaximumAndRefusesNaN) {
  const ArgmaxCase &c = GetParam();
  attn::LinearSpec spec;
  spec.functionName = "head";
  spec.inFeatures = c.in;
  spec.outFeatures = c.vocabulary;
  spec.bias = true;
  spec.argmax = true;
  spec.schedule = c.schedule;
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, target);
  kernel.pipeline.compile_jit(target);

  std::mt19937 rng(c.in * 7 + c.vocabulary);
  std::vector<float> x = randomVector(size_t(c.tokens) * c.in, rng),
                     w = randomVector(size_t(c.in) * c.vocabulary, rng),
                     b = randomVector(c.vocabulary, rng);
  // Features `high` and `low` < `high` share a column and a large bias:
  // equal, largest outputs in every row.
  const int low = c.vocabulary / 3, high = c.vocabulary - 2;
  for (int k = 0; k < c.in; k++)
    w[size_t(k) * c.vocabulary + low] = w[size_t(k) * c.vocabulary + high];
  b[low] = b[high] = 1000.0f;
  // Token 1 reads a NaN: every output of its row is NaN.
  const float inf = std::numeric_limits<float>::infinity();
  if (c.tokens > 2)
    x[size_t(1) * c.in + c.in / 2] = std::nanf("");
  Halide::Buffer<float> input(x.data(), c.in, c.tokens),
      bias(b.data(), c.vocabulary), output(c.vocabulary, c.tokens);
  Halide::Buffer<> weight = attn::packLinearWeights(w.data(), c.in, c.vocabulary);
  Halide::Buffer<int32_t> best(c.tokens);
  Halide::ParamMap params;
  params.set(kernel.inputs[0], input);
  params.set(kernel.inputs[1], weight);
  params.set(kernel.inputs[2], bias);
  kernel.pipeline.realize({output, best}, target, params);
  for (int m = 0; m < c.tokens; m++) {
    const float *row = &output(0, m);
    bool nan = std::any_of(row, row + c.vocabulary,
                           [](float v) { return std::isnan(v); });
    int32_t expected =
        nan ? -1 : int32_t(std::max_element(row, row + c.vocabulary) - row);
    EXPECT_EQ(best(m), expected) << "token " << m;
    if (c.tokens > 2 && m == 1)
      EXPECT_EQ(best(m), -1);
    else
      EXPECT_EQ(best(m), low) << "token " << m; // the planted tie
  }

  // Every output -inf: index 0, as std::max_element.
  std::fill(b.begin(), b.end(), -inf);
  std::fill(x.begin(), x.end(), 0.0f);
  kernel.pipeline.realize({output, best}, target, params);
  for (int m = 0; m < c.tokens; m++)
    EXPECT_EQ(best(m), 0) << "token " << m;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ArgmaxTest,
    testing::Values(ArgmaxCase{64, 1000, 1, {0, 4, 1}}, // decode (gemv)
                    ArgmaxCase{64, 1000, 3, {0, 4, 1}},
                    ArgmaxCase{100, 37, 7, {}},   // odd vocabulary
                    ArgmaxCase{32, 32003, 5, {}}, // Llama-sized, odd
                    ArgmaxCase{5000, 129, 4, {}}, // K-blocked reduction
                    ArgmaxCase{16, 5, 1, {}}));   // tiny

// The grouped expert variant (LinearSpec::groupedExperts): W stacks
// `experts` matrices, and row m multiplies expert index[m]'s, as a decode
// step runs every chosen expert in one call. Against a double reference over
// the stacked W as packed (dequantized for int8 and int4), the inputs as the
// kernel rounds them within their rounding's bound (LinearTest's tolerance).
// Rows choose experts at random, one expert twice, the last expert always;
// gated inputs (a down projection's SiLU(gate)·up) and biases included.
struct GroupedCase {
  int in, out, experts, rows;
  bool bias, gated;
  attn::DType weights = attn::DType::F32;
  int group = 0; ///< I4, grouped I8: inputs per scale (MXFP4: 32)
  bool zeros = false;
  /// gpt-oss's gated product: g·sigmoid(alpha·g)·(u + 1), g and u clamped
  /// at limit; 0: SwiGLU's.
  float gateAlpha = 0, gateLimit = 0;
};

class GroupedExpertsTest : public testing::TestWithParam<GroupedCase> {};

TEST_P(GroupedExpertsTest, EachRowMultipliesItsExpert) {
  const GroupedCase &c = GetParam();
  attn::LinearSpec spec;
  spec.functionName = "experts";
  spec.inFeatures = c.in;
  spec.outFeatures = c.out;
  spec.bias = c.bias;
  spec.inputGate = c.gated ? attn::Activation::Silu : attn::Activation::None;
  spec.weightElement = c.weights;
  spec.weightGroup = c.group;
  spec.weightZeros = c.zeros;
  spec.gateAlpha = c.gateAlpha;
  spec.gateLimit = c.gateLimit;
  spec.experts = c.experts;
  spec.groupedExperts = true;
  spec.schedule.tileRows = 1;
  Halide::Target target = Halide::get_jit_target_from_environment();
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, target);
  kernel.pipeline.compile_jit(target);

  const int stacked = c.experts * c.out, width = c.gated ? 2 * c.in : c.in;
  std::mt19937 rng(c.in * 17 + c.out + c.experts);
  std::vector<float> x = randomVector(size_t(c.rows) * width, rng),
                     w = randomVector(size_t(c.in) * stacked, rng),
                     b = randomVector(stacked, rng);
  std::vector<int32_t> index(c.rows);
  std::uniform_int_distribution<int> pick(0, c.experts - 1);
  for (int32_t &e : index)
    e = pick(rng);
  index[0] = c.experts - 1;
  if (c.rows > 2)
    index[2] = index[1];
  roundTo(w, c.weights);
  Halide::Buffer<float> scales;
  Halide::Buffer<uint8_t> exponents;
  Halide::Buffer<> packed = attn::packLinearWeights(
      w.data(), c.in, stacked, c.weights, &scales, c.group, &exponents);
  // What the kernel multiplies: the packed values, dequantized.
  const bool int8 = c.weights == attn::DType::I8,
             int4 = c.weights == attn::DType::I4,
             mx = c.weights == attn::DType::MXFP4;
  Halide::Buffer<uint8_t> zeros;
  if (int4)
    zeros = int4Zeros(scales, c.zeros, rng);
  dequantize(w, c.in, stacked, c.weights, c.group, packed, scales, zeros,
             false, &exponents);

  Halide::Buffer<float> input(x.data(), width, c.rows), bias(b.data(), stacked),
      output(c.out, c.rows);
  Halide::Buffer<int32_t> experts(index.data(), c.rows);
  Halide::ParamMap params;
  size_t next = 0;
  params.set(kernel.inputs[next++], input);
  params.set(kernel.inputs[next++], experts);
  params.set(kernel.inputs[next++], packed);
  if (int8 || int4)
    params.set(kernel.inputs[next++], scales);
  if (mx)
    params.set(kernel.inputs[next++], exponents);
  if (c.zeros)
    params.set(kernel.inputs[next++], zeros);
  if (c.bias)
    params.set(kernel.inputs[next++], bias);
  ASSERT_EQ(next, kernel.inputs.size());
  kernel.pipeline.realize(output, target, params);

  const double tolerance = 1e-5 * std::sqrt(double(c.in));
  // The gated product in double: SwiGLU's, or gpt-oss's.
  auto gatedInput = [&](double gate, double up) {
    if (c.gateLimit > 0) {
      gate = std::min(gate, double(c.gateLimit));
      up = std::clamp(up, -double(c.gateLimit), double(c.gateLimit)) + 1.0;
    }
    const double alpha = c.gateAlpha > 0 ? c.gateAlpha : 1.0;
    return gate / (1.0 + std::exp(-alpha * gate)) * up;
  };
  for (int m = 0; m < c.rows; m++) {
    // The row's input (SiLU(gate)·up for a gated one) and, for int8 and
    // int4, half a step of its rounding to int16 per block.
    std::vector<double> row(c.in), halfStep(c.in, 0.0);
    const float *xm = x.data() + size_t(m) * width;
    for (int k = 0; k < c.in; k++)
      row[k] = c.gated ? gatedInput(xm[k], xm[c.in + k]) : xm[k];
    if (int8 || int4 || mx) {
      const int block = c.group ? c.group : attn::kInt8InputBlock;
      for (int b0 = 0; b0 < c.in; b0 += block) {
        double largest = 0;
        for (int k = b0; k < std::min(c.in, b0 + block); k++)
          largest = std::max(largest, std::fabs(row[k]));
        for (int k = b0; k < std::min(c.in, b0 + block); k++)
          halfStep[k] = largest / 32767.0 / 2.0 * 1.01;
      }
    }
    const int first = index[m] * c.out;
    for (int n = 0; n < c.out; n++) {
      double exact = c.bias ? b[first + n] : 0.0, bound = 0;
      for (int k = 0; k < c.in; k++) {
        const double weight = w[size_t(k) * stacked + first + n];
        exact += row[k] * weight;
        bound += std::fabs(weight) * halfStep[k];
      }
      ASSERT_LE(std::fabs(output(n, m) - exact), bound + tolerance)
          << "row " << m << " (expert " << index[m] << "), feature " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GroupedExpertsTest,
    testing::Values(
        // A half-width Qwen3-30B-A3B's gate | up and down, 8 of 16.
        GroupedCase{256, 2 * 96, 16, 8, false, false, attn::DType::BF16},
        GroupedCase{96, 256, 16, 8, false, true, attn::DType::BF16},
        GroupedCase{64, 64, 4, 3, true, false},         // f32, bias
        GroupedCase{64, 32, 5, 2, true, true, attn::DType::F16},
        GroupedCase{128, 64, 8, 4, true, false, attn::DType::I8},
        GroupedCase{96, 128, 8, 4, false, true, attn::DType::I8},
        GroupedCase{96, 128, 8, 4, true, true, attn::DType::I8, 32},
        GroupedCase{256, 64, 6, 5, false, false, attn::DType::I4, 128},
        GroupedCase{128, 96, 6, 5, true, true, attn::DType::I4, 32},
        GroupedCase{128, 64, 3, 4, false, false, attn::DType::I4, 64, true},
        // gpt-oss's experts: MXFP4 (a partial last block: 112 inputs),
        // biases, and its clamped product (limits that bind, in f32 and
        // in MXFP4).
        GroupedCase{256, 64, 6, 5, true, false, attn::DType::MXFP4, 32},
        GroupedCase{112, 96, 4, 4, true, true, attn::DType::MXFP4, 32, false,
                    1.702f, 0.5f},
        GroupedCase{64, 64, 4, 3, true, true, attn::DType::F32, 0, false,
                    1.702f, 0.7f},
        GroupedCase{64, 64, 2, 1, false, false}));      // one row

} // namespace
