//===- Measure.h - timing schedule candidates -------------------*- C++ -*-===//
//
// A kernel's inputs at its tuning shape, built once, and the time of one
// candidate: the pipeline JIT-compiled with that schedule, timed by Google
// Benchmark (real time, repetitions, median).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TUNE_MEASURE_H
#define ATTN_TUNE_MEASURE_H

#include "Candidates.h"

#include "Halide.h"

#include <memory>

namespace attn::tune {

struct TimingOptions {
  int repetitions = 3;
  double minSeconds = 0.1; ///< per repetition
};

class KernelBench {
public:
  /// Seeded random inputs for `kernel` at its shape (decode: pages handed
  /// out in shuffled order, every sequence at `length` tokens).
  explicit KernelBench(const TunedKernel &kernel);
  ~KernelBench();

  /// Median seconds per call with `schedule`; compiles for `target`.
  double secondsPerCall(const Schedule &schedule, const Halide::Target &target,
                        const TimingOptions &options);

private:
  struct Buffers;
  TunedKernel kernel_;
  std::unique_ptr<Buffers> buffers_;
};

} // namespace attn::tune

#endif // ATTN_TUNE_MEASURE_H
