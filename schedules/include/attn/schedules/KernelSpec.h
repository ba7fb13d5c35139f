//===- KernelSpec.h - what a kernel computes, without MLIR ------*- C++ -*-===//
//
// The plain description of one kernel that the compiler hands to schedules/.
// It names the function, fixes the shape parameters the kernel is specialized
// for and the variant; dynamic extents (batch, sequence lengths) stay runtime
// arguments of the generated function.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_KERNELSPEC_H
#define ATTN_SCHEDULES_KERNELSPEC_H

#include <string>

namespace attn {

/// Tunable schedule parameters of the attention kernel (see Sdpa.cpp for the
/// loop nest they shape); 0 means "pick from the target".
struct SdpaSchedule {
  int vectorWidth =
      0; ///< fp32 lanes per vector op; 0: the target's natural width
  int queryBlock = 128; ///< query rows per task (and per online-softmax state)
  int kvChunk = 256;    ///< keys per online-softmax step
  int qkTileKeys = 12; ///< keys per Q·Kᵀ register tile (x 2 vectors of rows)
  int pvTileRows = 6;  ///< query rows per P·V register tile (x 4 vectors of d)
};

/// Scaled dot-product attention, softmax(Q·Kᵀ·scale + mask)·V.
/// Buffers (C order, head_dim innermost):
///   query  [batch][q_len][numQueryHeads][headDim]
///   key    [batch][kv_len][numKvHeads][headDim]
///   value  [batch][kv_len][numKvHeads][headDim]
///   output [batch][q_len][numQueryHeads][headDim]
/// Causal masks are aligned to the end of the keys: query i sees key j iff
/// j <= i + (kv_len - q_len).
struct SdpaSpec {
  std::string functionName;
  int numQueryHeads = 0;
  int numKvHeads = 0;
  int headDim = 0;
  bool causal = false;
  float scale = 0.0f;
  SdpaSchedule schedule;

  int queryHeadsPerKvHead() const { return numQueryHeads / numKvHeads; }
};

} // namespace attn

#endif // ATTN_SCHEDULES_KERNELSPEC_H
