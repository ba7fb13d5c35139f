//===- Int4Checkpoint.h - GPTQ and AWQ linear layers, as published -*- C++ -*-===//
//
// For the runtime's loading (WeightLayout.cpp). A GPTQ or AWQ checkpoint
// stores each quantized linear layer X (out features, in inputs, groups of
// G inputs) as
//   X.qweight  int32  GPTQ [in/8][out]: nibble i of word (r, n) is input
//                     8r + i of feature n;
//                     AWQ [in][out/8]: nibble i of word (k, c) is feature
//                     8c + (0 2 4 6 1 3 5 7)[i] of input k
//   X.qzeros   int32  [in/G][out/8], feature 8c + j in nibble j (GPTQ) or
//                     in AWQ's order; GPTQ's checkpoint_format "gptq" stores
//                     each zero point less 1 (mod 16), "gptq_v2" as it is
//   X.scales   f16    [in/G][out]
//   X.g_idx    int32  [in], GPTQ only: input k's group, which must be k / G
//                     (desc_act's permuted groups are refused)
// and W(k, n) = (u - z) · s. These read rows of W (output features) as
// unsigned nibbles with their groups' scales and zero points, for the
// kernels' Int4Layout (no requantization).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_INT4CHECKPOINT_H
#define ATTN_RUNTIME_INT4CHECKPOINT_H

#include "attn/runtime/Checkpoint.h"
#include "attn/runtime/Int4Weights.h"

#include <memory>
#include <string>
#include <vector>

namespace attn::runtime {

/// The suffixes of a quantized layer's tensors, and their shapes and types
/// in the checkpoint.
struct Int4TensorSpec {
  std::string suffix; // ".qweight", ...
  std::vector<int64_t> shape;
  TensorType type;
};
std::vector<Int4TensorSpec> int4Tensors(Int4Format format, int64_t out,
                                        int64_t in, int64_t group);

/// One quantized layer, opened: its scales (and GPTQ's g_idx) checked and
/// read once.
class Int4Layer {
public:
  /// `base` names the layer ("model.layers.0.self_attn.q_proj"); its
  /// tensors must be in `file` in the shapes int4Tensors gives (checked by
  /// the loader before).
  static Status open(const Checkpoint &file, const std::string &base,
                     Int4Format format, int64_t out, int64_t in,
                     int64_t group, std::shared_ptr<const Int4Layer> &layer);

  /// Rows [first, first + count) of W: u [count][in] (0..15), and per group
  /// scales [count][groups] and zero points [count][groups].
  void read(int64_t first, int64_t count, uint8_t *u, float *scales,
            uint8_t *zeros) const;

private:
  Int4Format format_ = Int4Format::Gptq;
  int64_t out_ = 0, in_ = 0, group_ = 0;
  const TensorView *qweight_ = nullptr, *qzeros_ = nullptr;
  std::vector<float> scales_; // [groups][out]
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_INT4CHECKPOINT_H
