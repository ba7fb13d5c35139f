//===- CallTimer.h - timing kernel calls for Google Benchmark ---*- C++ -*-===//

#ifndef ATTN_BENCH_CALLTIMER_H
#define ATTN_BENCH_CALLTIMER_H

#include <benchmark/benchmark.h>

#include <chrono>

namespace attn::bench {

/// The limits a benchmark's rates are compared with.
struct Limits {
  double fmaGflops, bandwidthGBps;
};

/// Runs `body` (one kernel call, complete on return: a device kernel
/// synchronizes inside it) once to warm up, then for the benchmark's
/// iterations as manual time, and sets GFLOPS, GBps and their percentages
/// of `limits` from the measured wall time.
template <class Body>
void timeCalls(benchmark::State &state, double flops, double bytes,
               Limits limits, Body body) {
  body(); // warm-up: page faults, thread pool start-up, module load
  double total = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    body();
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    state.SetIterationTime(elapsed);
    total += elapsed;
  }
  double perSecond = double(state.iterations()) / total;
  double gflops = flops * perSecond / 1e9, gbps = bytes * perSecond / 1e9;
  state.counters["GFLOPS"] = gflops;
  state.counters["GBps"] = gbps;
  state.counters["peak_pct"] = 100.0 * gflops / limits.fmaGflops;
  state.counters["bw_pct"] = 100.0 * gbps / limits.bandwidthGBps;
}

} // namespace attn::bench

#endif // ATTN_BENCH_CALLTIMER_H
