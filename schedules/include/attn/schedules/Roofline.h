//===- Roofline.h - this machine's compute and memory limits ----*- C++ -*-===//
//
// Measured at benchmark start-up so every figure is compared with the limits
// of the machine it ran on: the fp32 FMA peak (independent FMA chains, the
// widest vectors the CPU has, one chain set per thread) and STREAM-triad
// bandwidth over arrays far larger than the last-level cache. Used by the
// benchmarks (bench/) and by attn-tune (schedules/tune/); no Halide.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_ROOFLINE_H
#define ATTN_SCHEDULES_ROOFLINE_H

namespace attn {

struct Roofline {
  int threads = 0;
  double fmaGflops = 0; ///< fp32, all threads
  double triadGBps = 0; ///< all threads
  /// Reading alone (a sum over the same 768 MiB): the limit of streams that
  /// only read, such as a one-token GEMV over its weights, which can beat
  /// the triad.
  double readGBps = 0;
};

/// Measures the limits with `threads` threads (about one second).
Roofline measureRoofline(int threads);

} // namespace attn

#endif // ATTN_SCHEDULES_ROOFLINE_H
