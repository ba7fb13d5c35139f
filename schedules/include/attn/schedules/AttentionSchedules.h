//===- AttentionSchedules.h - attention schedules and defaults -*- C++ -*-===//
//
// The tunable schedule parameters of the prefill and decode attention
// kernels and the defaults used where no tuning-database entry applies.
// Plain C++ without includes: attnc's SelectSchedules pass (which knows
// nothing of Halide) and the schedules read the same defaults from here.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_ATTENTIONSCHEDULES_H
#define ATTN_SCHEDULES_ATTENTIONSCHEDULES_H

namespace attn {

/// Tunable schedule parameters of the attention kernel (see Sdpa.cpp for the
/// loop nest they shape); 0 means "pick from the target". Why the defaults
/// (2-core AVX-512 VMs, bench/README.md): 128-row query blocks keep K/V
/// chunks hot across many rows, and with the small tiles head_dim 256 gains
/// 10-25% over 64-row blocks for MHA and ties for GQA; 256-key chunks keep
/// the score block in L1/L2; 4-key x 2-vector Q·Kᵀ tiles were attn-tune's
/// winners on Zen 4 and 8-32% faster than 12 x 6 there (see
/// defaultSdpaSchedule for head_dim >= 128); 6-row P·V tiles (24 of the 32
/// zmm accumulating at head_dim 128) were 5-12% faster than 4 rows on Zen 5
/// and within 3% on Zen 4.
struct SdpaSchedule {
  int vectorWidth =
      0; ///< fp32 lanes per vector op; 0: the target's natural width
  int queryBlock = 128; ///< query rows per task (and per online-softmax state)
  int kvChunk = 256;    ///< keys per online-softmax step
  /// The Q·Kᵀ register tile's unvectorized extent: keys (x 2 vectors of
  /// query rows) in fp32; query rows (x min(4, 24 / rows) vectors of keys)
  /// in bf16, whose tile vectorizes over keys.
  int qkTileKeys = 4;
  int pvTileRows = 6; ///< query rows per P·V register tile (x 4 vectors of d)
  /// An fp32 Q·Kᵀ register tile: rowVectors vectors of query rows x keys.
  struct QkTile {
    int rowVectors = 2;
    int keys = 0;
  };
  /// The fp32 tile on the CPU families whose row takes it (Intel cores;
  /// asked when the kernel runs: CpuFamily.h), where elsewhere it is 2 vectors x qkTileKeys; keys
  /// 0: the same tile everywhere. Set by defaultSdpaSchedule; a
  /// tuning-database entry, measured on one machine, leaves it unset.
  QkTile intelQkTile;
};

/// The precision of an attention kernel's two matrix products.
enum class SdpaCompute {
  F32,  ///< fp32 throughout
  BF16, ///< Q, K, V and the probabilities P rounded to bf16 for Q·Kᵀ and
        ///< P·V (fp32 accumulation, AVX512-BF16 dot products where the
        ///< target has them); softmax, its running state and the output
        ///< stay fp32. Requires an even head_dim.
};

/// The prefill schedule used where nothing better is known: what
/// SelectSchedules gives a kernel without a tuning-database entry (before
/// shrinking tiles for short sequences) and what attn-bench measures by
/// default. SdpaSchedule's defaults, with 8-key Q·Kᵀ tiles for fp32 products
/// from head_dim 128 up: on Zen 5, over two to four alternated A/B rounds
/// (bench/README.md), 8 x 2-vector tiles took 9-11% less time than 4 x 2 at
/// D128 and D256 S2048 causal, 6-9% less at S2048 full, the same at D128
/// S512 full; at head_dim 64 they were 1-4% slower, so 4 stays there.
/// Intel cores take 4-vector x 4-key tiles below head_dim 128: on
/// Sapphire Rapids (2 vCPUs, bench/README.md) they took 4-6% less time than
/// 2 x 4 at D64 S512, full and causal; from 128 up they tied with 2 x 8
/// (within 3%, K and V packed per head), which stays.
inline SdpaSchedule defaultSdpaSchedule(int headDim, SdpaCompute compute) {
  SdpaSchedule schedule;
  if (compute == SdpaCompute::F32) {
    if (headDim >= 128)
      schedule.qkTileKeys = 8;
    else
      schedule.intelQkTile = {4, 4};
  }
  return schedule;
}

/// Tunable schedule parameters of the decode kernel; 512-key splits balance
/// the tasks against the cost of combining their partials.
struct DecodeSchedule {
  int vectorWidth =
      0; ///< fp32 lanes per vector op; 0: the target's natural width
  int splitKeys = 512; ///< keys per split-KV task (all KV heads)
};

} // namespace attn

#endif // ATTN_SCHEDULES_ATTENTIONSCHEDULES_H
