//===- AttnBench.cpp - attnc kernels against the machine's roofline -------===//
//
// attn-bench JIT-compiles each kernel family from schedules/ (the same
// pipelines attnc compiles ahead of time) for named shapes and reports, per
// benchmark, as user counters:
//   GFLOPS    4·B·Hq·Sq·Skv·D per second (halved for causal masks)
//   GBps      bytes of K and V read per second
//   peak_pct  GFLOPS / the fp32 FMA peak measured at start-up
//   bw_pct    GBps / the STREAM-triad bandwidth measured at start-up
// Each fused attention kernel has an unfused baseline beside it (S = Q·Kᵀ,
// softmax and P·V as three whole-tensor passes), for the ratio. The rest of
// a block follows: projections with the epilogues attnc fuses (bias, GELU,
// RoPE on a fused QKV, SwiGLU gate + residual on a down projection; GFLOPS
// 2·T·in·out, GBps the weight), and norms and the embedding gather (GBps:
// bytes read and written).
//
// Usage: attn-bench [--benchmark_filter=REGEX] [google benchmark flags]
//
//===----------------------------------------------------------------------===//

#include "CallTimer.h"
#include "attn/schedules/Roofline.h"

#include "attn/runtime/KernelTemporaries.h"
#include "attn/runtime/DType.h"
#include "attn/runtime/PoolAllocator.h"
#include "attn/schedules/AmxLinear.h"
#include "attn/schedules/Pipelines.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

using namespace Halide;
using attn::DType;

namespace {

attn::Roofline gRoofline;
Target gTarget;

struct PrefillShape {
  int queryHeads, kvHeads, headDim, length;
  bool causal;
  attn::SdpaCompute compute = attn::SdpaCompute::F32;
  bool sinks = false; ///< gpt-oss's sink logits (against none: their cost)
};

/// Sink logits for `heads` heads, around a row's scores.
Buffer<float> sinkLogits(int heads) {
  Buffer<float> sinks(heads);
  sinks.for_each_element([&](int h) { sinks(h) = 0.5f * float(h % 4); });
  return sinks;
}

/// Q, K, V, O of one shape, filled with seeded uniform values.
struct Tensors {
  Buffer<float> query, key, value, output;
  Tensors(const PrefillShape &s, int qLen, int kvLen)
      : query(s.headDim, s.queryHeads, qLen, 1),
        key(s.headDim, s.kvHeads, kvLen, 1),
        value(s.headDim, s.kvHeads, kvLen, 1),
        output(s.headDim, s.queryHeads, qLen, 1) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (Buffer<float> *buffer : {&query, &key, &value})
      buffer->for_each_value([&](float &x) { x = uniform(rng); });
  }
};

/// Runs `body` for the benchmark's iterations and sets the rate counters
/// against the machine's roofline.
template <class Body>
void timeKernel(benchmark::State &state, double flops, double kvBytes,
                Body body) {
  attn::bench::timeCalls(state, flops, kvBytes,
                         {gRoofline.fmaGflops, gRoofline.triadGBps}, body);
}

/// JIT-compiles `pipeline` for gTarget, its temporaries allocated as a
/// model library's are (KernelTemporaries.h), so that times compare.
void compileForBench(Pipeline &pipeline) {
  pipeline.jit_handlers().custom_malloc = [](JITUserContext *, size_t bytes) {
    return attn::runtime::allocateKernelTemporary(nullptr, bytes);
  };
  pipeline.jit_handlers().custom_free = [](JITUserContext *, void *block) {
    attn::runtime::freeKernelTemporary(nullptr, block);
  };
  pipeline.compile_jit(gTarget);
}

double attentionFlops(const PrefillShape &s, double qLen, double kvLen) {
  double flops = 4.0 * s.queryHeads * qLen * kvLen * s.headDim;
  return s.causal ? flops / 2 : flops;
}

void fusedPrefill(benchmark::State &state, PrefillShape s) {
  attn::SdpaSpec spec;
  spec.functionName = "bench";
  spec.numQueryHeads = s.queryHeads;
  spec.numKvHeads = s.kvHeads;
  spec.headDim = s.headDim;
  spec.causal = s.causal;
  spec.scale = 1.0f / std::sqrt(float(s.headDim));
  spec.compute = s.compute;
  spec.sinks = s.sinks;
  spec.schedule = attn::defaultSdpaSchedule(s.headDim, s.compute);
  // ATTN_BENCH_SCHEDULE=queryBlock,kvChunk,qkTileKeys,pvTileRows overrides
  // the default schedule (for exploring by hand), on every CPU vendor.
  if (const char *text = std::getenv("ATTN_BENCH_SCHEDULE")) {
    std::sscanf(text, "%d,%d,%d,%d", &spec.schedule.queryBlock,
                &spec.schedule.kvChunk, &spec.schedule.qkTileKeys,
                &spec.schedule.pvTileRows);
    spec.schedule.intelQkTile = {};
  }
  attn::KernelPipeline kernel = attn::buildSdpaPipeline(spec, gTarget);
  compileForBench(kernel.pipeline);
  Tensors t(s, s.length, s.length);
  ParamMap params;
  params.set(kernel.inputs[0], t.query);
  params.set(kernel.inputs[1], t.key);
  params.set(kernel.inputs[2], t.value);
  Buffer<float> sinks = sinkLogits(s.queryHeads);
  if (s.sinks)
    params.set(kernel.inputs[3], sinks);
  double kvBytes = 2.0 * s.kvHeads * s.length * s.headDim * 4;
  timeKernel(state, attentionFlops(s, s.length, s.length), kvBytes,
             [&] { kernel.pipeline.realize(t.output, gTarget, params); });
}

/// Three whole-tensor passes, as an eager framework runs them: the full
/// Hq x S x S score matrix is written to and read back from memory.
void unfusedPrefill(benchmark::State &state, PrefillShape s) {
  ImageParam q(Float(32), 4, "q"), k(Float(32), 4, "k"), v(Float(32), 4, "v");
  Var d, h, i, j, b;
  const int group = s.queryHeads / s.kvHeads;
  RDom rd(0, s.headDim), rj(0, s.length);
  // K transposed once so the score pass vectorizes over keys with unit
  // stride; V is already unit-stride along d for the P·V pass.
  Func keyT("keyT"), scores("scores"), logits("logits"), rowMax("rowMax"),
      expd("expd"), rowSum("rowSum"), weighted("weighted"), out("out");
  keyT(j, d, h, b) = k(d, h, j, b);
  scores(j, i, h, b) = 0.0f;
  scores(j, i, h, b) += q(rd, h, i, b) * keyT(j, rd, h / group, b);
  logits(j, i, h, b) =
      scores(j, i, h, b) * (1.0f / std::sqrt(float(s.headDim))) +
      (s.causal ? select(j <= i, 0.0f, -1e30f) : 0.0f);
  rowMax(i, h, b) = maximum(logits(rj, i, h, b));
  expd(j, i, h, b) = exp(logits(j, i, h, b) - rowMax(i, h, b));
  rowSum(i, h, b) = sum(expd(rj, i, h, b));
  weighted(d, h, i, b) = 0.0f;
  weighted(d, h, i, b) += expd(rj, i, h, b) * v(d, h / group, rj, b);
  out(d, h, i, b) = weighted(d, h, i, b) / rowSum(i, h, b);

  const int vec = gTarget.natural_vector_size<float>();
  keyT.compute_root().parallel(h).vectorize(j, vec);
  scores.compute_root().parallel(h).vectorize(j, vec);
  scores.update().reorder(j, rd, i).parallel(h).vectorize(j, vec);
  expd.compute_root().parallel(h).vectorize(j, vec);
  for (Func f : {rowMax, rowSum})
    f.compute_root().parallel(h).vectorize(i, vec);
  weighted.compute_root().parallel(i).vectorize(d, vec);
  weighted.update().reorder(d, rj, h).parallel(i).vectorize(d, vec);
  out.parallel(i).vectorize(d, vec);
  Pipeline pipeline(out);
  compileForBench(pipeline);
  Tensors t(s, s.length, s.length);
  ParamMap params;
  params.set(q, t.query);
  params.set(k, t.key);
  params.set(v, t.value);
  double kvBytes = 2.0 * s.kvHeads * s.length * s.headDim * 4;
  // The baseline computes every masked score too; its FLOPs are counted like
  // the fused kernel's, so the GFLOPS ratio is the speed ratio.
  timeKernel(state, attentionFlops(s, s.length, s.length), kvBytes,
             [&] { pipeline.realize(t.output, gTarget, params); });
}

void registerPrefill() {
  for (int length : {512, 2048, 8192})
    for (int headDim : {64, 128, 256})
      for (auto [hq, hkv] : {std::pair{32, 32}, std::pair{32, 8}})
        for (bool causal : {false, true}) {
          PrefillShape s{hq, hkv, headDim, length, causal};
          char name[128];
          std::snprintf(name, sizeof name, "prefill/H%d_KV%d_D%d_S%d_%s", hq,
                        hkv, headDim, length, causal ? "causal" : "full");
          benchmark::RegisterBenchmark(name, fusedPrefill, s)
              ->UseManualTime()
              ->Unit(benchmark::kMillisecond);
          // bf16 products (AVX512-BF16 where the host has it); GFLOPS and
          // peak_pct still against the fp32 FMA peak.
          PrefillShape bf16Shape = s;
          bf16Shape.compute = attn::SdpaCompute::BF16;
          benchmark::RegisterBenchmark((std::string(name) + "/bf16").c_str(),
                                       fusedPrefill, bf16Shape)
              ->UseManualTime()
              ->Unit(benchmark::kMillisecond);
          // The baseline's score matrix must fit in memory comfortably.
          if (double(hq) * length * length * 4 <= 1.1e9)
            benchmark::RegisterBenchmark(
                (std::string(name) + "/unfused_baseline").c_str(),
                unfusedPrefill, s)
                ->UseManualTime()
                ->Unit(benchmark::kMillisecond);
        }
  // gpt-oss's attention (64 query, 8 KV heads of 64; sliding layers aside)
  // with and without sinks: their cost.
  for (bool sinks : {false, true}) {
    PrefillShape s{64, 8, 64, 2048, true, attn::SdpaCompute::BF16, sinks};
    benchmark::RegisterBenchmark(
        sinks ? "prefill/H64_KV8_D64_S2048_causal/bf16/sinks"
              : "prefill/H64_KV8_D64_S2048_causal/bf16/no_sinks",
        fusedPrefill, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

struct DecodeShape {
  int batch, kvLength, pageSize; // pageSize == kvLength: contiguous cache
  attn::DType element = attn::DType::F32;
  bool sinks = false; ///< gpt-oss's sink logits (against none: their cost)
  /// A sliding window of keys (0: none), over a pool holding only the pages
  /// it spans, the earlier ones released, as the runtime's KvCache keeps a
  /// window layer's: its time should not grow with kvLength.
  int window = 0;
  /// Latent attention's shape (DeepSeek-V2-Lite's: 16 heads over one key
  /// head of rank 512 + rope 64 channels) whose values are its keys: one
  /// pool read as both. Else GQA 32 query / 8 KV heads of 128.
  bool latent = false;
};

/// One new token per sequence (GQA 32 query / 8 KV heads, head size 128,
/// or a latent layer's shape) over a cache whose pages are handed out in
/// shuffled order.
void fusedDecode(benchmark::State &state, DecodeShape s) {
  const int hq = s.latent ? 16 : 32, hkv = s.latent ? 1 : 8,
            dim = s.latent ? 576 : 128;
  attn::DecodeSpec spec;
  spec.functionName = "bench";
  spec.numQueryHeads = hq;
  spec.numKvHeads = hkv;
  spec.headDim = dim;
  spec.pageSize = s.pageSize;
  spec.cacheElement = s.element;
  spec.sinks = s.sinks;
  spec.window = s.window;
  spec.causal = s.window > 0;
  spec.scale = 1.0f / std::sqrt(float(s.latent ? 192 : dim));
  if (const char *text = std::getenv("ATTN_BENCH_DECODE_SPLIT"))
    spec.schedule.splitKeys = std::atoi(text);
  attn::KernelPipeline kernel = attn::buildDecodePipeline(spec, gTarget);
  compileForBench(kernel.pipeline);

  const int pagesPerSequence = (s.kvLength + s.pageSize - 1) / s.pageSize;
  // Pages a sequence holds; those before them were released.
  const int heldPages = int(
      attn::kvPagesPerSequence(s.kvLength, s.pageSize, s.window));
  const int released = pagesPerSequence - heldPages;
  const int numPages = heldPages * s.batch;
  Buffer<float> query(dim, hq, 1, s.batch), output(dim, hq, 1, s.batch);
  const bool f32 = s.element == attn::DType::F32;
  const bool int8 = s.element == attn::DType::I8;
  Type element = f32                             ? Float(32)
                 : int8                          ? Int(8)
                 : s.element == attn::DType::F16 ? Float(16)
                                                 : BFloat(16);
  // Pools as the runtime's KvCache allocates them: on transparent huge
  // pages (runtime/include/attn/runtime/PoolAllocator.h).
  const size_t poolBytes =
      size_t(dim) * hkv * s.pageSize * numPages * element.bytes();
  attn::runtime::PoolAllocator<uint8_t> allocator;
  std::unique_ptr<uint8_t, std::function<void(uint8_t *)>> keyPool(
      allocator.allocate(poolBytes),
      [&](uint8_t *p) { allocator.deallocate(p, poolBytes); }),
      valuePool(allocator.allocate(poolBytes),
                [&](uint8_t *p) { allocator.deallocate(p, poolBytes); });
  Buffer<> keys(element, keyPool.get(), dim, hkv, s.pageSize, numPages),
      values(element, valuePool.get(), dim, hkv, s.pageSize, numPages);
  Buffer<float> keyScales(hkv, s.pageSize, numPages),
      valueScales(hkv, s.pageSize, numPages);
  keyScales.fill(1.0f / 127);
  valueScales.fill(1.0f / 127);
  // As the runtime calls a window layer's kernel: the table and length
  // from the first page of the window on (ModelRunner.cpp).
  const int firstPage =
      s.window ? std::max(0, s.kvLength - s.window) / s.pageSize : 0;
  Buffer<int32_t> table(pagesPerSequence - firstPage, s.batch),
      lengths(s.batch);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  query.for_each_value([&](float &x) { x = uniform(rng); });
  // Values of a cache's magnitude, all normal numbers: f32 as uniform
  // values in [-1, 1) (random 16-bit halves, as this filled them before,
  // made one f32 element in 128 subnormal and many more products of them,
  // which Intel cores stall on: 6-9x the time there), f16 / bf16 as bit
  // patterns of normal numbers (near 2^-3 / 2^-31), int8 as any byte.
  for (Buffer<> *buffer : {&keys, &values}) {
    if (f32) {
      auto *values = reinterpret_cast<float *>(buffer->data());
      for (size_t x = 0; x < buffer->number_of_elements(); x++)
        values[x] = uniform(rng);
      continue;
    }
    auto *bytes = reinterpret_cast<uint16_t *>(buffer->data());
    for (size_t x = 0; x < buffer->size_in_bytes() / 2; x++)
      bytes[x] = int8 ? uint16_t(rng()) : uint16_t(0x3000 | (rng() & 0x3ff));
  }
  std::vector<int32_t> order(numPages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int b = 0; b < s.batch; b++) {
    lengths(b) = s.kvLength - firstPage * s.pageSize;
    for (int p = firstPage; p < pagesPerSequence; p++)
      table(p - firstPage, b) = order[b * heldPages + p - released];
  }
  ParamMap params;
  params.set(kernel.inputs[0], query);
  size_t next = 1;
  params.set(kernel.inputs[next++], keys);
  params.set(kernel.inputs[next++], s.latent ? keys : values);
  if (int8) {
    params.set(kernel.inputs[next++], keyScales);
    params.set(kernel.inputs[next++], s.latent ? keyScales : valueScales);
  }
  params.set(kernel.inputs[next++], table);
  params.set(kernel.inputs[next++], lengths);
  Buffer<float> sinks = sinkLogits(hq);
  if (s.sinks)
    params.set(kernel.inputs[next++], sinks);
  // The keys each new token attends to.
  const double attended =
      s.window ? std::min(s.window, s.kvLength) : s.kvLength;
  double flops = 4.0 * s.batch * hq * attended * dim;
  // Bytes the cache holds: elements (plus an i8 row's scale).
  double rowBytes = dim * element.bytes() + (int8 ? 4 : 0);
  double kvBytes = (s.latent ? 1.0 : 2.0) * s.batch * hkv * attended * rowBytes;
  timeKernel(state, flops, kvBytes,
             [&] { kernel.pipeline.realize(output, gTarget, params); });
}

void registerDecode() {
  const DecodeShape shapes[] = {{1, 4096, 4096},
                                {1, 32768, 32768},
                                {1, 131072, 131072},
                                {1, 131072, 16},
                                {16, 4096, 4096},
                                {16, 16384, 16384},
                                {16, 32768, 32768},
                                {16, 32768, 16},
                                {1, 131072, 131072, DType::BF16},
                                {1, 131072, 131072, DType::I8},
                                {1, 131072, 16, DType::F16},
                                {1, 131072, 16, DType::BF16},
                                {1, 131072, 16, DType::I8},
                                {16, 32768, 16, DType::F16},
                                {16, 32768, 16, DType::I8},
                                // With sinks (against the same without).
                                {1, 32768, 16, DType::BF16},
                                {1, 32768, 16, DType::BF16, true},
                                // Gemma's local layers: a window of 512
                                // keys at 4K, 32K and 128K of context.
                                {1, 4096, 16, DType::BF16, false, 512},
                                {1, 32768, 16, DType::BF16, false, 512},
                                {1, 131072, 16, DType::BF16, false, 512},
                                // Latent attention: 16 heads over one key
                                // head of 576, values = keys, bf16 rows.
                                {1, 4096, 16, DType::BF16, false, 0, true},
                                {1, 32768, 16, DType::BF16, false, 0, true}};
  for (const DecodeShape &s : shapes) {
    const char *element = attn::dtypeName(s.element);
    std::string layout = s.pageSize == s.kvLength
                             ? "contiguous"
                             : "page" + std::to_string(s.pageSize);
    char name[128];
    std::string window =
        s.window ? "_w" + std::to_string(s.window) : std::string();
    std::snprintf(name, sizeof name, "decode/%s/B%d_KV%d_%s_%s%s%s",
                  s.latent ? "H16_KV1_D576_latent" : "H32_KV8_D128", s.batch,
                  s.kvLength, layout.c_str(), element,
                  s.sinks ? "_sinks" : "", window.c_str());
    benchmark::RegisterBenchmark(name, fusedDecode, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

struct LinearShape {
  int tokens, in, out;
  /// bias, gelu, swiglu_down, qkv_rope; qkv_rope_qknorm: the same with
  /// QK-norm of the rotated heads (against qkv_rope: the norm's cost);
  /// qkv_rope_qknorm_projection: QK-norm over all query heads and all key
  /// heads (OLMo 2's);
  /// head_argmax: an output head with its greedy token (against `bias` of
  /// the same shape: the argmax's cost)
  const char *variant = "bias";
  /// W's element type (F32, F16, BF16, I8): a decode step streams W.
  DType weights = DType::F32;
};

/// A projection with one of the epilogues attnc fuses: GFLOPS =
/// 2·tokens·in·out; GBps counts the weight, read once per call (the whole
/// traffic of a one-token decode step), and bw_pct compares it with the
/// machine's read bandwidth.
void linear(benchmark::State &state, LinearShape s) {
  attn::LinearSpec spec;
  spec.functionName = "bench";
  spec.inFeatures = s.in;
  spec.outFeatures = s.out;
  spec.bias = std::string(s.variant) != "swiglu_down";
  std::string variant = s.variant;
  if (variant == "gelu")
    spec.activation = attn::Activation::GeluTanh;
  if (variant == "swiglu_down") { // input [tokens][2·in]: gate | up
    spec.inputGate = attn::Activation::Silu;
    spec.residual = true;
  }
  if (variant.rfind("qkv_rope", 0) == 0) { // Q and K heads of 128 rotate
    spec.ropeTheta = 10000.0f;
    spec.ropeHeadDim = 128;
    spec.ropeHeads = (s.out - s.out / 6) / 128; // Q (4/6) and K (1/6)
    if (variant.rfind("qkv_rope_qknorm", 0) == 0)
      spec.qkNormEps = 1e-6f;
    if (variant == "qkv_rope_qknorm_projection")
      spec.qkNormScope = attn::QkNormScope::Projection;
  }
  spec.argmax = variant == "head_argmax";
  spec.weightElement = s.weights;
  // int4: GPTQ's and AWQ's usual group, attnc's default.
  spec.weightGroup = s.weights == DType::I4 ? 128 : 0;
  // What the runtime calls for one or two tokens: attnc's `_gemv` variant.
  if (s.tokens <= 2)
    spec.schedule.tileRows = 1;
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, gTarget);
  compileForBench(kernel.pipeline);
  const int inColumns =
      spec.inputGate != attn::Activation::None ? 2 * s.in : s.in;
  Buffer<float> input(inColumns, s.tokens), weight(s.out, s.in), bias(s.out),
      residual(s.out, s.tokens), output(s.out, s.tokens);
  Buffer<int32_t> positions(s.tokens), best(s.tokens);
  Buffer<float> qkNormWeight(std::max(spec.ropeHeads * spec.ropeHeadDim, 1));
  qkNormWeight.fill(1.0f);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Buffer<float> *buffer : {&input, &weight, &bias, &residual})
    buffer->for_each_value([&](float &x) { x = uniform(rng); });
  positions.for_each_element([&](int t) { positions(t) = t; });
  // In panels, in the weight dtype (rounded to nearest even).
  // int8: with a scale per output feature; int4 per group and feature.
  Buffer<float> scales;
  Buffer<> packed = attn::packLinearWeights(
      weight.data(), s.in, s.out, s.weights, &scales, spec.weightGroup);
  const double weightBytes =
      double(attn::linearWeightBytes(s.weights, size_t(s.in), size_t(s.out),
                                     size_t(spec.weightGroup))) /
      (double(s.in) * s.out);
  ParamMap params;
  size_t next = 0;
  params.set(kernel.inputs[next++], input);
  params.set(kernel.inputs[next++], packed);
  if (s.weights == DType::I8 || s.weights == DType::I4)
    params.set(kernel.inputs[next++], scales);
  if (spec.bias)
    params.set(kernel.inputs[next++], bias);
  if (spec.ropeTheta > 0)
    params.set(kernel.inputs[next++], positions);
  if (spec.qkNormEps > 0)
    params.set(kernel.inputs[next++], qkNormWeight);
  if (spec.residual)
    params.set(kernel.inputs[next++], residual);
  Realization outputs =
      spec.argmax ? Realization({output, best}) : Realization({output});
  // W is only read: bw_pct against the read bandwidth.
  attn::bench::timeCalls(
      state, 2.0 * s.tokens * s.in * s.out, weightBytes * s.in * s.out,
      {gRoofline.fmaGflops, gRoofline.readGBps},
      [&] { kernel.pipeline.realize(outputs, gTarget, params); });
}

/// A decode step's experts of one layer: `chosen` of `experts` matrices
/// (in -> out each, stacked as the runtime stacks them) applied to one
/// token, either as a call of the one-row kernel per chosen expert (on a
/// view of its panels: what the runtime did first) or as one call of the
/// grouped variant, row j reading expert index[j]'s (schedules/Linear.cpp).
/// The stack (128 experts: 200 MB bf16) is far beyond the LLC, as a real
/// mixture's is; the chosen experts change every call, so each call reads
/// its experts from memory. GBps: the chosen experts' bytes.
struct ExpertShape {
  int in, out, experts, chosen;
  bool gated; ///< a down projection: input SiLU(gate)·up
  DType weights;
  bool grouped;
  /// gpt-oss's gated product (gate clamped, up + 1): 0 for SwiGLU's.
  float gateLimit = 0;
};

void expertDecode(benchmark::State &state, ExpertShape s) {
  attn::LinearSpec spec;
  spec.functionName = "bench";
  spec.inFeatures = s.in;
  spec.outFeatures = s.out;
  spec.inputGate = s.gated ? attn::Activation::Silu : attn::Activation::None;
  spec.weightElement = s.weights;
  spec.weightGroup = s.weights == DType::I4      ? 128
                     : s.weights == DType::MXFP4 ? int(attn::kMxBlock)
                                                 : 0;
  if (s.gateLimit > 0) {
    spec.gateAlpha = 1.702f;
    spec.gateLimit = s.gateLimit;
  }
  spec.experts = s.experts;
  spec.groupedExperts = s.grouped;
  spec.schedule.tileRows = 1;
  attn::KernelPipeline kernel = attn::buildLinearPipeline(spec, gTarget);
  compileForBench(kernel.pipeline);
  const int stacked = s.experts * s.out, width = s.gated ? 2 * s.in : s.in;
  const int panels = s.out / attn::weightPanel(s.weights);
  Buffer<float> input(width, s.chosen), weight(stacked, s.in),
      output(s.out, s.chosen);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Buffer<float> *buffer : {&input, &weight})
    buffer->for_each_value([&](float &x) { x = uniform(rng); });
  Buffer<float> scales;
  Buffer<uint8_t> exponents; // mxfp4's
  Buffer<> packed =
      attn::packLinearWeights(weight.data(), s.in, stacked, s.weights, &scales,
                              spec.weightGroup, &exponents);
  const bool int4 = s.weights == DType::I4, mx = s.weights == DType::MXFP4;
  // Each call a fresh draw of distinct experts, cycling through 64 draws.
  std::vector<std::vector<int32_t>> draws(64);
  for (std::vector<int32_t> &draw : draws) {
    std::vector<int32_t> all(size_t(s.experts));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    draw.assign(all.begin(), all.begin() + s.chosen);
  }
  Buffer<int32_t> index(s.chosen);
  size_t call = 0;
  const double bytes =
      double(s.chosen) * double(attn::linearWeightBytes(
                             s.weights, size_t(s.in), size_t(s.out),
                             size_t(spec.weightGroup)));
  // A view of expert e's panels (and int4 scales), starting at 0 as the
  // kernel requires.
  auto view = [&](const Buffer<> &stack, int e) {
    Halide::Runtime::Buffer<void> one =
        stack.get()->cropped(2, e * panels, panels);
    one.translate(2, -e * panels);
    return Buffer<>(std::move(one));
  };
  // Row j of `rows` as a one-row buffer starting at 0.
  auto rowOf = [](Buffer<float> &rows, int j) {
    Halide::Runtime::Buffer<float> one = rows.get()->cropped(1, j, 1);
    one.translate(1, -j);
    return Buffer<float>(std::move(one));
  };
  attn::bench::timeCalls(
      state, 2.0 * s.chosen * s.in * s.out, bytes,
      {gRoofline.fmaGflops, gRoofline.readGBps}, [&] {
        const std::vector<int32_t> &draw = draws[call++ % draws.size()];
        ParamMap params;
        if (s.grouped) {
          for (int j = 0; j < s.chosen; j++)
            index(j) = draw[size_t(j)];
          size_t next = 0;
          params.set(kernel.inputs[next++], input);
          params.set(kernel.inputs[next++], index);
          params.set(kernel.inputs[next++], packed);
          if (int4)
            params.set(kernel.inputs[next++], scales);
          if (mx)
            params.set(kernel.inputs[next++], exponents);
          kernel.pipeline.realize(output, gTarget, params);
          return;
        }
        for (int j = 0; j < s.chosen; j++) {
          params.set(kernel.inputs[0], rowOf(input, j));
          params.set(kernel.inputs[1], view(packed, draw[size_t(j)]));
          if (int4)
            params.set(kernel.inputs[2], view(scales, draw[size_t(j)]));
          if (mx)
            params.set(kernel.inputs[2], view(exponents, draw[size_t(j)]));
          Buffer<float> out = rowOf(output, j);
          kernel.pipeline.realize(out, gTarget, params);
        }
      });
}

/// The AMX-BF16 micro-kernel (schedules/AmxLinear.h) alone on a
/// projection's product, without the pipeline around it: X rounded to bf16
/// (rows split among the threads), then panels split among them, one
/// std::thread each per phase (tens of microseconds against a call of
/// milliseconds). The `_wbf16` linear rows time the same product inside
/// the linear kernel. Skipped where the CPU or OS has no AMX.
void amxLinear(benchmark::State &state, LinearShape s) {
  std::string why;
  if (!attn::amx::available(&why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  Buffer<float> input(s.in, s.tokens), weight(s.out, s.in),
      output(s.out, s.tokens);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Buffer<float> *buffer : {&input, &weight})
    buffer->for_each_value([&](float &x) { x = uniform(rng); });
  Buffer<> packed =
      attn::packLinearWeights(weight.data(), s.in, s.out, DType::BF16);
  const int paddedIn = attn::amx::paddedDepth(s.in);
  const int xStride = attn::amx::xRowStride(paddedIn);
  // Halide buffers: 64-byte aligned rows, as in the pipelines (tile loads
  // of unaligned rows take about twice as long).
  Buffer<uint16_t> xb(xStride, attn::amx::paddedTokens(s.tokens));
  xb.fill(0);
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  const int panels = attn::amx::panelCount(s.out);
  std::vector<Buffer<uint32_t>> scratch;
  for (int t = 0; t < threads; t++)
    scratch.emplace_back(int(attn::amx::scratchWords(paddedIn)));
  auto inParallel = [&](auto body) {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; t++)
      workers.emplace_back(body, t);
    for (std::thread &worker : workers)
      worker.join();
  };
  attn::bench::timeCalls(
      state, 2.0 * s.tokens * s.in * s.out, 2.0 * s.in * s.out,
      {gRoofline.fmaGflops, gRoofline.readGBps}, [&] {
        inParallel([&](int t) {
          attn::amx::packTokensBf16(input.data(), s.in, s.tokens * t / threads,
                                    s.tokens * (t + 1) / threads, paddedIn,
                                    xStride, xb.data());
        });
        inParallel([&](int t) {
          const int n0 = 32 * (panels * t / threads),
                    n1 = std::min(s.out, 32 * (panels * (t + 1) / threads));
          attn::amx::linearBf16Block(
              xb.data(), xStride, paddedIn, s.in,
              static_cast<const uint32_t *>(packed.data()), s.tokens, n0, n1,
              scratch[t].data(), output.data() + n0, s.out);
        });
      });
}

void registerLinear() {
  const LinearShape shapes[] = {{1, 4096, 4096},
                                {16, 4096, 4096},
                                {512, 4096, 4096},
                                {512, 2048, 6144},
                                {512, 4096, 6144},
                                {512, 4096, 6144, "qkv_rope"},
                                {1, 4096, 6144, "qkv_rope"},
                                {512, 4096, 11008, "gelu"},
                                {512, 11008, 4096},
                                {512, 11008, 4096, "swiglu_down"},
                                {1, 11008, 4096, "swiglu_down"},
                                {1, 2048, 32000},
                                {1, 2048, 32000, "head_argmax"},
                                {16, 2048, 32000},
                                {16, 2048, 32000, "head_argmax"},
                                // Narrow weights: time should follow bytes
                                // for one token, and not lose at 512.
                                {1, 4096, 4096, "bias", DType::BF16},
                                {1, 4096, 4096, "bias", DType::F16},
                                {1, 4096, 4096, "bias", DType::I8},
                                {16, 4096, 4096, "bias", DType::BF16},
                                {512, 4096, 4096, "bias", DType::BF16},
                                {512, 4096, 4096, "bias", DType::I8},
                                {1, 4096, 4096, "bias", DType::I4},
                                {16, 4096, 4096, "bias", DType::I4},
                                {512, 4096, 4096, "bias", DType::I4},
                                {1, 11008, 4096, "swiglu_down", DType::BF16},
                                {512, 11008, 4096, "swiglu_down", DType::BF16},
                                {1, 2048, 32000, "head_argmax", DType::BF16},
                                // Llama-3-8B's FFN up, far beyond the LLC.
                                {1, 4096, 14336},
                                {1, 4096, 14336, "bias", DType::BF16},
                                {1, 4096, 14336, "bias", DType::I8},
                                {1, 4096, 14336, "bias", DType::I4},
                                // TinyLlama-1.1B's projections, one token.
                                {1, 2048, 2560, "qkv_rope"},
                                {1, 2048, 2560, "qkv_rope", DType::BF16},
                                {1, 2048, 11264},
                                {1, 2048, 11264, "bias", DType::BF16},
                                {1, 5632, 2048, "swiglu_down"},
                                {1, 5632, 2048, "swiglu_down", DType::BF16},
                                // Qwen3-0.6B's QKV (16 + 8 + 8 heads of
                                // 128 over 1024), with and without QK-norm
                                // per head and over the projections.
                                {512, 1024, 4096, "qkv_rope", DType::BF16},
                                {512, 1024, 4096, "qkv_rope_qknorm",
                                 DType::BF16},
                                {1, 1024, 4096, "qkv_rope", DType::BF16},
                                {1, 1024, 4096, "qkv_rope_qknorm",
                                 DType::BF16},
                                {512, 1024, 4096, "qkv_rope_qknorm_projection",
                                 DType::BF16},
                                {1, 1024, 4096, "qkv_rope_qknorm_projection",
                                 DType::BF16},
                                // One expert of attn-model-bench's
                                // half-width Qwen3-30B-A3B (gate | up
                                // 1024 -> 2 x 384, down 384 -> 1024): a
                                // 512-token prompt's dense rate, the 32
                                // rows an expert gets of it (8 of 128
                                // experts a token), one decoded token.
                                {512, 1024, 768, "bias", DType::BF16},
                                {32, 1024, 768, "bias", DType::BF16},
                                {1, 1024, 768, "bias", DType::BF16},
                                {512, 384, 1024, "swiglu_down", DType::BF16},
                                {32, 384, 1024, "swiglu_down", DType::BF16},
                                {1, 384, 1024, "swiglu_down", DType::BF16}};
  for (const LinearShape &s : shapes) {
    char name[128];
    const char *weights = s.weights == DType::BF16  ? "_wbf16"
                          : s.weights == DType::F16 ? "_wf16"
                          : s.weights == DType::I8  ? "_wi8"
                          : s.weights == DType::I4  ? "_wi4"
                                                    : "";
    std::snprintf(name, sizeof name, "linear/T%d_in%d_out%d_%s%s", s.tokens,
                  s.in, s.out, s.variant, weights);
    benchmark::RegisterBenchmark(name, linear, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  // attn-model-bench's half-width Qwen3-30B-A3B: 8 of 128 experts, gate |
  // up 1024 -> 2 x 384 and down 384 -> 1024, per call or grouped.
  for (DType weights : {DType::BF16, DType::I4})
    for (bool gated : {false, true})
      for (bool grouped : {false, true}) {
        ExpertShape e{gated ? 384 : 1024, gated ? 1024 : 768, 128, 8,
                      gated, weights, grouped};
        char name[128];
        std::snprintf(name, sizeof name, "experts/T1_%s_8of128_%s_%s",
                      gated ? "down384x1024" : "up1024x768",
                      weights == DType::BF16 ? "wbf16" : "wi4",
                      grouped ? "grouped" : "calls");
        benchmark::RegisterBenchmark(name, expertDecode, e)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
  // gpt-oss-20b's experts, 4 a token: gate | up 2880 -> 2 x 2880 and down
  // 2880 -> 2880 with the clamped SwiGLU, grouped, in bf16, int4 (groups of
  // 128) and MXFP4 as published. 16 experts of its 32 (a 2.1 GB float
  // stack to pack otherwise): the MXFP4 stacks, 141 and 70 MB, are still
  // far beyond the LLC.
  for (DType weights : {DType::BF16, DType::I4, DType::MXFP4})
    for (bool gated : {false, true}) {
      ExpertShape e{2880, gated ? 2880 : 5760, 16, 4, gated, weights, true,
                    gated ? 7.0f : 0.0f};
      char name[128];
      std::snprintf(name, sizeof name, "experts/T1_gptoss_%s_4of16_%s_grouped",
                    gated ? "down2880x2880" : "up2880x5760",
                    weights == DType::BF16 ? "wbf16"
                    : weights == DType::I4 ? "wi4"
                                           : "wmxfp4");
      benchmark::RegisterBenchmark(name, expertDecode, e)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  const LinearShape amxShapes[] = {{16, 4096, 4096},
                                   {512, 4096, 4096},
                                   {512, 11008, 4096},
                                   {512, 2048, 2560},
                                   {512, 2048, 11264}};
  for (const LinearShape &s : amxShapes) {
    char name[128];
    std::snprintf(name, sizeof name, "linear/T%d_in%d_out%d_amx_bf16_product",
                  s.tokens, s.in, s.out);
    benchmark::RegisterBenchmark(name, amxLinear, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

/// Norms and the embedding gather stream memory: GBps counts the bytes read
/// and written (input, output, and for the gather the rows it copies).
void norm(benchmark::State &state, int tokens, attn::NormKind kind) {
  const int dim = 4096;
  attn::NormSpec spec;
  spec.functionName = "bench";
  spec.kind = kind;
  spec.dim = dim;
  attn::KernelPipeline kernel = attn::buildNormPipeline(spec, gTarget);
  compileForBench(kernel.pipeline);
  Buffer<float> input(dim, tokens), weight(dim), bias(dim), output(dim, tokens);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (Buffer<float> *buffer : {&input, &weight, &bias})
    buffer->for_each_value([&](float &x) { x = uniform(rng); });
  ParamMap params;
  params.set(kernel.inputs[0], input);
  params.set(kernel.inputs[1], weight);
  if (kind == attn::NormKind::LayerNorm)
    params.set(kernel.inputs[2], bias);
  timeKernel(state, 0, 2.0 * 4 * dim * tokens,
             [&] { kernel.pipeline.realize(output, gTarget, params); });
}

void embedding(benchmark::State &state, int tokens) {
  const int dim = 4096, vocab = 32000;
  attn::EmbeddingSpec spec;
  spec.functionName = "bench";
  spec.vocabSize = vocab;
  spec.dim = dim;
  spec.positions = attn::PositionKind::Sinusoidal;
  spec.maxPositions = 4096;
  attn::KernelPipeline kernel = attn::buildEmbeddingPipeline(spec, gTarget);
  compileForBench(kernel.pipeline);
  Buffer<int32_t> ids(tokens), positions(tokens);
  Buffer<float> table(dim, vocab), output(dim, tokens);
  std::mt19937 rng(6);
  ids.for_each_element([&](int t) { ids(t) = int32_t(rng() % vocab); });
  positions.for_each_element([&](int t) { positions(t) = t; });
  table.fill(0.5f);
  ParamMap params;
  params.set(kernel.inputs[0], ids);
  params.set(kernel.inputs[1], positions);
  params.set(kernel.inputs[2], table);
  timeKernel(state, 0, 2.0 * 4 * dim * tokens,
             [&] { kernel.pipeline.realize(output, gTarget, params); });
}

void registerBlockKernels() {
  for (int tokens : {1, 512}) {
    for (auto [name, kind] :
         {std::pair{"rms_norm", attn::NormKind::RmsNorm},
          std::pair{"layer_norm", attn::NormKind::LayerNorm}})
      benchmark::RegisterBenchmark(("norm/" + std::string(name) + "_T" +
                                    std::to_string(tokens) + "_d4096")
                                       .c_str(),
                                   norm, tokens, kind)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(
        ("embedding/T" + std::to_string(tokens) + "_v32000_d4096_sinusoidal")
            .c_str(),
        embedding, tokens)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  gTarget = get_jit_target_from_environment();
  const char *threadsEnv = std::getenv("HL_NUM_THREADS");
  int threads = threadsEnv ? std::atoi(threadsEnv)
                           : int(std::thread::hardware_concurrency());
  gRoofline = attn::measureRoofline(threads);
  std::printf("roofline: %d threads, fp32 FMA peak %.1f GFLOP/s, STREAM "
              "triad %.1f GB/s, read %.1f GB/s; Halide target %s\n",
              threads, gRoofline.fmaGflops, gRoofline.triadGBps,
              gRoofline.readGBps, gTarget.to_string().c_str());
  benchmark::AddCustomContext("fma_peak_gflops",
                              std::to_string(gRoofline.fmaGflops));
  benchmark::AddCustomContext("triad_gbps",
                              std::to_string(gRoofline.triadGBps));
  benchmark::AddCustomContext("read_gbps", std::to_string(gRoofline.readGBps));
  benchmark::AddCustomContext("halide_target", gTarget.to_string());
  registerPrefill();
  registerDecode();
  registerLinear();
  registerBlockKernels();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
