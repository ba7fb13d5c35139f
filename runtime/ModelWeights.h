//===- ModelWeights.h - a model's weights, laid out for its kernels -------===//
//
// Private to the runtime: shared by Model.cpp (loading) and
// ModelRunner.cpp (running).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MODELWEIGHTS_H
#define ATTN_RUNTIME_MODELWEIGHTS_H

#include "attn/runtime/DType.h"
#include "attn/runtime/Model.h"

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

/// A linear kernel's W [in][out] in the element type the kernel reads (the
/// plan's weight_dtype): f32 values, or the bits of f16 / bf16 ones.
struct WeightMatrix {
  DType type = DType::F32;
  std::vector<float> f32;
  std::vector<uint16_t> narrow;

  /// Takes `values` [in][out] and stores them as `to` (round to nearest
  /// even).
  void assign(std::vector<float> &&values, DType to);
  const void *data() const {
    return type == DType::F32 ? static_cast<const void *>(f32.data())
                              : narrow.data();
  }
  size_t bytes() const {
    return f32.size() * sizeof(float) + narrow.size() * sizeof(uint16_t);
  }
  bool empty() const { return f32.empty() && narrow.empty(); }
};

/// Weights of one op, in the layouts its kernels read. Empty when unused.
struct Model::Weights {
  std::vector<float> table;                // embedding [vocab][d]
  std::vector<float> positionTable;        // learned positions [max][d]
  std::vector<float> normWeight, normBias; // [d]
  // Attention: query [d][Hq·D], or fused [d][(Hq + 2·Hkv)·D] (Q | K | V);
  // keyValue [d][2·Hkv·D] (K | V) when not fused; output [Hq·D][d].
  WeightMatrix query, keyValue, output;
  std::vector<float> queryBias, keyValueBias, outputBias;
  WeightMatrix up, down;                 // FFN [d][ffn], [ffn][d]
  std::vector<float> upBias, downBias;   // [ffn], [d]
  WeightMatrix head;                     // output head [d][vocab]
  std::vector<float> headBias;           // [vocab]

  /// Every tensor, as (data, bytes) (for copying them to a device).
  std::vector<std::pair<const void *, size_t>> tensors() const {
    std::vector<std::pair<const void *, size_t>> all;
    for (const std::vector<float> *v :
         {&table, &positionTable, &normWeight, &normBias, &queryBias,
          &keyValueBias, &outputBias, &upBias, &downBias, &headBias})
      all.push_back({v->data(), v->size() * sizeof(float)});
    for (const WeightMatrix *m : {&query, &keyValue, &output, &up, &down, &head})
      all.push_back({m->data(), m->bytes()});
    return all;
  }
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_MODELWEIGHTS_H
