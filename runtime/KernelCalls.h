//===- KernelCalls.h - each kernel family on plain arrays ------*- C++ -*-===//
//
// Private to the runtime. One function per kernel family: the buffers a
// generated kernel takes (by the names schedules/KernelAbi.cpp declares),
// described over the runtime's arrays, and the call, on the CPU or on the
// model's GPU (`device`). ModelRunner.cpp decides what runs when; this says
// how each kernel is called.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_KERNELCALLS_H
#define ATTN_RUNTIME_KERNELCALLS_H

#include "ContextBuffers.h"
#include "ModelWeights.h"

#include "attn/runtime/KernelCall.h"
#include "attn/runtime/KvCache.h"
#include "attn/runtime/ModelPlan.h"

#include <cstdint>

namespace attn::runtime {

/// The Halide element type of cache pools and weights stored as `type`.
halide_type_t halideType(DType type);

/// Where a K/V projection with the cache append fused in stores its K and V
/// rows: one layer's page pools [poolSlots][kvHeads][headDim] element and
/// the slot of each token, slots [tokens] (-1: not stored).
struct CacheAppendArgs {
  const int32_t *slots;
  Placed<void> keyPool, valuePool;
  halide_type_t element;
  int64_t poolSlots, kvHeads, headDim;
  /// int8 pools: each row's scale, [poolSlots][kvHeads] float; else null.
  Placed<float> keyScales, valueScales;
};

/// A fused append into `layer` of `cache` at `slots`.
CacheAppendArgs appendTo(KvCache &cache, int layer, const int32_t *slots);

/// A fused-append kernel run with no cache to fill (prefill without a
/// cache): `tokens` of `slots` set to -1 and `pool` [1][Hkv·D], a one-slot
/// pool nothing is stored in.
CacheAppendArgs noCacheAppend(const PlanOp &op, int64_t tokens,
                              IndexRows &slots, Activations &pool);

/// One linear kernel's call: output [tokens][outputs] = act(input
/// [tokens][inputs] · W + bias) (+ residual) (+ RoPE by `positions` when
/// the kernel has it) (+ K/V into the cache) (+ best [tokens], each row's
/// argmax, for a kernel with the argmax). The first eight are what every
/// call names; the rest are the epilogues some kernels have.
struct LinearCall {
  const Kernel &kernel;
  const WeightMatrix &weights;
  const Floats &bias;
  Placed<const float> input; ///< [tokens][inputs]; gated: [tokens][2·inputs]
  int64_t tokens, inputs, outputs;
  Placed<float> output;               ///< [tokens][outputs]
  const int32_t *positions = nullptr; ///< [tokens], for RoPE
  /// QK-norm's weight per feature of the rotated heads, when the kernel
  /// normalizes them; else null.
  const Floats *qkNorm = nullptr;
  Placed<const float> residual;       ///< [tokens][outputs], added
  bool gatedInput = false;            ///< gate | up halves, SiLU(gate)·up
  const CacheAppendArgs *append = nullptr;
  int32_t *best = nullptr; ///< [tokens]
  /// An expert kernel's grouped variant (Kernel::grouped): `weights` (and
  /// `bias`) stack the experts, `outputs` features each, and row m
  /// multiplies expert experts[m]'s matrix, experts [tokens], each in
  /// [0, weights.out / outputs).
  const int32_t *experts = nullptr;
};
Status linear(const DeviceApi *device, const LinearCall &call);

/// A forward pass's tokens: `ids` and `positions` [count].
struct TokenRows {
  const int32_t *ids, *positions;
  int64_t count;
};

/// out [tokens][d] = the embedding of the tokens: rows of `table`
/// [vocab][d] plus, for learned positions, of `positionTable`
/// [maxPositions + offset][d] (else empty).
Status embed(const DeviceApi *device, const PlanOp &op, const Floats &table,
             const Floats &positionTable, TokenRows tokens, Placed<float> out);

/// `count` rows of floats, row r at data + r · stride (a view into a
/// projection's output, whose rows may hold K and V beside the query).
struct RowsView {
  Placed<const float> data;
  int64_t stride, count;
};

/// out [tokens][d] = the layer or RMS norm of `input` (rows of d =
/// weight.size() floats) with `weight` [d] and, for a layer norm, `bias`
/// [d]; for a residual_add norm, plus `residual` [tokens][d].
Status norm(const DeviceApi *device, const PlanOp &op, const Floats &weight,
            const Floats &bias, RowsView input, Placed<float> out,
            Placed<const float> residual = {});

/// Prefill attention of one sequence: `query` [t][Hq·D] over `keys`,
/// `values` [kvLen][Hkv·D], into `out` [t][Hq·D]; causal masks are aligned
/// to the end of the keys (query i sees keys up to i + kvLen - t). `sinks`
/// [Hq]: each head's sink logit, for a layer with sinks.
Status prefillAttention(const DeviceApi *device, const PlanOp &op,
                        RowsView query, RowsView keys, RowsView values,
                        const Floats &sinks, Placed<float> out);

/// A decode batch: each sequence's new query row, `query` [batch][Hq·D],
/// the pages it reads, `blockTable` [batch][maxPages], and how many of
/// their tokens it sees, `lengths` [batch].
struct DecodeBatch {
  Placed<const float> query;
  const int32_t *blockTable;
  int64_t maxPages;
  const int32_t *lengths;
  int64_t batch;
};

/// Decode attention of a batch over `layer` of `cache`, into `out`
/// [batch][Hq·D]; `sinks` as for prefill.
Status decodeAttention(const DeviceApi *device, const PlanOp &op,
                       const KvCache &cache, int layer,
                       const DecodeBatch &batch, const Floats &sinks,
                       Placed<float> out);

/// Columns [offset, offset + width) of the rows of `from` into dense `to`
/// [from.count][width]: std::memcpy on the CPU, a copy on the device (where
/// kernels take no views into the middle of an allocation; `from` starts
/// at its allocation there).
Status copyRows(const DeviceApi *device, RowsView from, int64_t offset,
                int64_t width, Placed<float> to);

/// The lowest index of the largest of `logits` [vocabulary], -1 if one is
/// NaN: what a head kernel's fused argmax computes.
int32_t firstLargest(const float *logits, int vocabulary);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_KERNELCALLS_H
