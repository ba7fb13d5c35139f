//===- Candidates.h - what attn-tune searches -------------------*- C++ -*-===//
//
// A kernel from a plan (its specialization and current schedule), the shape
// it is timed at, and the schedule candidates of its family.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TUNE_CANDIDATES_H
#define ATTN_TUNE_CANDIDATES_H

#include "attn/schedules/KernelSpec.h"

#include <string>
#include <vector>

namespace attn::tune {

/// Schedule parameters in the tuning database's terms (both families).
struct Schedule {
  int queryBlock = 128, kvChunk = 256, qkTileKeys = 4, pvTileRows = 4;
  int splitKeys = 512, vectorWidth = 0;
  bool operator==(const Schedule &other) const;
  std::string describe(bool prefill) const;
};

/// One attention kernel of a plan.
struct TunedKernel {
  std::string symbol; ///< the database key, e.g. prefill_h32_kv8_d128_causal
  bool prefill = true;
  SdpaSpec sdpa;     ///< prefill
  DecodeSpec decode; ///< decode
  Schedule current;  ///< the plan's schedule (heuristic or database)
  std::string source;
  int length = 0; ///< prefill: tokens; decode: cached tokens per sequence
  int batch = 1;  ///< decode: sequences per step
};

/// The candidates of one search stage.
///  Prefill stage 0: query_block x kv_chunk with the current tiles;
///  stage 1: qk_tile_keys x pv_tile_rows at the best block and chunk.
///  Decode stage 0: split_keys x vector_width.
/// Tiles whose working set (a block x chunk of logits plus a K and a V
/// chunk) exceeds `l2Bytes` are left out, as are blocks and chunks far
/// longer than the sequence.
std::vector<Schedule> candidates(const TunedKernel &kernel, int stage,
                                 const Schedule &best, long l2Bytes);
int stages(const TunedKernel &kernel);

/// `spec` with `schedule` applied.
SdpaSpec withSchedule(SdpaSpec spec, const Schedule &schedule);
DecodeSpec withSchedule(DecodeSpec spec, const Schedule &schedule);

/// FLOPs and K/V bytes of one kernel call at the kernel's shape.
double flopsPerCall(const TunedKernel &kernel);
double kvBytesPerCall(const TunedKernel &kernel);

} // namespace attn::tune

#endif // ATTN_TUNE_CANDIDATES_H
