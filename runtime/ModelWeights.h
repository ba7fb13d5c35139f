//===- ModelWeights.h - a model's weights, laid out for its kernels -------===//
//
// Private to the runtime: shared by Model.cpp (loading) and
// KernelCalls.cpp and ModelRunner.cpp (running).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MODELWEIGHTS_H
#define ATTN_RUNTIME_MODELWEIGHTS_H

#include "attn/runtime/DType.h"
#include "attn/runtime/Int4Weights.h"
#include "attn/runtime/Model.h"
#include "attn/runtime/PoolAllocator.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace attn::runtime {

/// The checkpoint tensors of one op, by role ("q.weight", "table", ...).
/// A role's data is the whole tensor in PyTorch's layout ([out][in] for
/// linear weights), or, for GPT-2's Conv1D tensors ([in][out], Q|K|V fused),
/// columns [columnBegin, columnBegin + columnCount) of it, transposed
/// (biases: that slice).
struct OpTensorNames {
  struct Entry {
    std::string role, tensor;
    std::vector<int64_t> shape; // in the file
    bool conv1d = false;
    int64_t columnBegin = 0, columnCount = 0; // 0: every column
    /// Where a checkpoint may hold the tensor instead (tied weights: BART's
    /// model.shared for its embeddings and head), tried in order when the
    /// file lacks `tensor`; with their shapes in the file.
    std::vector<std::pair<std::string, std::vector<int64_t>>> alternatives;
  };
  std::vector<Entry> entries;
  void add(const std::string &role, const std::string &tensor,
           std::vector<int64_t> shape,
           std::vector<std::pair<std::string, std::vector<int64_t>>>
               alternatives = {});
  void addConv1D(const std::string &role, const std::string &tensor,
                 std::vector<int64_t> shape, int64_t columnBegin,
                 int64_t columnCount);
  const Entry *find(const std::string &role) const;
};

/// `count` output rows of a linear weight in PyTorch's [out][in] layout,
/// read on demand: read(first, n, out) converts rows [first, first + n) to
/// floats at `out` ([n][in]).
struct WeightRows {
  int64_t count = 0;
  std::function<void(int64_t first, int64_t n, float *out)> read;
};

/// Weight storage: large tensors on 2 MiB pages (PoolAllocator.h), which
/// takes loading a 1.1B-parameter checkpoint from millions of page faults
/// to thousands, and spares decode a TLB miss every 4 KiB of its stream.
using Floats = std::vector<float, PoolAllocator<float>>;

/// A linear kernel's W as the kernel reads it: panels of `panel` output
/// features, [ceil(out / panel)][in][panel] (the last one zero-padded), in
/// the plan's weight_dtype: f32 values, the bits of f16 / bf16 ones
/// (bf16 in pairs: 32 features a panel row as 16 uint32 words, feature p
/// in word p's low half and p + 16 in its high half; KernelSpec.h), or
/// int8 values with a scale per output feature (W = q · scale), inputs in
/// pairs: [panels][ceil(in / 2)][2 · panel], byte 2p + r of row j holding
/// input 2j + r of feature p (the kernel's vpdpwssd operand), or int4
/// nibbles with a scale (and zero point) per group of inputs and feature,
/// as Int4Layout places them; page-aligned once large, so a panel row
/// never straddles more cache lines than it must.
struct WeightMatrix {
  DType type = DType::F32;
  int64_t in = 0, out = 0, panel = 0;
  int64_t group = 0; // int4: inputs per scale
  Floats f32;
  std::vector<uint16_t, PoolAllocator<uint16_t>> narrow;
  std::vector<int8_t, PoolAllocator<int8_t>> int8;
  std::vector<uint16_t, PoolAllocator<uint16_t>> int4; // Int4Layout's words
  // int8: [out], max |W(:, n)| / 127. int4: [panels][groups][16].
  Floats scales;
  // int4 with zero points of their own (GPTQ, AWQ): [panels][groups][16];
  // empty: 8 (symmetric).
  std::vector<uint8_t, PoolAllocator<uint8_t>> zeros;


  /// Lays out `blocks` (PyTorch's [rows][in] each, stacked along the
  /// output features: fused Q | K | V, gate | up) in panels of `panel`,
  /// stored as `to` (round to nearest even; int8 quantized per row; int4
  /// per `group` inputs of a row, quantizeInt4Group).
  void pack(const std::vector<WeightRows> &blocks, int64_t in, int64_t panel,
            DType to, int64_t group = 0);
  int64_t panels() const { return panel ? (out + panel - 1) / panel : 0; }
  /// Whether the kernel reads it as bf16 pairs in uint32 words.
  bool pairs() const { return type == DType::BF16; }
  Int4Layout int4Layout() const { return {in, out, group}; }
  /// Words per panel row as the kernel types them, and rows per panel.
  int64_t words() const {
    return pairs()                ? panel / 2
           : type == DType::I8    ? 2 * panel
           : type == DType::I4    ? kInt4RowWords
                                  : panel;
  }
  int64_t rows() const {
    return type == DType::I8   ? (in + 1) / 2
           : type == DType::I4 ? int4Layout().rows()
                               : in;
  }
  const void *data() const {
    return type == DType::F32  ? static_cast<const void *>(f32.data())
           : type == DType::I8 ? static_cast<const void *>(int8.data())
           : type == DType::I4 ? static_cast<const void *>(int4.data())
                               : narrow.data();
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
  // keyValue [d][2·Hkv·D] (K | V) when not fused; output [Hq·D][d].
  WeightMatrix query, keyValue, output;
  Floats queryBias, keyValueBias, outputBias;
  WeightMatrix up, down;       // FFN [d][ffn], [ffn][d]
  Floats upBias, downBias;     // [ffn], [d]
  WeightMatrix head;           // output head [d][vocab]
  Floats headBias;             // [vocab]

  /// Every tensor, as (data, bytes) (for copying them to a device).
  std::vector<std::pair<const void *, size_t>> tensors() const {
    std::vector<std::pair<const void *, size_t>> all;
    for (const Floats *v :
         {&table, &positionTable, &normWeight, &normBias, &queryBias,
          &keyValueBias, &outputBias, &upBias, &downBias, &headBias})
      all.push_back({v->data(), v->size() * sizeof(float)});
    for (const WeightMatrix *m :
         {&query, &keyValue, &output, &up, &down, &head}) {
      all.push_back({m->data(), m->bytes()});
      all.push_back({m->scales.data(), m->scales.size() * sizeof(float)});
      all.push_back({m->zeros.data(), m->zeros.size()});
    }
    return all;
  }
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_MODELWEIGHTS_H
