//===- ModelWeights.h - a model's weights, laid out for its kernels -------===//
//
// Private to the runtime: shared by Model.cpp (loading) and
// ModelRunner.cpp (running).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MODELWEIGHTS_H
#define ATTN_RUNTIME_MODELWEIGHTS_H

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

/// Weights of one op, in the layouts its kernels read. Empty when unused.
struct Model::Weights {
  std::vector<float> table;                // embedding [vocab][d]
  std::vector<float> positionTable;        // learned positions [max][d]
  std::vector<float> normWeight, normBias; // [d]
  // Attention: query [d][Hq·D], or fused [d][(Hq + 2·Hkv)·D] (Q | K | V);
  // keyValue [d][2·Hkv·D] (K | V) when not fused; output [Hq·D][d].
  std::vector<float> query, queryBias, keyValue, keyValueBias, output,
      outputBias;
  std::vector<float> up, upBias;     // FFN [d][ffn], [ffn]
  std::vector<float> down, downBias; // FFN [ffn][d], [d]
  std::vector<float> head, headBias; // output head [d][vocab], [vocab]

  /// Every tensor (for copying them to a device).
  std::vector<const std::vector<float> *> tensors() const {
    return {&table,  &positionTable, &normWeight, &normBias,
            &query,  &queryBias,     &keyValue,   &keyValueBias,
            &output, &outputBias,    &up,         &upBias,
            &down,   &downBias,      &head,       &headBias};
  }
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_MODELWEIGHTS_H
