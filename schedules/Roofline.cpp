//===- Roofline.cpp - this machine's compute and memory limits ------------===//

#include "attn/schedules/Roofline.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace attn {

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

/// Sums `count` floats (a multiple of 32) with 256-bit loads into four
/// independent accumulators: as fast as the memory system delivers reads.
__attribute__((target("avx2"))) float sumAvx2(const float *data, size_t count) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (size_t i = 0; i < count; i += 32)
    for (int c = 0; c < 4; c++)
      acc[c] = _mm256_add_ps(acc[c], _mm256_loadu_ps(data + i + 8 * c));
  __m256 all = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]),
                             _mm256_add_ps(acc[2], acc[3]));
  float lanes[8];
  _mm256_storeu_ps(lanes, all);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] +
         lanes[6] + lanes[7];
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

  // Read bandwidth: vector sums of the three arrays, one slice per thread
  // (slices of whole 32-float blocks).
  best = 0;
  std::vector<float> sums(threads);
  const bool avx2 = __builtin_cpu_supports("avx2");
  for (int rep = 0; rep < 8 && avx2; rep++) {
    double start = seconds();
    onThreads(threads, [&](int t) {
      size_t lo = n * t / threads / 32 * 32,
             hi = n * (t + 1) / threads / 32 * 32;
      for (const std::vector<float> *array : {&a, &b, &c})
        sums[t] += sumAvx2(array->data() + lo, hi - lo);
    });
    best = std::max(best, 3.0 * 4 * n / (seconds() - start) / 1e9);
  }
  volatile float sink = sums[0]; // keeps the sums observable
  (void)sink;
  roofline.readGBps = best;
  return roofline;
}

} // namespace attn
