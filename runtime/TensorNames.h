//===- TensorNames.h - which checkpoint tensor feeds which op -----*- C++
//-*-===//
//
// Private to the runtime. How each family of Hugging Face checkpoints names
// its tensors is data: one FamilyNames table per family (TensorNames.cpp),
// read by one walk over the plan's ops that lists each op's tensors by role.
// The loader (WeightLayout.cpp) reads roles, never names; adding a family
// with the same structure is a table (and its import in attnc).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_TENSORNAMES_H
#define ATTN_RUNTIME_TENSORNAMES_H

#include "attn/runtime/Model.h"

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
    /// Rows [rowBegin, rowBegin + rowCount) of a fused [out][in] tensor
    /// (Phi-3's qkv_proj and gate_up_proj); 0: every row.
    int64_t rowBegin = 0, rowCount = 0;
    /// >= 0: slice `stackIndex` of a stack of experts [E][in][columns]
    /// (biases [E][columns]), and of it columns columnBegin + columnStep·o
    /// for o < columnCount, transposed (gpt-oss's interleaved gate | up);
    /// or, for MXFP4 blocks and scales ([E][rows][in / 32](16)), its rows
    /// rowBegin + rowStep·o for o < rowCount.
    int64_t stackIndex = -1, columnStep = 1, rowStep = 1;
    /// Where a checkpoint may hold the tensor instead (tied weights: BART's
    /// model.shared for its embeddings and head), tried in order when the
    /// file lacks `tensor`; with their shapes in the file.
    std::vector<std::pair<std::string, std::vector<int64_t>>> alternatives;
    /// As checkTensors expects it: F32 (stored F32, F16 or BF16), or I32
    /// (the packed words of a GPTQ or AWQ layer).
    TensorType type = TensorType::F32;
    /// > 0: the rows are in llama.cpp's order for its RoPE (GGUF files of
    /// Llama-family models): in each head of this many rows, row 2j + k
    /// holds Hugging Face's row k·(rows / 2) + j (rotate_half's halves
    /// made adjacent pairs). The loader reads them back in Hugging Face's
    /// order, which the kernels rotate.
    int64_t pairedRopeHeadRows = 0;
  };
  std::vector<Entry> entries;
  void add(const std::string &role, const std::string &tensor,
           std::vector<int64_t> shape,
           std::vector<std::pair<std::string, std::vector<int64_t>>>
               alternatives = {});
  void addConv1D(const std::string &role, const std::string &tensor,
                 std::vector<int64_t> shape, int64_t columnBegin,
                 int64_t columnCount);
  /// Rows [begin, begin + count) of `tensor` ([out][in], `shape` in the
  /// file) as the role's [count][in] weight.
  void addRows(const std::string &role, const std::string &tensor,
               std::vector<int64_t> shape, int64_t begin, int64_t count);
  /// Slice `index` of the stack `tensor` (`shape` in the file: [E][in]
  /// [columns] or, for biases, [E][columns]), its columns begin + step·o
  /// for o < count, as the role's [count][in] weight (or [count] bias).
  void addStacked(const std::string &role, const std::string &tensor,
                  std::vector<int64_t> shape, int64_t index, int64_t begin,
                  int64_t count, int64_t step);
  /// Rows begin + step·o (o < count) of slice `index` of the uint8 stack
  /// `tensor` (`shape` in the file): MXFP4 blocks or scales.
  void addStackedRows(const std::string &role, const std::string &tensor,
                      std::vector<int64_t> shape, int64_t index, int64_t begin,
                      int64_t count, int64_t step);
  const Entry *find(const std::string &role) const;
};

/// The role of expert `expert`'s `role` ("gate", "up", "down") in a
/// mixture of experts; its router's is "router.weight".
std::string expertRole(int expert, const std::string &role);

/// Every op's tensors under `naming`, parallel to plan.ops.
std::vector<OpTensorNames> tensorNames(const ModelPlan &plan,
                                       WeightNaming naming);

/// Renames `names` (tensorNames' under `naming`) as a GGUF file of
/// `architecture` names them (llama.cpp's converter: token_embd.weight,
/// blk.N.attn_q.weight, ...), marking Q and K rows paired where its
/// converter permutes them (architecture llama). Fails naming the family or
/// tensor GGUF files are not read for yet.
Status ggufNames(const ModelPlan &plan, WeightNaming naming,
                 const std::string &architecture,
                 std::vector<OpTensorNames> &names);

/// The distinct tensors `names` refer to, in order (fused and tied tensors
/// serve several roles).
std::vector<ExpectedTensor>
distinctTensors(const std::vector<OpTensorNames> &names);

/// Fails where two of the plan's ops expect one tensor in different shapes
/// (only a tampered or hand-written plan does: a fused or tied tensor
/// serves its roles in one shape); the loader packs each op's weights by its
/// own shape, so the file's single tensor would be read past its end.
Status checkSharedShapes(const ModelPlan &plan,
                         const std::vector<OpTensorNames> &names);

/// Tensors a checkpoint under `naming` may hold beyond what `plan` reads
/// and that change nothing (recomputed rotary frequencies, causal-mask
/// buffers, tied copies, frozen sinusoids), among `present`.
std::vector<std::string>
harmlessTensors(const ModelPlan &plan, WeightNaming naming,
                const std::vector<std::string> &present);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_TENSORNAMES_H
