//===- Roofline.cpp - this machine's compute and memory limits ------------===//

#include "Roofline.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace attn::bench {

namespace {
double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// 12 independent chains cover FMA latency x throughput on current x86 cores.
constexpr int kChains = 12;

__attribute__((target("avx2,fma"))) double fmaGflopsAvx2(long iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; c++)
    acc[c] = _mm256_set1_ps(1.0f + c * 1e-7f);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  double start = seconds();
  for (long it = 0; it < iterations; it++)
    for (int c = 0; c < kChains; c++)
      acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  double elapsed = seconds() - start;
  volatile float sink = 0;
  for (int c = 0; c < kChains; c++)
    sink = sink + _mm256_cvtss_f32(acc[c]);
  return 2.0 * 8 * kChains * iterations / elapsed / 1e9;
}

__attribute__((target("avx512f"))) double fmaGflopsAvx512(long iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; c++)
    acc[c] = _mm512_set1_ps(1.0f + c * 1e-7f);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  double start = seconds();
  for (long it = 0; it < iterations; it++)
    for (int c = 0; c < kChains; c++)
      acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  double elapsed = seconds() - start;
  volatile float sink = 0;
  for (int c = 0; c < kChains; c++)
    sink = sink + _mm512_reduce_add_ps(acc[c]);
  return 2.0 * 16 * kChains * iterations / elapsed / 1e9;
}

double fmaGflopsOneThread() {
  const long iterations = 20000000;
  double best = 0;
  bool avx512 = __builtin_cpu_supports("avx512f");
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  for (int rep = 0; rep < 3; rep++) {
    if (avx2)
      best = std::max(best, fmaGflopsAvx2(iterations));
    if (avx512)
      best = std::max(best, fmaGflopsAvx512(iterations));
  }
  return best;
}

template <class Body> void onThreads(int threads, Body body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++)
    pool.emplace_back(body, t);
  for (std::thread &thread : pool)
    thread.join();
}
} // namespace

Roofline measureRoofline(int threads) {
  Roofline roofline;
  roofline.threads = threads;
  std::vector<double> perThread(threads);
  onThreads(threads, [&](int t) { perThread[t] = fmaGflopsOneThread(); });
  for (double g : perThread)
    roofline.fmaGflops += g;

  // STREAM triad a = b + s·c over 3 x 256 MiB (well past the LLC), each
  // thread on its own slice; counts 3 x 4 bytes per element moved.
  const size_t n = size_t(64) << 20;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  onThreads(threads, [&](int t) { // first touch on the owning thread
    size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    std::fill(a.begin() + lo, a.begin() + hi, 0.0f);
  });
  double best = 0;
  for (int rep = 0; rep < 8; rep++) { // best of 8: the machine is shared
    double start = seconds();
    onThreads(threads, [&](int t) {
      size_t lo = n * t / threads, hi = n * (t + 1) / threads;
      for (size_t x = lo; x < hi; x++)
        a[x] = b[x] + 3.0f * c[x];
    });
    best = std::max(best, 3.0 * 4 * n / (seconds() - start) / 1e9);
  }
  roofline.triadGBps = best;

  // Read bandwidth: integer sums of the three arrays (integer adds
  // vectorize without reassociation flags), one slice per thread.
  best = 0;
  std::vector<uint64_t> sums(threads);
  for (int rep = 0; rep < 8; rep++) {
    double start = seconds();
    onThreads(threads, [&](int t) {
      uint64_t sum = 0;
      for (const std::vector<float> *array : {&a, &b, &c}) {
        const auto *words = reinterpret_cast<const uint32_t *>(array->data());
        size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        for (size_t x = lo; x < hi; x++)
          sum += words[x];
      }
      sums[t] += sum;
    });
    best = std::max(best, 3.0 * 4 * n / (seconds() - start) / 1e9);
  }
  if (sums[0] == 42) // keeps the sums observable
    best += 1e-9;
  roofline.readGBps = best;
  return roofline;
}

} // namespace attn::bench
