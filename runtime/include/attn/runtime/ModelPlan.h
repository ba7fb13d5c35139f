//===- ModelPlan.h - the plan attnc writes, as the runtime reads it -*- C++
//-*-===//
//
// attnc embeds the plan (JSON) and a kernel table in every generated header.
// The plan lists the model's ops in execution order (embeddings, norms,
// attention layers, FFNs, output head), each with the names of its kernels;
// parsing resolves every name in the table, so a mismatched header and
// library are an error at load time, not a crash later.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MODELPLAN_H
#define ATTN_RUNTIME_MODELPLAN_H

#include "attn/runtime/DType.h"
#include "attn/runtime/Int4Weights.h"
#include "attn/runtime/KernelCall.h"
#include "attn/runtime/Status.h"

#include <optional>
#include <string>
#include <vector>

namespace attn::runtime {

enum class OpKind { Embedding, Norm, Attention, Ffn, OutputHead };

/// How a linear kernel reads its weight matrix (the plan's linear_kernels
/// entry, plan::kLinearKernels): its element type, output features per
/// panel ([panel][in][panel features], zero-padded) and inputs per scale
/// (I4: 32, 64 or 128; I8: 16, 32 or 0, a scale per feature; else 0).
struct MatrixLayout {
  DType type = DType::F32;
  int panel = 0;
  int group = 0;
};

/// A linear kernel resolved from the table, and how it reads its weights.
struct LinearKernel : Kernel {
  MatrixLayout weights;
};

/// One op of the plan. Fields apply to the kinds their comments name.
struct PlanOp {
  OpKind kind;
  std::string name;
  std::string stack; ///< "encoder", "decoder", or empty (decoder-only)

  int vocabSize = 0;        ///< embedding, output head
  std::string positions; ///< embedding: none, sinusoidal, learned, sinusoidal_halves
  int maxPositions = 0;     ///< embedding
  int positionOffset = 0;   ///< embedding: learned table rows before row 0
  bool layerNorm = true;    ///< norm: layer norm, else RMS norm
  bool post = false;        ///< norm: normalizes the residual stream in place
  bool residualAdd = false; ///< norm: of the previous sublayer's output,
                            ///< then added to the stream (that sublayer's
                            ///< output kernel adds no residual)
  bool bias = false;        ///< FFN, output head; attention projections
  bool outputBias = false;  ///< attention: the output projection's bias
  int intermediateSize = 0; ///< FFN
  bool gated = false;       ///< FFN: activation(gate)·up
  bool argmax = false; ///< output head: its kernel also writes each token's
                       ///< greedy choice (best_token [tokens] int32)
  bool tied = false;   ///< output head: its weight is the embedding table
  /// Output head: its weights' element type and panel (plan::kWeightDtype,
  /// kWeightPanel): the model's, or the checkpoint's float head's own.
  DType headType = DType::F32;
  int headPanel = 0;
  int64_t headGroup = 0; // inputs per scale of its weights (0: none)
  bool cross = false;  ///< attention: cross (else self)
  int queryHeads = 0, kvHeads = 0, headDim = 0; ///< attention
  float scale = 0;                              ///< attention: of Q·Kᵀ
  bool fusedProjections = false; ///< attention: one Q|K|V projection
  bool fusedCacheAppend = false; ///< attention: the K/V projection stores K
                                 ///< and V into cache slots itself
  bool rope = false; ///< attention: the Q/K projections rotate by position
  /// attention: Q and K RMS-normalized before RoPE (plan::kQkNorm), per
  /// head with a [head_dim] weight each, or over the whole projection with
  /// [heads · head_dim] and [kv_heads · head_dim] weights.
  enum class QkNorm { None, Head, Projection } qkNorm = QkNorm::None;
  bool sinks = false; ///< attention: a sink logit per query head
                      ///< (plan::kSinks)
  bool keyPadding = false; ///< attention: prefill takes per-entry key lengths
  int window = 0; ///< attention: keys slid over (plan::kWindow); 0: all
  bool cached = false;     ///< attention: has a KV cache (decodes)
  int pageSize = 0, maxLength = 0; ///< attention cache
  DType cacheType = DType::F32;    ///< attention cache

  Kernel kernel;                  ///< embedding, norm, output head
  Kernel prefill, decode;         ///< attention
  /// Attention projections: Q (with K and V when fused), K and V (K alone
  /// where `value` computes V, stored at another precision), the output.
  LinearKernel query, keyValue, value, output;
  LinearKernel up, down; ///< FFN (of one expert, with experts)

  /// Attention: multi-head latent attention (plan::kLatent); rank 0: none.
  /// The layer's heads then attend over one key head of headDim = ropeDim
  /// + rank channels (the cache rows [rotated key, latent], keys only),
  /// whose values are the keys; `query` gives each head's [rotated
  /// (ropeDim), nope (nopeDim)] channels (from queryDown's rows, normed by
  /// queryNorm, where queryRank > 0), `keyValue` the rows before the latent's
  /// norm (latentNorm), `absorb` W_ukᵀ and `unabsorb` W_uv per head (expert
  /// kernels, a head per expert), `output` reads valueDim channels a head.
  struct Latent {
    int rank = 0, ropeDim = 0, nopeDim = 0, valueDim = 0, queryRank = 0;
    Kernel queryDown, queryNorm, latentNorm, absorb, unabsorb;
  } latent;
  /// Attention: channels of each head the output projection reads.
  int outputHeadDim() const { return latent.rank ? latent.valueDim : headDim; }

  /// FFN: a mixture of experts (plan::kExperts); count 0: a dense FFN.
  struct Experts {
    /// The router's rule (plan::kRouter): softmax over the logits, or
    /// sigmoid scores chosen with a per-expert bias.
    enum class Rule { SoftmaxTopK, SigmoidTopK } rule = Rule::SoftmaxTopK;
    int count = 0, perToken = 0;
    bool normalize = false; ///< the chosen weights divided by their sum
    /// Group-limited choice (plan::kGroups): 1 group, all eligible.
    int groups = 1, groupTopK = 1;
    double scale = 1.0; ///< multiplies the final weights
    Kernel router;          ///< d_model -> count logits
    DType routerType = DType::F32; ///< its weights' element type
    int routerPanel = 0;           ///< and output features per panel
    /// The experts' weights' element type and panel: the plan's, or the
    /// checkpoint's own (MXFP4, gpt-oss's).
    DType weightType = DType::F32;
    int weightPanel = 0;
    /// Shared experts (plan::kShared): an FFN of the op's kind with
    /// `intermediateSize` hidden features every token runs, its output
    /// scaled by sigmoid(x · g) with `gate`; 0: none.
    struct Shared {
      int intermediateSize = 0;
      bool gate = false;
      Kernel up, down;
    } shared;
  } experts;
};

struct ModelPlan {
  std::string name, kind;
  int dModel = 0;
  int maxBatch = 0;
  /// The compiler's KV-cache total for maxBatch sequences at max length.
  int64_t kvBytes = 0;
  /// How the linear kernels read their weights (F32, F16, BF16, I8 or I4):
  /// what a checkpoint is converted to at load.
  DType weightType = DType::F32;
  /// I4: inputs per scale (32, 64 or 128); I8: 16, 32 or 0 (a scale per
  /// feature); 0 otherwise.
  int weightGroup = 0;
  /// I4 with an f32 minimum per group instead of a zero point (GGUF's Q4_1,
  /// Q4_K): W = u · s + m.
  bool weightMins = false;
  /// i4 weights the checkpoint holds quantized already (GPTQ, AWQ): read as
  /// that format packs them; none: the runtime quantizes float weights.
  std::optional<Int4Format> weightFormat;
  /// Output features per panel of the linear kernels' weights
  /// ([panel][in][weightPanel], zero-padded): how the runtime lays them out.
  int weightPanel = 0;
  /// How a checkpoint names its tensors ("llama", "gpt2", "bart"), where
  /// attnc knew it (Hugging Face configs); empty otherwise.
  std::string weightNaming;
  /// Added to every stored RMS norm weight (plan::kNormWeightOffset).
  float normWeightOffset = 0;
  std::vector<PlanOp> ops;
};

/// Parses `json` (a plan attnc wrote) and resolves its kernels in `table`:
/// the CPU set, or with `device` ("cuda", "opencl") that GPU API's set
/// (`<kernel>_<device>`). Fails naming the first problem: malformed JSON, a
/// missing field, a kernel set or kernel the table lacks, or a plan of
/// attention layers alone (which has no projections to run a model with).
Status parsePlan(const std::string &json, const KernelEntry *table,
                 size_t tableSize, ModelPlan &plan,
                 const std::string &device = "cpu");

} // namespace attn::runtime

#endif // ATTN_RUNTIME_MODELPLAN_H
