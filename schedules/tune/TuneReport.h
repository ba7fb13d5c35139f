//===- TuneReport.h - attn-tune's table and pictures ------------*- C++ -*-===//

#ifndef ATTN_TUNE_TUNEREPORT_H
#define ATTN_TUNE_TUNEREPORT_H

#include "Candidates.h"

#include <string>
#include <vector>

namespace attn::tune {

struct Measured {
  Schedule schedule;
  double seconds = 0, gflops = 0, gbps = 0;
  bool isDefault = false;
};

/// What tuning one kernel found.
struct KernelResult {
  TunedKernel kernel;
  std::vector<Measured> measured; ///< in the order they ran; [0]: default
  size_t best = 0;                ///< index into measured
  bool keptDefault = true;        ///< the winner was not fast enough
  double speedup() const {
    return measured[0].seconds / measured[best].seconds;
  }
};

/// The machine's limits the pictures draw.
struct Limits {
  double fmaGflops = 0, triadGBps = 0;
};

/// A plain-text table: every candidate of every kernel.
std::string renderTable(const std::vector<KernelResult> &results);

/// An SVG bar chart of one kernel's candidates (GFLOP/s for prefill, GB/s
/// for decode) with the default schedule and the roofline marked.
std::string renderSvg(const KernelResult &result, const Limits &limits);

} // namespace attn::tune

#endif // ATTN_TUNE_TUNEREPORT_H
