//===- ModelWeights.h - a model's weights, laid out for its kernels -------===//
//
// Private to the runtime: shared by Model.cpp (loading) and
// KernelCalls.cpp and ModelRunner.cpp (running).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MODELWEIGHTS_H
#define ATTN_RUNTIME_MODELWEIGHTS_H

#include "DeviceCopy.h"

#include "attn/runtime/DType.h"
#include "attn/runtime/Int4Weights.h"
#include "attn/runtime/KernelCall.h"
#include "attn/runtime/Model.h"
#include "attn/runtime/PoolAllocator.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attn::runtime {

/// `count` output rows of a linear weight in PyTorch's [out][in] layout,
/// read on demand: read(first, n, out) converts rows [first, first + n) to
/// floats at `out` ([n][in]).
struct WeightRows {
  int64_t count = 0;
  std::function<void(int64_t first, int64_t n, float *out)> read;
  /// Instead of read, for int4 rows a checkpoint holds quantized (GPTQ,
  /// AWQ; Int4Checkpoint.h): u [n][in] (0..15), and per group of inputs
  /// scales [n][groups] and zero points [n][groups].
  std::function<void(int64_t first, int64_t n, uint8_t *u, float *scales,
                     uint8_t *zeros)>
      readInt4;
  /// readInt4's zero points are all 8 (GGUF's Q4_0): the kernels' own
  /// symmetric int4, which reads no zero points.
  bool symmetricInt4 = false;
  /// Or for int4 rows with a minimum per group (GGUF's Q4_1, Q4_K): u
  /// [n][in] (0..15), scales and mins [n][groups], W = u · s + m.
  std::function<void(int64_t first, int64_t n, uint8_t *u, float *scales,
                     float *mins)>
      readInt4Mins;
  /// Or for int8 rows a checkpoint holds in groups of inputs (GGUF's Q8_0
  /// blocks): q [n][in] and per group scales [n][groups], W = q · scale.
  std::function<void(int64_t first, int64_t n, int8_t *q, float *scales)>
      readInt8;
  /// Or for MXFP4 rows a checkpoint holds (gpt-oss's experts): E2M1 codes
  /// [n][in] (0..15) and the E8M0 exponent bytes [n][in / 32].
  std::function<void(int64_t first, int64_t n, uint8_t *codes,
                     uint8_t *exponents)>
      readMx;
};

/// Weights being laid out: large tensors on 2 MiB pages (PoolAllocator.h),
/// which takes loading a 1.1B-parameter checkpoint from millions of page
/// faults to thousands, and spares decode a TLB miss every 4 KiB of its
/// stream.
template <class T> using PooledVector = std::vector<T, PoolAllocator<T>>;

/// An array of weights as the kernels read it: either owned (laid out at
/// load) or a view into a packed-weights file mapped read-only
/// (PackedWeights.h), which the view keeps mapped; with its device copy
/// when the model runs on a GPU.
template <class T> class WeightArray {
public:
  WeightArray() = default;
  WeightArray(PooledVector<T> values) : owned_(std::move(values)) {}
  /// A view of `count` values at `data`, inside the mapping `keep` holds.
  static WeightArray mapped(std::shared_ptr<const void> keep, const T *data,
                            size_t count) {
    WeightArray array;
    array.mapping_ = std::move(keep);
    array.view_ = data;
    array.viewSize_ = count;
    return array;
  }

  /// A view of values [offset, offset + count) of this array, valid while
  /// it is (keeping its mapping, if any); no device copy.
  WeightArray slice(size_t offset, size_t count) const {
    // An owned array is kept by its owner: the aliasing pointer owns
    // nothing and only marks the result a view.
    std::shared_ptr<const void> keep =
        mapping_ ? mapping_
                 : std::shared_ptr<const void>(std::shared_ptr<const void>(),
                                               data());
    return mapped(std::move(keep), data() + offset, count);
  }

  const T *data() const { return mapping_ ? view_ : owned_.data(); }
  size_t size() const { return mapping_ ? viewSize_ : owned_.size(); }
  bool empty() const { return size() == 0; }
  const T *begin() const { return data(); }
  const T *end() const { return data() + size(); }
  const T &operator[](size_t i) const { return data()[i]; }
  /// The values being laid out (an owned array; a mapped one becomes an
  /// empty owned one).
  PooledVector<T> &edit() {
    mapping_.reset();
    copy_.reset();
    return owned_;
  }
  /// Copies the values to `api`'s device, once (a model loaded for a GPU).
  /// Const: the copy mirrors the values.
  Status placeOn(const DeviceApi &api) const {
    if (!copy_)
      copy_ = std::make_unique<DeviceCopy>();
    return copy_->allocate(api, data(), size() * sizeof(T),
                           /*hostHasData=*/true);
  }
  /// The values as a kernel argument: on the device, where placed there.
  Placed<const T> placed() const { return {data(), copy_.get()}; }

private:
  PooledVector<T> owned_;
  std::shared_ptr<const void> mapping_; // set: a view
  const T *view_ = nullptr;
  size_t viewSize_ = 0;
  mutable std::unique_ptr<DeviceCopy> copy_; // null on the CPU
};

using Floats = WeightArray<float>;

/// A linear kernel's W as the kernel reads it: panels of `panel` output
/// features, [ceil(out / panel)][in][panel] (the last one zero-padded), in
/// the plan's weight_dtype: f32 values, the bits of f16 / bf16 ones
/// (bf16 in pairs: 32 features a panel row as 16 uint32 words, feature p
/// in word p's low half and p + 16 in its high half; KernelSpec.h), or
/// int8 values with a scale per output feature or per group of inputs and
/// feature (W = q · scale), inputs in pairs: [panels][ceil(in / 2)][2 ·
/// panel], byte 2p + r of row j holding input 2j + r of feature p (the
/// kernel's vpdpwssd operand), or int4
/// nibbles with a scale (and zero point) per group of inputs and feature,
/// as Int4Layout places them; page-aligned once large, so a panel row
/// never straddles more cache lines than it must.
struct WeightMatrix {
  DType type = DType::F32;
  int64_t in = 0, out = 0, panel = 0;
  int64_t group = 0; // int4, grouped int8: inputs per scale
  Floats f32;
  WeightArray<uint16_t> narrow;
  WeightArray<int8_t> int8;
  WeightArray<uint16_t> int4; // Int4Layout's words
  // int8: [out], max |W(:, n)| / 127, or grouped as int4's. int4:
  // [panels][groups][16].
  Floats scales;
  // int4 with zero points of their own (GPTQ, AWQ): [panels][groups][16];
  // empty: 8 (symmetric).
  WeightArray<uint8_t> zeros;
  // int4 with minimums instead (GGUF's Q4_1, Q4_K): [panels][groups][16],
  // W = u · s + m.
  Floats mins;
  // MXFP4 (its codes in int4): the E8M0 bytes, [panels][groups][16].
  WeightArray<uint8_t> exponents;


  /// Lays out `blocks` (PyTorch's [rows][in] each, stacked along the
  /// output features: fused Q | K | V, gate | up) in panels of `panel`,
  /// stored as `to` (round to nearest even; int8 quantized per row, or per
  /// `group` inputs of a row or as a block's readInt8 gives them; int4
  /// per `group` inputs of a row, quantizeInt4Group, or as a block's
  /// readInt4 gives them; MXFP4 per 32 inputs of a row,
  /// quantizeMxfp4Block, or as a block's readMx gives them). `withZeros`:
  /// int4 with a zero point per group (8 where packing quantized the rows);
  /// `withMins`: int4 with a minimum per group instead (quantizeInt4MinGroup,
  /// or as a block's readInt4Mins gives them).
  void pack(const std::vector<WeightRows> &blocks, int64_t in, int64_t panel,
            DType to, int64_t group = 0, bool withZeros = false,
            bool withMins = false);
  int64_t panels() const { return panel ? (out + panel - 1) / panel : 0; }
  /// Output features [first, first + count) as a matrix of their own,
  /// viewing this one's arrays (every one of them panel-major, int8's
  /// scales per feature), valid while this one is: one expert of a stack
  /// of them. `first` and `count` are multiples of the panel; CPU only (no
  /// device copy).
  WeightMatrix outputs(int64_t first, int64_t count) const;
  /// Whether the kernel reads it as bf16 pairs in uint32 words.
  bool pairs() const { return type == DType::BF16; }
  /// Whether its values are nibbles in Int4Layout (I4 and MXFP4).
  bool nibbles() const { return type == DType::I4 || type == DType::MXFP4; }
  Int4Layout int4Layout() const { return {in, out, group}; }
  /// Words per panel row as the kernel types them, and rows per panel.
  int64_t words() const {
    return pairs()             ? panel / 2
           : type == DType::I8 ? 2 * panel
           : nibbles()         ? kInt4RowWords
                               : panel;
  }
  int64_t rows() const {
    return type == DType::I8 ? (in + 1) / 2
           : nibbles()       ? int4Layout().rows()
                             : in;
  }
  /// The array the kernel reads as W.
  Placed<const void> placed() const {
    return type == DType::F32  ? Placed<const void>(f32.placed())
           : type == DType::I8 ? Placed<const void>(int8.placed())
           : nibbles()         ? Placed<const void>(int4.placed())
                               : Placed<const void>(narrow.placed());
  }
  size_t bytes() const {
    return f32.size() * sizeof(float) + narrow.size() * sizeof(uint16_t) +
           int8.size() + int4.size() * sizeof(uint16_t);
  }
  bool empty() const {
    return f32.empty() && narrow.empty() && int8.empty() && int4.empty();
  }
};

/// Weights of one op, in the layouts its kernels read. Empty when unused.
struct Model::Weights {
  Floats table;                // embedding [vocab][d]
  Floats positionTable;        // learned positions [max][d]
  Floats normWeight, normBias; // [d]
  // Attention: query [d][Hq·D], or fused [d][(Hq + 2·Hkv)·D] (Q | K | V);
  // keyValue [d][2·Hkv·D] (K | V) when not fused, or [d][Hkv·D] (K) with
  // value [d][Hkv·D] (V) where V has a weight type of its own (PlanOp::value);
  // output [Hq·D][d].
  WeightMatrix query, keyValue, value, output;
  Floats queryBias, keyValueBias, valueBias, outputBias;
  // QK-norm's weight per feature of the heads a projection normalizes:
  // query [(Hq + Hkv)·D] when fused (Q | K), else [Hq·D]; keyValue [Hkv·D].
  // Empty without QK-norm.
  Floats queryNorm, keyValueNorm;
  Floats sinks;                // attention's sink logit per query head [Hq]
  // Latent attention (PlanOp::Latent; empty otherwise): query [in][H·(rope
  // + nope)] (each head's rotated channels de-interleaved, then the rest),
  // keyValue [d][rope + rank] (the shared key, de-interleaved, then the
  // latent), output [H·value][d]; the query's down projection [d][query
  // rank] and its norm's weight [query rank]; the latent's norm [rank];
  // absorb [nope][H·rank] (head h's outputs W_uk_hᵀ) and unabsorb
  // [rank][H·value] (W_uv_h), both stacks of a matrix per head.
  WeightMatrix queryDown, absorb, unabsorb;
  Floats queryDownNorm, latentNorm;
  // FFN [d][ffn], [ffn][d]. Experts: every expert's stacked along the
  // outputs, [d][experts · ffn] and [ffn][experts · d] (gated: each
  // expert's gate | up), and router [d][experts].
  WeightMatrix up, down, router;
  Floats upBias, downBias;     // [(experts ·) ffn], [(experts ·) d]
  // The experts' shared FFN: [d][shared] (gated: gate | up) and
  // [shared][d], their biases, and its output's gate [d] (empty: none).
  WeightMatrix sharedUp, sharedDown;
  Floats sharedUpBias, sharedDownBias, sharedGate;
  Floats routerBias;    // the router's bias [experts] (gpt-oss)
  Floats selectionBias; // a sigmoid router's selection bias [experts]
  WeightMatrix head;           // output head [d][vocab]
  Floats headBias;             // [vocab]

  /// Walks every array in one fixed order (the packed-weights file's):
  /// onArray(array) for each bias, norm and table, then for each matrix
  /// onMatrix(matrix) followed by onArray for each of its arrays.
  template <class Self, class OnMatrix, class OnArray>
  static void walk(Self &self, OnMatrix &&onMatrix, OnArray &&onArray) {
    for (auto *v : {&self.table, &self.positionTable, &self.normWeight,
                    &self.normBias, &self.queryBias, &self.keyValueBias,
                    &self.outputBias, &self.upBias, &self.downBias,
                    &self.headBias, &self.queryNorm, &self.keyValueNorm,
                    &self.sinks, &self.sharedUpBias, &self.sharedDownBias,
                    &self.sharedGate, &self.selectionBias, &self.queryDownNorm,
                    &self.latentNorm, &self.routerBias, &self.valueBias})
      onArray(*v);
    for (auto *m : {&self.query, &self.keyValue, &self.output, &self.up,
                    &self.down, &self.head, &self.router, &self.sharedUp,
                    &self.sharedDown, &self.queryDown, &self.absorb,
                    &self.unabsorb, &self.value}) {
      onMatrix(*m);
      onArray(m->f32);
      onArray(m->narrow);
      onArray(m->int8);
      onArray(m->int4);
      onArray(m->scales);
      onArray(m->zeros);
      onArray(m->mins);
      onArray(m->exponents);
    }
  }

  /// Copies every array to `api`'s device (a model loaded for a GPU).
  Status placeOn(const DeviceApi &api) const {
    Status status;
    walk(
        *this, [](const WeightMatrix &) {},
        [&](const auto &array) {
          if (status)
            status = array.placeOn(api);
        });
    return status;
  }
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_MODELWEIGHTS_H
