//===- Linear.cpp - out = in · W + bias in Halide -------------------------===//
//
// The projection kernel: a register-tiled matrix product over output
// features (vectorized) and tokens (unrolled), with the bias folded into
// the accumulator's initial value. With one token (decode) it is a
// matrix-vector product, bound by reading W once.
//
// W comes in panels of output features, [panel][in][16 words] (16
// features, or 32 as bf16 pairs: KernelSpec.h): a task's register tile
// walks whole panels, so it streams contiguous memory whatever the
// model's width. Stored [in][out], each step of the reduction
// read a few cache lines one row (8-16 KiB) further on, across a page
// every time, where hardware prefetchers stop: a one-token GEMV streamed
// 28-32 GB/s, 62% of the read bandwidth, and bf16 weights were hardly
// faster than f32 (bench/README.md, Zen 5).
//
//===----------------------------------------------------------------------===//

#include "AttentionParts.h"
#include "KernelBuffers.h"
#include "attn/runtime/Int4Weights.h"
#include "attn/schedules/AmxLinear.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

using namespace Halide;

namespace attn {

namespace {
/// `activation` of x.
Expr activate(Expr x, Activation activation) {
  switch (activation) {
  case Activation::GeluTanh: {
    // 0.5·x·(1 + tanh(u)) = x·sigmoid(2u): the same function, vectorized.
    const float sqrt2OverPi = 0.7978845608028654f;
    return x * sigmoid(2.0f * sqrt2OverPi * (x + 0.044715f * x * x * x));
  }
  case Activation::Relu:
    return max(x, 0.0f);
  case Activation::Silu:
    return x * sigmoid(x);
  case Activation::Gelu:
    // Halide's erf is accurate to the last three bits of fp32.
    return 0.5f * x * (1.0f + Halide::erf(x * 0.7071067811865476f));
  case Activation::None:
    break;
  }
  return x;
}

/// The K and V rows of `projection` (its last 2·kvHeads·headDim features),
/// scattered into two cache pools (c, h, slot) at the rows `slots` names;
/// for an int8 cache also their scales, two pools (h, slot). The projection
/// is an output computed before them; each token's row is read back from
/// L1/L2 once, converted and stored, a few hundred bytes per token against
/// the kilobytes of W the projection streamed for it.
std::vector<Func> appendToCache(const CacheAppend &append, Func projection,
                                int features, ImageParam slots, int vec,
                                bool gpu) {
  // Halide 14's LLVM emits invalid PTX for bf16 stores ("Arguments
  // mismatch for instruction 'st'", test/kernels/GpuPtxTest.cpp): on CUDA
  // a bf16 pool is written as its uint16 bit patterns, rounded to nearest
  // even here, as the runtime rounds (NaN kept a quiet NaN).
  const bool bf16Bits = gpu && append.element == DType::BF16;
  const bool int8 = append.element == DType::I8;
  const Type element = halideType(
      cacheBufferElement(append.element, gpu ? KernelPlace::Gpu : KernelPlace::Cpu));
  auto convert = [&](Expr x) {
    if (!bf16Bits)
      return cast(element, x);
    Expr bits = reinterpret<uint32_t>(x);
    Expr rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
    return cast<uint16_t>(select(is_nan(x), (bits >> 16) | 0x40, rounded));
  };
  const int headDim = append.headDim, kvWidth = append.kvHeads * headDim;
  Expr tokens = projection.output_buffer().dim(1).extent();
  slots.dim(0).set_min(0).set_stride(1).set_extent(tokens);
  // Halide 14 reads an output back as if it were its own allocation,
  // assuming vector alignment; require it, so a misaligned caller gets an
  // error instead of a fault.
  projection.output_buffer().set_host_alignment(kAppendOutputAlignment);
  Var c("c"), h("h"), s("s"), m("m");
  // int8: each (token, head) row as round(x / scale), scale = the row's
  // largest finite magnitude / 127 (exactly the runtime's quantizeRow:
  // ties to even, infinities saturate, NaN becomes 0).
  auto rowScale = [&](const std::string &name, Expr firstFeature) {
    Func scale(name + "_scale");
    RDom rd(0, headDim, name + "_rd");
    Expr x = projection(firstFeature + h * headDim + rd, m);
    // strict_float: Halide would otherwise multiply by 1/127, which rounds
    // differently from the runtime's division.
    scale(h, m) =
        strict_float(maximum(select(is_finite(x), abs(x), 0.0f)) / 127.0f);
    if (gpu)
      scale.compute_root().gpu_blocks(m).gpu_threads(h);
    else
      scale.compute_root();
    return scale;
  };
  std::vector<Func> scales;
  auto scatter = [&](const std::string &name, Expr firstFeature) {
    Func pool(name);
    pool(c, h, s) = undef(element);
    RDom r(0, headDim, 0, append.kvHeads, 0, tokens, name + "_r");
    Expr slot = slots(r.z);
    r.where(slot >= 0);
    Expr lastSlot = pool.output_buffer().dim(2).extent() - 1;
    Expr x = projection(firstFeature + r.y * headDim + r.x, r.z);
    Expr stored = convert(x);
    if (int8) {
      Func scale = rowScale(name, firstFeature);
      Expr q = select(scale(r.y, r.z) > 0.0f, round(x / scale(r.y, r.z)), 0.0f);
      stored = cast<int8_t>(select(is_nan(q), 0.0f, clamp(q, -127.0f, 127.0f)));
      // The scales, (h, slot) pools beside the K/V ones.
      std::string scalesName =
          name == "key_cache" ? "key_scales" : "value_scales";
      Func scalePool(scalesName);
      scalePool(h, s) = undef(Float(32));
      RDom rs(0, append.kvHeads, 0, tokens, scalesName + "_r");
      Expr scaleSlot = slots(rs.y);
      rs.where(scaleSlot >= 0);
      scalePool(rs.x, clamp(scaleSlot, 0, lastSlot)) = scale(rs.x, rs.y);
      scalePool.output_buffer()
          .dim(0)
          .set_min(0)
          .set_extent(append.kvHeads)
          .set_stride(1);
      scalePool.output_buffer().dim(1).set_min(0).set_stride(append.kvHeads);
      if (gpu)
        scalePool.update().allow_race_conditions().gpu_blocks(rs.y).gpu_threads(
            rs.x);
      scales.push_back(scalePool);
    }
    pool(r.x, r.y, clamp(slot, 0, lastSlot)) = stored;
    pool.output_buffer().dim(0).set_min(0).set_extent(headDim).set_stride(1);
    pool.output_buffer()
        .dim(1)
        .set_min(0)
        .set_extent(append.kvHeads)
        .set_stride(headDim);
    pool.output_buffer().dim(2).set_min(0).set_stride(kvWidth);
    // Per token (outermost) and head, one vectorized row of head_dim. The
    // slots of one call are distinct (the runtime reserved them), so tokens
    // may run in parallel on a GPU: one block per token, a thread per d.
    if (gpu)
      pool.update()
          .reorder(r.x, r.y, r.z)
          .allow_race_conditions()
          .gpu_blocks(r.z)
          .gpu_threads(r.x);
    else
      pool.update()
          .reorder(r.x, r.y, r.z)
          .vectorize(r.x, vec, TailStrategy::GuardWithIf);
    return pool;
  };
  std::vector<Func> pools = {scatter("key_cache", features - 2 * kvWidth),
                             scatter("value_cache", features - kvWidth)};
  pools.insert(pools.end(), scales.begin(), scales.end());
  return pools;
}

/// Each token's greedy choice among the `features` outputs of `logits`: the
/// lowest index of the largest, or -1 if any is NaN. It runs after the
/// product, reading each token's row back from cache (32K floats are
/// 128 KiB): a scan of microseconds against the milliseconds the head
/// spends streaming its weights (measured within the noise, bench/README.md),
/// and greedy decoding needs no scan of the logits by the caller.
Func greedyToken(Func logits, int features, bool gpu) {
  Var m("m");
  RDom r(0, features, "r");
  // (index of the maximum so far, the maximum, seen a NaN); strict > keeps
  // the first of equal maxima.
  Func best("best");
  best(m) = {0, Expr(-std::numeric_limits<float>::infinity()), cast<bool>(0)};
  Expr value = logits(r, m);
  best(m) = {select(value > best(m)[1], r, best(m)[0]), max(value, best(m)[1]),
             best(m)[2] || is_nan(value)};
  Func token("best_token");
  token(m) = select(best(m)[2], -1, best(m)[0]);
  token.output_buffer().dim(0).set_min(0).set_stride(1);
  if (gpu) { // a thread per token; heads run few tokens at a time
    Var mo("mo"), mi("mi");
    token.gpu_tile(m, mo, mi, 32, TailStrategy::GuardWithIf);
    best.compute_at(token, mi);
  } else {
    best.compute_at(token, m);
  }
  return token;
}

/// `f` followed by `activation`, elementwise (inlined by default).
Func applyActivation(Func f, Activation activation) {
  if (activation == Activation::None)
    return f;
  Var n("n"), m("m");
  Func activated("activated");
  activated(n, m) = activate(f(n, m), activation);
  return activated;
}
} // namespace

Halide::Buffer<> packLinearWeights(const float *weight, int in, int out,
                                   DType element, Halide::Buffer<float> *scales,
                                   int group, Halide::Buffer<uint8_t> *exponents,
                                   Halide::Buffer<float> *mins) {
  const int P = weightPanel(element), panels = (out + P - 1) / P;
  auto at = [&](int k, int n) {
    return n < out ? weight[size_t(k) * out + n] : 0.0f;
  };
  if (element == DType::MXFP4) { // per (block of 32, feature)
    assert(exponents && "mxfp4 weights come with their exponents");
    const Int4Layout layout{in, out, kMxBlock};
    Buffer<uint16_t> packed(int(kInt4RowWords), int(layout.rows()), panels);
    *exponents = Buffer<uint8_t>(int(kInt4Panel), int(layout.groups()), panels);
    packed.fill(0);
    exponents->fill(0);
    std::vector<float> column(static_cast<size_t>(in));
    std::vector<uint8_t> codes(static_cast<size_t>(in));
    for (int n = 0; n < out; n++) {
      for (int k = 0; k < in; k++)
        column[size_t(k)] = at(k, n);
      for (int64_t g = 0; g < layout.groups(); g++) {
        const int64_t k0 = g * kMxBlock, count = std::min(kMxBlock, in - k0);
        exponents->data()[layout.scaleOf(g, n)] = quantizeMxfp4Block(
            &column[size_t(k0)], count, &codes[size_t(k0)]);
      }
      for (int k = 0; k < in; k++)
        layout.put(packed.data(), k, n, codes[size_t(k)]);
    }
    return packed;
  }
  if (element == DType::I4) { // per (group, feature): absmax / 7
    assert(scales && group > 0 && "int4 weights come with their scales");
    const Int4Layout layout{in, out, group};
    Buffer<uint16_t> packed(int(kInt4RowWords), int(layout.rows()), panels);
    *scales = Buffer<float>(int(kInt4Panel), int(layout.groups()), panels);
    packed.fill(0);
    scales->fill(0.0f);
    if (mins) { // per (group, feature): quantizeInt4MinGroup
      *mins = Buffer<float>(int(kInt4Panel), int(layout.groups()), panels);
      mins->fill(0.0f);
      std::vector<float> x(static_cast<size_t>(group));
      std::vector<uint8_t> u(static_cast<size_t>(group));
      for (int n = 0; n < out; n++)
        for (int g = 0; g < layout.groups(); g++) {
          const int k0 = g * group, count = std::min(group, in - k0);
          for (int i = 0; i < count; i++)
            x[size_t(i)] = at(k0 + i, n);
          const size_t slot = layout.scaleOf(g, n);
          quantizeInt4MinGroup(x.data(), count, u.data(),
                               scales->data()[slot], mins->data()[slot]);
          for (int i = 0; i < count; i++)
            layout.put(packed.data(), k0 + i, n, u[size_t(i)]);
        }
      return packed;
    }
    std::vector<float> column(static_cast<size_t>(in));
    for (int n = 0; n < out; n++) {
      for (int k = 0; k < in; k++)
        column[size_t(k)] = at(k, n);
      layout.quantizeFeature(column.data(), n, packed.data(), scales->data());
    }
    return packed;
  }
  if (element == DType::I8) { // per output feature or (group, feature)
    assert(scales && "int8 weights come with their scales");
    // absmax / 127 of inputs [k0, k0 + count) of feature n.
    auto absmax = [&](int n, int k0, int count) {
      float largest = 0.0f;
      for (int k = k0; k < std::min(in, k0 + count); k++)
        if (std::isfinite(at(k, n)))
          largest = std::max(largest, std::fabs(at(k, n)));
      return largest / 127.0f;
    };
    const Int4Layout groups{in, out, std::max(group, 1)};
    if (group > 0) {
      *scales = Buffer<float>(P, int(groups.groups()), panels);
      scales->fill(0.0f);
      for (int n = 0; n < out; n++)
        for (int g = 0; g < groups.groups(); g++)
          scales->data()[groups.scaleOf(g, n)] = absmax(n, g * group, group);
    } else {
      *scales = Buffer<float>(out);
      for (int n = 0; n < out; n++)
        (*scales)(n) = absmax(n, 0, in);
    }
    // Byte 2p + r of row j: input 2j + r (pairs), feature p.
    Buffer<int8_t> packed(2 * P, (in + 1) / 2, panels);
    packed.for_each_element([&](int b, int j, int q) {
      const int n = q * P + b / 2, k = 2 * j + b % 2;
      const float scale =
          n >= out || k >= in ? 0.0f
          : group > 0         ? scales->data()[groups.scaleOf(k / group, n)]
                              : (*scales)(n);
      const float v =
          k < in && scale > 0.0f ? std::nearbyint(at(k, n) / scale) : 0.0f;
      packed(b, j, q) =
          std::isnan(v) ? int8_t(0) : int8_t(std::clamp(v, -127.0f, 127.0f));
    });
    return packed;
  }
  if (element == DType::BF16) { // pairs 16 apart in a uint32
    Buffer<uint32_t> packed(16, in, panels);
    packed.for_each_element([&](int p, int k, int q) {
      packed(p, k, q) = uint32_t(bfloat16_t(at(k, q * P + p)).to_bits()) |
                        uint32_t(bfloat16_t(at(k, q * P + 16 + p)).to_bits())
                            << 16;
    });
    return packed;
  }
  const Type type = element == DType::F16 ? Float(16) : Float(32);
  Buffer<> packed(type, P, in, panels);
  packed.for_each_element([&](int p, int k, int q) {
    if (element == DType::F16)
      packed.as<float16_t>()(p, k, q) = float16_t(at(k, q * P + p));
    else
      packed.as<float>()(p, k, q) = at(k, q * P + p);
  });
  return packed;
}

std::vector<double> ropeInverseFrequencies(double theta, int headDim,
                                           const RopeScaling &scaling) {
  std::vector<double> frequencies(headDim / 2);
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < headDim / 2; i++) {
    double f = std::pow(theta, -2.0 * i / double(headDim));
    switch (scaling.type) {
    case RopeScaling::Type::Default:
      break;
    case RopeScaling::Type::Linear:
      f /= scaling.factor;
      break;
    case RopeScaling::Type::Dynamic: // the default until a call is longer
      break;
    case RopeScaling::Type::LongRope: // short factors until a call is longer
      if (size_t(i) < scaling.shortFactors.size())
        f /= scaling.shortFactors[size_t(i)];
      break;
    case RopeScaling::Type::Yarn: {
      // The dimension at which a frequency turns `rotations` times over
      // the original context, and the ramp between betaFast's and
      // betaSlow's (transformers' find_correction_range).
      auto dimension = [&](double rotations) {
        return headDim *
               std::log(scaling.originalMaxPositions / (rotations * 2 * pi)) /
               (2 * std::log(theta));
      };
      double low = dimension(scaling.betaFast),
             high = dimension(scaling.betaSlow);
      if (scaling.truncate)
        low = std::floor(low), high = std::ceil(high);
      low = std::max(low, 0.0), high = std::min(high, double(headDim - 1));
      if (low == high)
        high += 0.001;
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0),
                   extrapolation = 1 - ramp;
      f = f / scaling.factor * (1 - extrapolation) + f * extrapolation;
      break;
    }
    case RopeScaling::Type::Llama3: {
      // transformers' _compute_llama3_parameters.
      const double wavelength = 2 * pi / f,
                   lowWavelength =
                       scaling.originalMaxPositions / scaling.lowFreqFactor,
                   highWavelength =
                       scaling.originalMaxPositions / scaling.highFreqFactor;
      if (wavelength > lowWavelength) {
        f /= scaling.factor;
      } else if (wavelength >= highWavelength) {
        const double smooth =
            (scaling.originalMaxPositions / wavelength -
             scaling.lowFreqFactor) /
            (scaling.highFreqFactor - scaling.lowFreqFactor);
        f = (1 - smooth) * f / scaling.factor + smooth * f;
      }
      break;
    }
    }
    frequencies[i] = f;
  }
  return frequencies;
}

double yarnAttentionFactor(double factor, double mscale, double mscaleAllDim) {
  auto scale = [&](double m) {
    return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0;
  };
  return mscale > 0 && mscaleAllDim > 0 ? scale(mscale) / scale(mscaleAllDim)
                                        : scale(1.0);
}

bool linearUsesInt8Inputs(const LinearSpec &spec, const Target &target) {
  return (spec.weightElement == DType::I4 ||
          spec.weightElement == DType::MXFP4) &&
         spec.schedule.tileRows > 1 &&
         !spec.groupedExperts && target.arch == Target::X86 &&
         !target.has_gpu_feature() &&
         target.has_feature(Target::AVX512_SapphireRapids);
}

bool linearUsesAmx(const LinearSpec &spec, const Target &target) {
  return spec.bf16Products &&
         (spec.weightElement == DType::BF16 ||
          (spec.weightElement == DType::I8 && spec.weightGroup == 0) ||
          (spec.weightElement == DType::I4 && !spec.weightMins)) &&
         spec.schedule.tileRows > 1 && target.arch == Target::X86 &&
         target.bits == 64 && !target.has_gpu_feature() &&
         target.has_feature(Target::AVX512_SapphireRapids);
}

KernelPipeline buildLinearPipeline(const LinearSpec &spec,
                                   const Target &target) {
  const int in = spec.inFeatures, out = spec.outFeatures;

  // ALGORITHM ---------------------------------------------------------------
  const bool gpu = target.has_gpu_feature();
  KernelBuffers buffers(
      kernelBuffers(spec, gpu ? KernelPlace::Gpu : KernelPlace::Cpu));
  ImageParam input = buffers.input("input"); // (k, m): token m, feature k
  // (p, k, q): output feature q·P + p, input k; narrow weights are widened
  // as they are read (decode streams W: its bytes are the time).
  // bf16 comes in pairs: a uint32 word holds features p and p + 16 of its
  // panel, widened by a shift and a mask (a zero-extending shuffle per
  // vector otherwise: 20% slower where W streams from memory).
  // int8: each output feature's weights are q · scale(n). The inputs are
  // quantized too, to int16 per block of kInt8InputBlock inputs and token
  // (scale: the block's largest magnitude / 32767), so the products are
  // integer dot products of input pairs (vpdpwssd, or vpmaddwd without
  // AVX512-VNNI: 32 products an instruction, where widening each weight to
  // fp32 took three instructions per 16 and left a one-token GEMV
  // instruction-bound at half the read bandwidth). Each block's int32 sum
  // is scaled into an fp32 accumulator; the weight scale comes last.
  // Grouped int8 (GGUF's Q8_0 and Q6_K blocks: a scale per group of 32 or
  // 16 inputs and feature): the input blocks are the weights' groups, each
  // block's sum scaled by both scales into the accumulator.
  // int4 (KernelSpec.h, Int4Weights.h): the same integer dot products,
  // the inputs rounded per group of the weights' scales, each weight pair
  // taken from its word by a shift and a mask; each group's int32 sum,
  // less the zero point times the group's input sum, is scaled by the
  // weight's and the input's scales into the fp32 accumulator. With
  // minimums (GGUF's Q4_1, Q4_K: W = u · s + m) no zero point, and each
  // group adds m times its input sum.
  const bool pairs = spec.weightElement == DType::BF16;
  const bool int8 = spec.weightElement == DType::I8;
  const bool int8Groups = int8 && spec.weightGroup > 0;
  // MXFP4 (KernelSpec.h): int4's layout and dot products, each code
  // decoded to twice its E2M1 value (an integer in [-12, 12]: exact in
  // the int16 or, offset by 12, uint8 operands), each block's sum scaled by
  // its power of two. `int4` below means either: nibbles in Int4Layout.
  // Measured (gpt-oss-20b's grouped experts, one token, Zen 5): 18–24 GB/s,
  // 1.6–1.7x int4's time for 0.85x its bytes: the decode's ten-odd integer
  // operations per 32 codes bind, not memory (bench/README.md).
  const bool mx = spec.weightElement == DType::MXFP4;
  const bool int4 = spec.weightElement == DType::I4 || mx;
  // int4 prompt tiles where the CPU has AVX512-VNNI's vpdpbusd (the
  // Sapphire Rapids variant: Zen 4/5 and Intel with AMX): inputs rounded to
  // int8 per group and four weight nibbles of a 32-bit lane against four
  // inputs an instruction, twice vpdpwssd's products, the nibbles taken
  // from the packed words as they are (Int4Weights.h) by a shift or a mask
  // per 64 of them.
  const bool int8Inputs = linearUsesInt8Inputs(spec, target);
  const int group = spec.weightGroup;
  if (int4 && !mx && !isInt4Group(group))
    throw std::invalid_argument("linear kernel " + spec.functionName +
                                ": int4 weights need a group of " +
                                kInt4Groups + " inputs, got " +
                                std::to_string(group));
  if (int8 && group && !isInt8Group(group))
    throw std::invalid_argument("linear kernel " + spec.functionName +
                                ": int8 weights take a group of " +
                                kInt8Groups + " inputs (or none), got " +
                                std::to_string(group));
  if (int8 && spec.weightZeros)
    throw std::invalid_argument("linear kernel " + spec.functionName +
                                ": int8 weights are symmetric, without "
                                "zero points");
  if (spec.weightMins && (spec.weightElement != DType::I4 || spec.weightZeros))
    throw std::invalid_argument("linear kernel " + spec.functionName +
                                ": minimums go with int4 weights, instead "
                                "of zero points");
  if (mx && (group != kMxBlock || spec.weightZeros))
    throw std::invalid_argument("linear kernel " + spec.functionName +
                                ": mxfp4 weights come in blocks of 32 "
                                "inputs, without zero points");
  const int P = weightPanel(spec.weightElement),
            panels = (spec.outFeatures + P - 1) / P;
  const int groups = int4 || int8Groups ? (in + group - 1) / group : 0;
  // The grouped expert variant: W stacks `experts` matrices of `panels`
  // panels each, and token row m reads expert expert_index[m]'s (clamped:
  // an index out of range reads a real expert, never past W; the runtime
  // checks its indices first).
  const bool grouped = spec.groupedExperts;
  if (grouped && (gpu || spec.experts < 1 || out % P != 0 ||
                  spec.ropeTheta > 0 || spec.cacheAppend.kvHeads > 0 ||
                  spec.argmax || spec.schedule.tileRows != 1))
    throw std::invalid_argument(
        "linear kernel " + spec.functionName +
        ": a grouped expert kernel needs experts > 0 of whole panels, one-row "
        "tiles, a CPU, and no RoPE, cache append or argmax");
  const int stacked = grouped ? spec.experts : 1;
  ImageParam expertIndex =
      grouped ? buffers.input("expert_index") : ImageParam(); // (m)
  ImageParam weight = buffers.input("weight");
  // int8: (n), or (p, g, q) in groups; int4: (p, g, q), as are the zero
  // points.
  ImageParam weightScales =
      int8 || int4 ? buffers.input("weight_scales") : ImageParam();
  // mxfp4: the E8M0 bytes (p, g, q) in weight_scales.
  ImageParam weightZeros = int4 && spec.weightZeros
                               ? buffers.input("weight_zeros")
                               : ImageParam();
  // int4 with minimums (p, g, q): W = u · s + m.
  ImageParam weightMins =
      spec.weightMins ? buffers.input("weight_mins") : ImageParam();
  ImageParam bias = spec.bias ? buffers.input("bias") : ImageParam(); // (n)
  Var n("n"), m("m");
  RDom rk(0, in, "rk");
  // Register tiles cover whole tiles: tail tiles compute clamped rows (and,
  // when no tile width divides the features, clamped features) that the
  // output never stores.
  const int vecGuess = target.natural_vector_size<float>();
  const LinearSchedule &s = spec.schedule;
  const int vec = s.vectorWidth > 0 ? s.vectorWidth : vecGuess;
  const bool rope = spec.ropeTheta > 0.0f;
  const int headDim = spec.ropeHeadDim;
  if (spec.qkNormEps > 0 && !rope)
    throw std::invalid_argument("linear kernel " + spec.functionName +
                                ": QK-norm normalizes the RoPE heads; it "
                                "needs ropeTheta");
  // Tiles of whole panels (and, with RoPE, whole heads: a feature's RoPE
  // partner is in its tile).
  const int unit = rope ? std::lcm(P, headDim) : P;
  int tileN = std::max(unit, s.tileVectors * vec / unit * unit);
  const int tilePanels = tileN / P;
  Expr row = min(m, input.dim(1).extent() - 1);
  // Row m's expert and the first of its output features in the stack.
  Expr expert = grouped ? clamp(expertIndex(row), 0, stacked - 1) : Expr(0);
  Expr firstOutput = expert * out;
  // A gated input: act(gate) · up, computed once per element (below).
  const bool gated = spec.inputGate != Activation::None;
  Var k("k");
  Func gatedInput("gated_input");
  {
    Expr gate = input(k, m), up = input(k + in, m);
    if (spec.gateLimit > 0) {
      gate = min(gate, spec.gateLimit);
      up = clamp(up, -spec.gateLimit, spec.gateLimit) + 1.0f;
    }
    // silu with a gain: g·sigmoid(alpha·g).
    Expr activated = spec.gateAlpha > 0 && spec.inputGate == Activation::Silu
                         ? gate * sigmoid(spec.gateAlpha * gate)
                         : activate(gate, spec.inputGate);
    gatedInput(k, m) = activated * up;
  }
  // K blocking: when one task's slice of W (in x tileN floats) would not
  // stay in L2 while the token tiles pass over it, the reduction runs in
  // blocks of kBlock input features, every token tile per block, with the
  // partial sums of all the task's tokens kept in L2 between blocks.
  // (Matrix-vector variants read W once anyway.)
  int kBlock = 0;
  if (gpu && (int8 || int4))
    throw std::invalid_argument(
        "linear kernel " + spec.functionName + ": " +
        dtypeName(spec.weightElement) +
        " weights are CPU-only (the GPU schedules read f32 weights)");
  if (!gpu && !int8 && !int4 && s.tileRows > 1 &&
      int64_t(in) * tileN * 4 > (int64_t(1) << 20))
    for (int b = 2048; b >= 256 && !kBlock; b--)
      if (in % b == 0)
        kBlock = b;
  // The sum over panels (p, q): output feature q·P + p. Tail tiles read
  // the last panel again (clamped) and padded features (zero weights);
  // the output never stores them.
  Var p("p"), q("q");
  Expr panel = expert * panels + min(q, panels - 1);
  auto weightAt = [&](Expr k) -> Expr {
    if (!pairs)
      return cast<float>(weight(p, k, panel));
    Expr word = weight(p % 16, k, panel);
    return select(p < 16, reinterpret<float>(word << 16),
                  reinterpret<float>(
                      word & Internal::make_const(UInt(32), uint64_t(0xffff0000u))));
  };
  auto product = [&](Expr k) {
    return (gated ? gatedInput(k, row) : input(k, row)) * weightAt(k);
  };
  Func accumulate("accumulate");
  accumulate(p, q, m) =
      spec.bias && !(int8 && !int8Groups)
          ? bias(firstOutput + min(q * P + p, out - 1))
          : 0.0f;
  Func partial("partial"); // (p, q, m, block): one block's share of the sum
  Var kb("kb");
  RDom rki(0, std::max(kBlock, 1), "rki");
  RDom rkb(0, kBlock ? in / kBlock : 1, "rkb");
  // int8 and int4: the quantized inputs and each (block, token)'s scale.
  // A block with a non-finite input gets an infinite scale, so its outputs
  // are non-finite as in fp32 (never a silent 0).
  const int inputBlock = int4 || int8Groups ? group : kInt8InputBlock;
  const int inputBlocks = (in + inputBlock - 1) / inputBlock,
            weightRows = int8   ? (in + 1) / 2
                         : int4 ? groups * group / int(kInt4RowInputs)
                                : in;
  Func inputScale("input_scale"), input16("input16"), blockDot("block_dot");
  Func inputSum("input_sum"); // int4: (g, m), the group's sum of int16s
  Func inputBytes("input_bytes"); // int8 inputs: (slot, m), below
  RDom rq(0, inputBlock, "rq");
  RDom rd(0, 2, 0, inputBlock / 2, "rd"); // (pair member, pair)
  // int4: (pair member r, nibble step, row j): input 8j + 2t + r of a
  // group for nibble t = step · chains + chain. A one-token product sums
  // each nibble into an accumulator of its own (4 chains of vpdpwssd per
  // panel, not one 4 times as long): with one chain the GEMV waited on
  // vpdpwssd's latency and streamed 20 GB/s of 29 (TinyLlama, 2-vCPU Xeon).
  const int chains = int4 && s.tileRows == 1 ? 4 : 1;
  Var chain("chain");
  RDom rn(0, 2, 0, 4 / chains, 0, std::max(group, 8) / int(kInt4RowInputs),
          "rn");
  // int8 inputs: (byte b of a lane, nibble half h, row j of the group).
  RDom rv(0, 4, 0, 2, 0, std::max(group, 8) / int(kInt4RowInputs), "rv");
  RDom rb(0, inputBlocks, "rb");
  if (int8 || int4) {
    auto x = [&](Expr k, Expr t) {
      Expr kk = min(k, in - 1);
      return gated ? gatedInput(kk, t) : input(kk, t);
    };
    Expr v = x(kb * inputBlock + rq, m);
    const float levels = int8Inputs ? 127.0f : 32767.0f;
    inputScale(kb, m) =
        maximum(select(kb * inputBlock + rq >= in, 0.0f,
                       select(is_finite(v), abs(v),
                              std::numeric_limits<float>::infinity()))) /
        levels;
    Expr scale = inputScale(k / inputBlock, m);
    // |x / scale| <= levels by construction; an infinite scale gives 0.
    input16(k, m) = select(k < in && scale > 0.0f,
                           cast<int16_t>(round(x(k, m) / scale)),
                           cast<int16_t>(0));
    if (int8Inputs) {
      // The order of a packed row's lanes (below), from the fp32 input.
      Expr slot = k % 8, h = slot / 4, b = slot % 4;
      Expr source = max(k - slot + 2 * h + 4 * (b % 2) + b / 2, 0);
      Expr sourceScale = inputScale(source / group, m);
      inputBytes(k, m) =
          select(source < in && sourceScale > 0.0f,
                 cast<int8_t>(round(x(source, m) / sourceScale)),
                 cast<int8_t>(0));
    }
  }
  // int8 inputs in the order a 32-bit lane of a packed row holds its
  // weights (Int4Weights.h): byte b of lane p is word 2p + b / 2's low
  // byte (b even) or high byte, whose low nibbles are inputs 8j + {0, 4, 1,
  // 5} and high nibbles 8j + {2, 6, 3, 7}; slot 8j + 4h + b holds input
  // 8j + 2h + 4(b % 2) + b / 2, so each vpdpbusd reads its four inputs as
  // one broadcast. Rounded from the fp32 input itself: a gather of int16
  // elements compiles to AVX512-FP16's vmovw in this variant (Halide 14
  // targets LLVM's sapphirerapids CPU), which Zen 4/5 lack.
  if (int8) {
    // Rows past the last pair are clamped and meet zero inputs.
    Expr pair = min(kb * (inputBlock / 2) + rd.y, weightRows - 1);
    blockDot(p, q, m, kb) = 0;
    blockDot(p, q, m, kb) +=
        cast<int32_t>(cast<int16_t>(weight(2 * p + rd.x, pair, panel))) *
        cast<int32_t>(input16(kb * inputBlock + 2 * rd.y + rd.x, row));
    Expr scale = int8Groups ? weightScales(p, rb, panel) * inputScale(rb, row)
                            : inputScale(rb, row);
    accumulate(p, q, m) += cast<float>(blockDot(p, q, m, rb)) * scale;
  } else if (int4) {
    Expr dot;
    // Twice an E2M1 code's value: magnitudes 0, 1, 2, 3, 4, 6, 8, 12 are m,
    // plus m - 4 from 4 on, plus 2(m - 6) from 6 on.
    auto e2m1Doubled = [](Expr code) {
      Expr m = cast<int16_t>(code & 7);
      Expr magnitude = m + max(m - 4, 0) + 2 * max(m - 6, 0);
      return select((code & 8) != 0, -magnitude, magnitude);
    };
    // The uint8 operand of vpdpbusd: twice the value plus 12, the zero.
    const int mxZero = 12;
    if (int8Inputs) {
      inputSum(kb, m) = sum(cast<int32_t>(inputBytes(kb * group + rq, m)));
      Expr word = weight(2 * p + rv.x / 2, kb * (group / 8) + rv.z, panel);
      Expr byte = cast<uint8_t>(word >> cast<uint16_t>(8 * (rv.x % 2)));
      Expr u = select(rv.y == 0, byte & cast<uint8_t>(15),
                      byte >> cast<uint8_t>(4));
      if (mx)
        u = cast<uint8_t>(e2m1Doubled(u) + mxZero);
      blockDot(p, q, m, kb) = 0;
      blockDot(p, q, m, kb) +=
          cast<int32_t>(u) * cast<int32_t>(inputBytes(
                                 kb * group + 8 * rv.z + 4 * rv.y + rv.x, row));
      dot = blockDot(p, q, m, rb);
    } else {
      inputSum(kb, m) = sum(cast<int32_t>(input16(kb * group + rq, m)));
      Expr word = weight(2 * p + rn.x, kb * (group / 8) + rn.z, panel);
      Expr t = rn.y * chains + chain;
      Expr code = (word >> cast<uint16_t>(4 * t)) & 15;
      Expr u = mx ? e2m1Doubled(code) : cast<int16_t>(code);
      blockDot(p, q, m, kb, chain) = 0;
      blockDot(p, q, m, kb, chain) +=
          cast<int32_t>(u) *
          cast<int32_t>(input16(kb * group + 8 * rn.z + 2 * t + rn.x, row));
      dot = blockDot(p, q, m, rb, 0);
      for (int c = 1; c < chains; c++)
        dot += blockDot(p, q, m, rb, c);
    }
    Expr zero = spec.weightZeros ? cast<int32_t>(weightZeros(p, rb, panel))
                : mx             ? Expr(int8Inputs ? mxZero : 0)
                : spec.weightMins ? Expr(0)
                                 : Expr(int(kInt4SymmetricZero));
    Expr weightScale = weightScales(p, rb, panel);
    if (mx) {
      // 2^(e - 128) (the codes count twice): exponent bits e - 1, or the
      // subnormals 2^-127 and 2^-128; E8M0's 255 is NaN.
      Expr e = cast<uint32_t>(weightScale);
      weightScale = select(
          e == 255, std::numeric_limits<float>::quiet_NaN(),
          e >= 2, reinterpret<float>((e - 1) << 23),
          reinterpret<float>(cast<uint32_t>(Expr(0x00200000)) << e));
    }
    Expr groupSum = cast<float>(dot - zero * inputSum(rb, row)) * weightScale;
    if (spec.weightMins) // + m · (the group's inputs' sum)
      groupSum += weightMins(p, rb, panel) * cast<float>(inputSum(rb, row));
    accumulate(p, q, m) += groupSum * inputScale(rb, row);
  } else if (kBlock) {
    partial(p, q, m, kb) = 0.0f;
    partial(p, q, m, kb) += product(kb * kBlock + rki);
    accumulate(p, q, m) += partial(p, q, m, rkb);
  } else {
    accumulate(p, q, m) += product(rk);
  }
  // Output feature n of token m.
  Func sum("sum");
  Expr registerTileSum = accumulate(n % P, n / P, m);
  // With bf16 (or int8, int4) weights at prompt sizes on a CPU with AMX
  // (checked when the kernel runs), the product is the AMX micro-kernel's
  // (AmxLinear.h; int8 unpacked, int4 dequantized to bf16 per panel and
  // call) as an
  // extern stage per output tile, over X rounded to bf16 once per call;
  // the pipeline is specialized on the check, so a CPU without AMX (Zen 4
  // and 5 take this same AVX512-BF16 variant) runs the product above.
  const bool amx = linearUsesAmx(spec, target);
  Expr amxReady;
  Func amxInput("amx_input"), amxProduct("amx_product");
  if (amx) {
    amxReady = Internal::Call::make(Int(32), "attn_amx_ready", {},
                                    Internal::Call::PureExtern) != 0;
    // (k, m): X in bf16 bits, zero past the inputs and the tokens, rows
    // padded to amx::xRowStride.
    Expr tokens = input.dim(1).extent();
    Expr x = gated ? gatedInput(min(k, in - 1), min(m, tokens - 1))
                   : input(min(k, in - 1), min(m, tokens - 1));
    amxInput(k, m) =
        select(k < in && m < tokens, reinterpret<uint16_t>(cast(BFloat(16), x)),
               cast<uint16_t>(0));
    if (int4 && weightZeros.defined())
      amxProduct.define_extern(
          "attn_amx_linear_int4_zeros",
          {amxInput, weight, weightScales, weightZeros, in, out, group},
          Float(32), {n, m});
    else if (int4)
      amxProduct.define_extern("attn_amx_linear_int4",
                               {amxInput, weight, weightScales, in, out, group},
                               Float(32), {n, m});
    else if (int8) // unscaled: the int8 epilogue below scales either sum
      amxProduct.define_extern("attn_amx_linear_int8",
                               {amxInput, weight, in, out}, Float(32), {n, m});
    else
      amxProduct.define_extern("attn_amx_linear_bf16",
                               {amxInput, weight, in, out}, Float(32), {n, m});
    Expr product = amxProduct(n, m);
    if (spec.bias && !int8)
      product += bias(n);
    sum(n, m) = select(amxReady, product, registerTileSum);
  } else {
    sum(n, m) = registerTileSum;
  }
  if (int8 && !int8Groups) {
    Expr scaled = sum(n, m) * weightScales(firstOutput + n);
    sum = Func("scaled_sum");
    sum(n, m) = spec.bias ? scaled + bias(firstOutput + n) : scaled;
  }
  Func output("projected");
  ImageParam positions = rope ? buffers.input("positions") : ImageParam(); // (m)
  // QK-norm: each RoPE head's features divided by their RMS and scaled by
  // their weight, before the rotation reads them. One scale per (head,
  // token), summed in lanes of a vector first (a scalar chain of headDim
  // dependent adds per head and token cost up to a tenth of a prefill
  // tile's product).
  const bool qkNorm = rope && spec.qkNormEps > 0;
  const int normed = rope ? spec.ropeHeads * headDim : 0;
  ImageParam qkNormWeight =
      qkNorm ? buffers.input("qk_norm_weight") : ImageParam(); // (n < normed)
  Func headSquareLanes("qk_norm_square_lanes"), headScale("qk_norm_scale");
  Func rotating("rotating"); // what RoPE rotates: sum, QK-normed
  Func featureWeightStage;   // QK-norm's weight per output feature
  // A projection-scope QK-norm's RMS spans every query head (or every key
  // head), wider than any register tile: the sums are stored whole first
  // (`tiled`, scheduled as the output is otherwise), then normalized,
  // rotated and stored in a second, elementwise pass over [out] x [tokens].
  const bool projectionNorm =
      qkNorm && spec.qkNormScope == QkNormScope::Projection;
  struct GroupScale {
    Func scale;       // (m)
    Func squareLanes; // (lane, m)
    int lanes;
  };
  std::vector<GroupScale> groupScales;
  if (projectionNorm) {
    Func whole("projection_sums");
    whole(n, m) = sum(n, m);
    sum = whole;
    // Keys: the RoPE heads past the queries (the features after the RoPE
    // heads are values, as many heads as keys).
    const int keyFeatures = out - normed, queryFeatures = normed - keyFeatures;
    if (out % headDim != 0 || keyFeatures < 0 || queryFeatures < 0)
      throw std::invalid_argument(
          "linear kernel " + spec.functionName +
          ": a projection QK-norm needs the RoPE heads followed by as many "
          "value heads as key heads");
    Var lane("lane");
    // The scale of features [begin, begin + count) per token, squares
    // summed a vector of lanes at a time.
    auto groupScale = [&](int begin, int count, const std::string &name) {
      const int lanes = std::gcd(count, 16);
      RDom rl(0, count / lanes, name + "_rl"), rs(0, lanes, name + "_rs");
      Func squareLanes(name + "_square_lanes"), scale(name + "_scale");
      Expr x = sum(begin + rl * lanes + lane, m);
      squareLanes(lane, m) = 0.0f;
      squareLanes(lane, m) += x * x;
      scale(m) = 1.0f / sqrt(Halide::sum(squareLanes(rs, m)) / float(count) +
                             spec.qkNormEps);
      groupScales.push_back({scale, squareLanes, lanes});
      return scale;
    };
    Expr normedSum = sum(n, m);
    if (queryFeatures > 0 && keyFeatures > 0) {
      Func queryScale = groupScale(0, queryFeatures, "query_norm");
      Func keyScale = groupScale(queryFeatures, keyFeatures, "key_norm");
      normedSum *= select(n < queryFeatures, queryScale(m), keyScale(m));
    } else {
      normedSum *= groupScale(0, normed, "qk_norm")(m);
    }
    rotating(n, m) = select(n < normed,
                            normedSum * qkNormWeight(clamp(n, 0, normed - 1)),
                            sum(n, m));
    qkNormWeight.dim(0).set_min(0).set_extent(normed).set_stride(1);
  } else if (qkNorm) {
    Var h("h"), lane("lane");
    const int lanes = std::gcd(headDim, 16);
    RDom rl(0, headDim / lanes, "rl"), rs(0, lanes, "rs");
    Expr x = sum(h * headDim + rl * lanes + lane, m);
    headSquareLanes(lane, h, m) = 0.0f;
    headSquareLanes(lane, h, m) += x * x;
    Func headSquares("qk_norm_squares");
    headSquares(h, m) = 0.0f;
    headSquares(h, m) += headSquareLanes(rs, h, m);
    headScale(h, m) =
        1.0f / sqrt(headSquares(h, m) / float(headDim) + spec.qkNormEps);
    // In the store loop: the head as (n / vec) / (headDim / vec) where a
    // vector never straddles heads, which Halide sees is one head per
    // vector (a broadcast), not a gather of n / headDim per lane; the
    // weight widened once per call to every feature, read as a dense
    // vector rather than clamped lane by lane.
    Expr head = headDim % vec == 0 ? n / vec / (headDim / vec) : n / headDim;
    Func featureWeight("qk_norm_feature_weight"); // (n), 1 past the heads
    featureWeight(n) =
        select(n < normed, qkNormWeight(clamp(n, 0, normed - 1)), 1.0f);
    featureWeightStage = featureWeight;
    rotating(n, m) =
        select(n < normed, sum(n, m) * headScale(head, m) * featureWeight(n),
               sum(n, m));
    qkNormWeight.dim(0).set_min(0).set_extent(normed).set_stride(1);
  } else {
    rotating(n, m) = sum(n, m);
  }
  if (rope) {
    // The channels of a head that rotate: all, or the first `rotary`
    // (partial rotary), whose frequencies are over rotary channels.
    const int rotary = spec.ropeDim > 0 ? spec.ropeDim : headDim;
    if (rotary % 2 != 0 || rotary > headDim)
      throw std::invalid_argument(
          "linear kernel " + spec.functionName +
          ": ropeDim must be even and at most ropeHeadDim, got " +
          std::to_string(rotary));
    // Inverse frequencies, embedded in the generated code.
    Buffer<float> inverseFrequency(rotary / 2, "rope_inverse_frequency");
    std::vector<double> frequencies =
        ropeInverseFrequencies(spec.ropeTheta, rotary, spec.ropeScaling);
    for (int i = 0; i < rotary / 2; i++)
      inverseFrequency(i) = float(frequencies[i]);
    Func frequency("rope_frequency");
    Var j("j");
    frequency(j) = inverseFrequency(j);
    const RopeScaling &rule = spec.ropeScaling;
    // The call's longest sequence L (its largest position + 1, over all its
    // tokens, as transformers' dynamic_rope_update takes it): what dynamic
    // NTK and LongRoPE switch on.
    Func longest("rope_longest");
    if (rule.type == RopeScaling::Type::Dynamic ||
        rule.type == RopeScaling::Type::LongRope) {
      RDom rt(0, positions.dim(0).extent(), "rt");
      longest() = cast<double>(maximum(positions(rt)) + 1);
      longest.compute_root();
    }
    if (rule.type == RopeScaling::Type::LongRope) {
      // Past the original context, the long factors, chosen once per call.
      if (rule.longFactors.size() != size_t(rotary / 2) ||
          rule.shortFactors.size() != size_t(rotary / 2))
        throw std::invalid_argument("linear kernel " + spec.functionName +
                                    ": LongRoPE needs a short and a long "
                                    "factor per rotating pair");
      RopeScaling longRule = rule;
      longRule.shortFactors = rule.longFactors;
      std::vector<double> longFrequencies =
          ropeInverseFrequencies(spec.ropeTheta, rotary, longRule);
      Buffer<float> longFrequency(rotary / 2, "rope_long_frequency");
      for (int i = 0; i < rotary / 2; i++)
        longFrequency(i) = float(longFrequencies[i]);
      frequency(j) = select(longest() > Expr(rule.originalMaxPositions),
                            longFrequency(j), inverseFrequency(j));
      frequency.compute_root();
    }
    if (rule.type == RopeScaling::Type::Dynamic) {
      // Dynamic NTK: past the original context, the base grows with L, to
      // θ·(factor·L/original - (factor - 1))^(d/(d-2)); in double, once
      // per call, so each frequency is the correctly rounded float.
      auto constant = [](double x) { return Expr(x); };
      Expr length = longest(), original = constant(rule.originalMaxPositions),
           factor = constant(rule.factor);
      Expr base = constant(spec.ropeTheta) *
                  pow(factor * length / original - (factor - constant(1.0)),
                      constant(double(rotary) / (rotary - 2)));
      frequency(j) =
          select(length > original,
                 cast<float>(constant(1.0) /
                             pow(base, cast<double>(2 * j) /
                                           constant(double(rotary)))),
                 inverseFrequency(j));
      frequency.compute_root();
    }
    Expr i = n % headDim, half = rotary / 2;
    // Always inside n's tile (tiles hold whole heads); the clamp tells
    // Halide's bounds inference so. Channels past `rotary` pair with
    // themselves (unused: they pass through).
    Expr tileStart = n / tileN * tileN;
    Expr partner = clamp(n - i + select(i < rotary, (i + half) % rotary, i),
                         tileStart, tileStart + tileN - 1);
    Expr angle = cast<float>(positions(row)) *
                 frequency(clamp(i % half, 0, half - 1));
    Expr rotated = rotating(n, m) * cos(angle) + select(i < half, -1.0f, 1.0f) *
                                                 rotating(partner, m) *
                                                 sin(angle);
    if (spec.ropeScaling.attentionFactor != 1)
      rotated *= float(spec.ropeScaling.attentionFactor);
    if (rotary < headDim) // the rest of a RoPE head passes through
      rotated = select(i < rotary, rotated, rotating(n, m));
    output(n, m) = select(n < normed, rotated, sum(n, m));
    positions.dim(0).set_min(0).set_stride(1);
  } else {
    output(n, m) = sum(n, m);
  }
  output = applyActivation(output, spec.activation);
  if (spec.softcap > 0) { // an output head's cap, before its argmax
    Func capped("capped");
    capped(n, m) = spec.softcap * tanh(output(n, m) / spec.softcap);
    output = capped;
  }
  ImageParam residual =
      spec.residual ? buffers.input("residual") : ImageParam(); // (n, m)
  if (spec.residual) {
    Func withResidual("with_residual");
    withResidual(n, m) = output(n, m) + residual(n, m);
    output = withResidual;
    residual.dim(0).set_min(0).set_extent(out).set_stride(1);
    residual.dim(1).set_min(0).set_stride(out);
  }
  // The kernel's output argument takes its declared name (the stages
  // before it are inlined into it).
  Func named("output");
  named(n, m) = output(n, m);
  output = named;

  const int inputWidth = gated ? 2 * in : in;
  input.dim(0).set_min(0).set_extent(inputWidth).set_stride(1);
  input.dim(1).set_min(0).set_stride(inputWidth);
  const int words = int8 ? 32 : int4 ? int(kInt4RowWords) : 16;
  weight.dim(0).set_min(0).set_extent(words).set_stride(1);
  weight.dim(1).set_min(0).set_extent(weightRows).set_stride(words);
  weight.dim(2)
      .set_min(0)
      .set_extent(stacked * panels)
      .set_stride(words * weightRows);
  if (spec.bias)
    bias.dim(0).set_min(0).set_extent(stacked * out).set_stride(1);
  if (int8 && !int8Groups)
    weightScales.dim(0).set_min(0).set_extent(stacked * out).set_stride(1);
  for (ImageParam perGroup : {weightScales, weightZeros, weightMins})
    if ((int4 || int8Groups) && perGroup.defined()) {
      perGroup.dim(0).set_min(0).set_extent(P).set_stride(1);
      perGroup.dim(1).set_min(0).set_extent(groups).set_stride(P);
      perGroup.dim(2)
          .set_min(0)
          .set_extent(stacked * panels)
          .set_stride(P * groups);
    }
  if (grouped) {
    expertIndex.dim(0).set_min(0).set_stride(1);
    expertIndex.dim(0).set_extent(input.dim(1).extent());
  }
  output.output_buffer().dim(0).set_min(0).set_extent(out).set_stride(1);
  output.output_buffer().dim(1).set_min(0).set_stride(out);

  // The pipeline over its outputs: the product, and the cache append's
  // pools or the greedy token.
  auto finish = [&]() -> KernelPipeline {
    std::vector<Func> outputs = {output};
    if (spec.argmax)
      outputs.push_back(greedyToken(output, out, gpu));
    if (spec.cacheAppend.kvHeads > 0)
      for (Func pool : appendToCache(spec.cacheAppend, output, out,
                                     buffers.input("cache_slots"), vec, gpu))
        outputs.push_back(pool);
    KernelPipeline kernel = buffers.finish(outputs);
    if (amx) // JIT users (tests, attn-bench) call the micro-kernel in-process
      kernel.pipeline.set_jit_externs(
          {{"attn_amx_ready", JITExtern(attn_amx_ready)},
           {"attn_amx_linear_bf16", JITExtern(attn_amx_linear_bf16)},
           {"attn_amx_linear_int4", JITExtern(attn_amx_linear_int4)},
           {"attn_amx_linear_int8", JITExtern(attn_amx_linear_int8)},
           {"attn_amx_linear_int4_zeros",
            JITExtern(attn_amx_linear_int4_zeros)}});
    return kernel;
  };

  // SCHEDULE ----------------------------------------------------------------
  if (gpu) {
    // CUDA: one thread per (output feature, token) in blocks of 64 features
    // x 4 tokens, each summing over the input features in registers (W
    // reads coalesce along the features). Unmeasured (no GPU at hand; PTX
    // checked by ptxas, test/kernels/GpuPtxTest.cpp): a start, not tiled
    // through shared memory; large-token products belong on tensor cores
    // (docs/cuda-tensor-cores.md).
    Var no("no"), ni("ni"), mo("mo"), mi("mi");
    Func tiled = projectionNorm ? sum : output;
    tiled.gpu_tile(n, m, no, mo, ni, mi, 64, 4, TailStrategy::GuardWithIf);
    accumulate.compute_at(tiled, ni);
    if (projectionNorm) {
      // The sums stored whole; each group's scale by one thread per token
      // (a serial sum: decode-sized, unmeasured); the epilogue elementwise.
      tiled.compute_root();
      for (GroupScale &group : groupScales) {
        group.scale.compute_root().gpu_tile(m, mo, mi, 32,
                                            TailStrategy::GuardWithIf);
        group.squareLanes.compute_at(group.scale, mi);
      }
      output.gpu_tile(n, m, no, mo, ni, mi, 64, 4, TailStrategy::GuardWithIf);
    } else if (qkNorm) { // per thread: its head's scale (redundant, but local)
      headScale.compute_at(output, ni);
    }
    if (gated)
      gatedInput.compute_root().gpu_tile(k, m, no, mo, ni, mi, 64, 4,
                                         TailStrategy::GuardWithIf);
    return finish();
  }
  // The activation and residual stages, when there are any, are inlined into
  // the store of each register tile.
  // Register tiles of tileVectors vectors of output features x tileRows
  // tokens, accumulated over all input features.
  // Measured (bench/README.md): 57-77% of the fp32 FMA peak at 512 tokens;
  // one token streams W at about half of STREAM triad. K blocking took
  // 512 x 11008 -> 4096 from 94 to 125 GFLOP/s (the 4096-wide rate).
  const TailStrategy guard = TailStrategy::GuardWithIf;
  Var ni("ni"), mi("mi"), no("no"), mo("mo");
  // The register-tiled stage: the output, or the stored sums a
  // projection-scope QK-norm reads whole.
  Func tiled = projectionNorm ? sum : output;
  if (projectionNorm) {
    tiled.compute_root();
    // The epilogue: per token, the groups' scales, then every feature (its
    // RoPE angles' sines and cosines are most of its time). Prompts split
    // the tokens among the threads, a decode step the features: on one
    // thread it cost the step 19% (Zen 5, Qwen3-0.6B's QKV), split 8%.
    Var eo("eo"), ei("ei");
    output.split(n, eo, ei, tileN, guard).vectorize(ei, vec, guard);
    if (s.tileRows > 1)
      output.parallel(m, 8, guard);
    else
      output.parallel(eo);
    for (GroupScale &group : groupScales) {
      group.scale.compute_at(output, m);
      Var lane = group.squareLanes.args()[0];
      group.squareLanes.compute_at(output, m).vectorize(lane, group.lanes);
      group.squareLanes.update().vectorize(lane, group.lanes);
    }
  }
  // One task per tileN output features: its slice of W (inFeatures x tileN)
  // stays in L2 while every token tile passes over it.
  tiled.split(n, no, ni, tileN, guard)
      .split(m, mo, mi, s.tileRows, guard)
      .reorder(ni, mi, mo, no)
      .vectorize(ni, vec, guard);
  // Where a task's tile is computed: per (token tile, feature tile). The
  // grouped expert variant's rows read different experts' W: a task per row
  // streams its expert's panels from first to last (one contiguous run of
  // memory). One call for a decode step's 8 experts where a call per expert
  // woke the thread pool 8 times; tasks of (row, feature tile) pairs, which
  // hop between experts, measured up to 1.75x slower (bench/README.md).
  Var tileLoop = mo;
  if (grouped) {
    tiled.reorder(ni, mi, no, mo).parallel(mo);
    tileLoop = no;
  }
  // A one-row (decode) product of a small matrix is a few microseconds of
  // work, less than waking a worker thread: measured in the translator
  // (d_model 128, matrices up to 128 x 512), a third of the time went to the
  // thread pool's hand-offs. From 2^17 weights on (256 KiB of bf16) one
  // core's stream is the limit: a mixture's expert GEMVs (1024 x 768 and
  // 384 x 1024) ran serially below 2^20 and decoded at 34% of the read
  // bandwidth (bench/README.md, session 28).
  const bool smallGemv = s.tileRows == 1 && int64_t(in) * out < (1 << 17);
  if (!smallGemv && !grouped)
    tiled.parallel(no);
  if (amx) {
    // Where the CPU has AMX: the extern stage computes each task's tileN
    // features for all tokens (its panels re-paired once), X in bf16 once
    // per call; the epilogue as above. Elsewhere the select takes the
    // register tiles scheduled below, never the extern.
    tiled.specialize(amxReady);
    amxProduct.compute_at(tiled, no);
    amxInput.compute_root()
        .parallel(m, 8, TailStrategy::GuardWithIf)
        .vectorize(k, vec, guard);
  }
  // A register tile of `f`: tilePanels whole panels (P features, in
  // vectors) x tileRows tokens, constant extents (reads are clamped
  // above); unrollTile makes one of f's stages that tile, registerTile
  // both, the update reduced over `r` innermost.
  auto unrollTile = [&](Stage stage) {
    stage.vectorize(p, vec).unroll(p).unroll(q).unroll(m);
  };
  auto boundTile = [&](Func &f) -> Func & {
    return f.bound_extent(p, P)
        .bound_extent(q, tilePanels)
        .bound_extent(m, s.tileRows)
        .reorder(p, q, m);
  };
  auto registerTile = [&](Func &f, RVar r) {
    unrollTile(boundTile(f));
    unrollTile(f.update().reorder(p, q, m, r));
  };
  if (int8 || int4) {
    // Per block, the int32 dot products of a register tile, scaled into
    // the fp32 tile (in registers or L1) once per block.
    accumulate.compute_at(tiled, tileLoop);
    registerTile(accumulate, rb);
    blockDot.compute_at(accumulate, rb);
    unrollTile(boundTile(blockDot));
    // Pair members and features together: the products of a 32-lane
    // vector summed in pairs, what vpdpwssd / vpmaddwd compute. int4:
    // the four nibbles of a row's words, unrolled, each unpacked once for
    // every token of the tile.
    if (int8) {
      unrollTile(blockDot.update()
                     .reorder(rd.x, p, q, m, rd.y)
                     .atomic()
                     .vectorize(rd.x));
    } else if (int8Inputs) {
      // A lane's four bytes and its features together: vpdpbusd, both
      // nibble halves of a loaded row unrolled.
      unrollTile(blockDot.update()
                     .reorder(rv.x, p, q, m, rv.y, rv.z)
                     .atomic()
                     .vectorize(rv.x)
                     .unroll(rv.y));
    } else {
      blockDot.bound_extent(chain, chains).unroll(chain);
      unrollTile(blockDot.update()
                     .reorder(rn.x, p, q, m, chain, rn.y, rn.z)
                     .atomic()
                     .vectorize(rn.x)
                     .unroll(chain)
                     .unroll(rn.y));
    }
    if (int4)
      inputSum.compute_root();
    inputScale.compute_root();
    if (!int8Inputs)
      input16.compute_root()
          .parallel(m, 8, TailStrategy::GuardWithIf)
          .vectorize(k, vec, guard);
    else
      inputBytes.compute_root()
          .parallel(m, 8, TailStrategy::GuardWithIf)
          .vectorize(k, 4 * vec, guard);
  } else if (kBlock) {
    // All of the task's tokens x tileN in L2; per block, per token tile,
    // a register tile of the block's partial sums added in.
    Var mo2("mo2"), mi2("mi2");
    accumulate.compute_at(tiled, no)
        .bound_extent(p, P)
        .bound_extent(q, tilePanels)
        .vectorize(p, vec);
    accumulate.update()
        .split(m, mo2, mi2, s.tileRows, guard)
        .reorder(p, q, mi2, mo2, rkb)
        .vectorize(p, vec)
        .unroll(p)
        .unroll(q)
        .unroll(mi2);
    partial.compute_at(accumulate, mo2);
    registerTile(partial, rki);
  } else {
    accumulate.compute_at(tiled, tileLoop);
    registerTile(accumulate, rk);
  }
  if (qkNorm && !projectionNorm) {
    // Per token tile, after its products: the scales of the tile's heads
    // (tiles hold whole heads), squares summed a vector of lanes at a time.
    headScale.compute_at(tiled, mo);
    const int lanes = std::gcd(headDim, 16);
    Var lane = headSquareLanes.args()[0];
    headSquareLanes.compute_at(tiled, mo).vectorize(lane, lanes);
    headSquareLanes.update().vectorize(lane, lanes);
    // Prompt tiles only: a one-row product reads each weight once anyway,
    // and the extra stage cost a decode step 5% (Zen 5).
    if (s.tileRows > 1)
      featureWeightStage.compute_root().vectorize(
          featureWeightStage.args()[0], vec, guard);
  }
  // The gate once per input element, not once per output tile.
  if (gated)
    gatedInput.compute_root()
        .parallel(m, 8, TailStrategy::GuardWithIf)
        .vectorize(k, vec, guard);

  return finish();
}

} // namespace attn
