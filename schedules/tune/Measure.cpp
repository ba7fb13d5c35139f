//===- Measure.cpp - timing schedule candidates ---------------------------===//

#include "Measure.h"

#include "attn/schedules/Pipelines.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace attn::tune {

using namespace Halide;

struct KernelBench::Buffers {
  // Prefill: query [1][L][Hq][D], key/value [1][L][Hkv][D], key lengths.
  // Decode: query [B][1][Hq][D], pages [P][page][Hkv][D], table, lengths.
  Buffer<float> query, key, value, output;
  Buffer<> keyPages, valuePages;
  Buffer<float> keyScales, valueScales; // I8: [P][page][Hkv]
  Buffer<int32_t> table, lengths;
  Buffer<float> sinks; // [query_heads], for kernels with sinks
};

KernelBench::KernelBench(const TunedKernel &kernel)
    : kernel_(kernel), buffers_(std::make_unique<Buffers>()) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto fill = [&](Buffer<float> &b) {
    b.for_each_value([&](float &x) { x = uniform(rng); });
  };
  Buffers &b = *buffers_;
  const int length = kernel.length;
  const AttentionSettings &settings =
      kernel.prefill ? static_cast<const AttentionSettings &>(kernel.sdpa)
                     : kernel.decode;
  b.sinks = Buffer<float>(std::max(settings.numQueryHeads, 1));
  fill(b.sinks);
  if (kernel.prefill) {
    const SdpaSpec &s = kernel.sdpa;
    b.query = Buffer<float>(s.headDim, s.numQueryHeads, length, 1);
    b.output = Buffer<float>(s.headDim, s.numQueryHeads, length, 1);
    b.key = Buffer<float>(s.headDim, s.numKvHeads, length, 1);
    b.value = Buffer<float>(s.headDim, s.numKvHeads, length, 1);
    b.lengths = Buffer<int32_t>(1);
    b.lengths(0) = length;
    fill(b.query);
    fill(b.key);
    fill(b.value);
    return;
  }
  const DecodeSpec &s = kernel.decode;
  const int pagesPerSequence = (length + s.pageSize - 1) / s.pageSize;
  const int numPages = pagesPerSequence * kernel.batch;
  b.query = Buffer<float>(s.headDim, s.numQueryHeads, 1, kernel.batch);
  b.output = Buffer<float>(s.headDim, s.numQueryHeads, 1, kernel.batch);
  fill(b.query);
  const bool f32 = s.cacheElement == DType::F32;
  const bool int8 = s.cacheElement == DType::I8;
  Type element = f32                                   ? Float(32)
                 : int8                                ? Int(8)
                 : s.cacheElement == DType::F16 ? Float(16)
                                                       : BFloat(16);
  b.keyPages = Buffer<>(element, s.headDim, s.numKvHeads, s.pageSize, numPages);
  b.valuePages =
      Buffer<>(element, s.headDim, s.numKvHeads, s.pageSize, numPages);
  // Small finite values of either width: the bytes are what decode streams.
  for (Buffer<> *pages : {&b.keyPages, &b.valuePages}) {
    auto *bits = reinterpret_cast<uint16_t *>(pages->data());
    for (size_t x = 0; x < pages->size_in_bytes() / 2; x++)
      bits[x] = f32 || int8 ? uint16_t(rng() & 0x3fff)
                            : uint16_t(0x3000 | (rng() & 0x3ff));
  }
  if (int8) {
    b.keyScales = Buffer<float>(s.numKvHeads, s.pageSize, numPages);
    b.valueScales = Buffer<float>(s.numKvHeads, s.pageSize, numPages);
    b.keyScales.fill(1.0f / 127);
    b.valueScales.fill(1.0f / 127);
  }
  b.table = Buffer<int32_t>(pagesPerSequence, kernel.batch);
  b.lengths = Buffer<int32_t>(kernel.batch);
  std::vector<int32_t> order(numPages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int s = 0; s < kernel.batch; s++) {
    b.lengths(s) = length;
    for (int p = 0; p < pagesPerSequence; p++)
      b.table(p, s) = order[s * pagesPerSequence + p];
  }
}

KernelBench::~KernelBench() = default;

namespace {
/// Keeps the median real time of the one benchmark run.
class MedianReporter : public benchmark::BenchmarkReporter {
public:
  bool ReportContext(const Context &) override { return true; }
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &run : runs) {
      if (run.error_occurred)
        error = run.error_message;
      else if (run.run_type == Run::RT_Aggregate &&
               run.aggregate_name == "median")
        milliseconds = run.GetAdjustedRealTime();
      else if (run.run_type == Run::RT_Iteration && !sawMedian)
        milliseconds = run.GetAdjustedRealTime(); // one repetition
      sawMedian |= run.aggregate_name == "median";
    }
  }
  bool sawMedian = false;
  double milliseconds = 0;
  std::string error;
};
} // namespace

double KernelBench::secondsPerCall(const Schedule &schedule,
                                   const Target &target,
                                   const TimingOptions &options) {
  Buffers &b = *buffers_;
  KernelPipeline kernel =
      kernel_.prefill
          ? buildSdpaPipeline(withSchedule(kernel_.sdpa, schedule), target)
          : buildDecodePipeline(withSchedule(kernel_.decode, schedule), target);
  kernel.pipeline.compile_jit(target);
  ParamMap params;
  params.set(kernel.inputs[0], b.query);
  if (kernel_.prefill) {
    params.set(kernel.inputs[1], b.key);
    params.set(kernel.inputs[2], b.value);
    if (kernel_.sdpa.keyPadding)
      params.set(kernel.inputs[3], b.lengths);
    if (kernel_.sdpa.sinks)
      params.set(kernel.inputs[kernel_.sdpa.keyPadding ? 4 : 3], b.sinks);
  } else {
    size_t next = 1;
    params.set(kernel.inputs[next++], b.keyPages);
    params.set(kernel.inputs[next++], b.valuePages);
    if (kernel_.decode.cacheElement == DType::I8) {
      params.set(kernel.inputs[next++], b.keyScales);
      params.set(kernel.inputs[next++], b.valueScales);
    }
    params.set(kernel.inputs[next++], b.table);
    params.set(kernel.inputs[next++], b.lengths);
    if (kernel_.decode.sinks)
      params.set(kernel.inputs[next++], b.sinks);
  }
  kernel.pipeline.realize(b.output, target, params); // warm-up
  benchmark::RegisterBenchmark("candidate",
                               [&](benchmark::State &state) {
                                 for (auto _ : state)
                                   kernel.pipeline.realize(b.output, target,
                                                           params);
                               })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(options.minSeconds)
      ->Repetitions(options.repetitions)
      ->ReportAggregatesOnly(options.repetitions > 1);
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::ClearRegisteredBenchmarks();
  if (!reporter.error.empty() || reporter.milliseconds <= 0)
    throw std::runtime_error("timing failed: " + reporter.error);
  return reporter.milliseconds / 1e3;
}

} // namespace attn::tune
