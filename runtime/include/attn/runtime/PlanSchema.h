//===- PlanSchema.h - the keys and version of <model>_plan.json -*- C++ -*-===//
//
// The plan attnc writes beside a model library (compiler/PlanWriter.cpp) and
// the runtime (ModelPlan.cpp) and attn-tune read: every key, and the values
// a reader compares against, stated once here. Names only (no code, no
// dependency), so the writer, the readers and tools share one spelling.
// Element types are MLIR's spellings: "f32", "f16", "bf16", "i8", "i4"
// (attn::dtypeName(DType)).
//
// Layout:
//   { plan_version, model, kind, d_model, max_batch, devices[],
//     weight_dtype, weight_naming, weight_panel, weight_group,
//     weight_format, weight_mins, norm_weight_offset,
//     weight_bytes_per_token,
//     kv_bytes_per_token, kv_bytes_per_sequence, kv_bytes,
//     layers: [ { name, kind, num_query_heads, num_kv_heads, head_dim, mask,
//                 scale, stack?, prefill_kernel, projection_bias?,
//                 output_bias?, fused_projections?, fused_cache_append?,
//                 query_kernel?, key_value_kernel?, output_kernel?,
//                 rope_theta?, qk_norm?, sinks?, key_padding?, window?,
//                 latent?: { rank, rope_dim, nope_dim, value_dim,
//                            query_rank, eps, query_down_kernel?,
//                            query_norm_kernel?, latent_norm_kernel,
//                            absorb_kernel, unabsorb_kernel },
//                 decode_kernel?,
//                 kv_cache?: { layout, page_size, dtype, max_length,
//                              bytes_per_token, bytes_per_sequence } } ],
//     kernels: [ { name, symbol, family, num_query_heads, num_kv_heads,
//                  head_dim, causal, window, scale, softcap, alibi,
//                  sinks, key_padding, compute_dtype, page_size?,
//                  kv_dtype?,
//                  schedule?: { query_block, kv_chunk, qk_tile_keys,
//                               pv_tile_rows, split_keys, vector_width,
//                               source } } ],
//     ops: [ { op, name, stack?, ... per op kind below } ] }
// (version 7: an FFN's experts; 8: their shared experts, sigmoid and
// group-limited routers; 9: latent attention layers; 11: the output head's
// weight_dtype and weight_panel; 12: weight_mins, and i8's weight_group;
// 13: the output head's weight_group)
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_PLANSCHEMA_H
#define ATTN_RUNTIME_PLANSCHEMA_H

namespace attn::plan {

/// Raised whenever a key is added, removed or changes meaning; a reader
/// refuses any other version (regenerate the library with this attnc).
inline constexpr int kVersion = 14;

// The model (top level).
inline constexpr char kPlanVersion[] = "plan_version";
inline constexpr char kModel[] = "model";
inline constexpr char kKind[] = "kind"; ///< also a layer's and a norm's kind
inline constexpr char kDModel[] = "d_model";
inline constexpr char kMaxBatch[] = "max_batch";
inline constexpr char kDevices[] = "devices"; ///< "cpu", "cuda", "opencl"
inline constexpr char kCpu[] = "cpu";
inline constexpr char kWeightDtype[] = "weight_dtype";
inline constexpr char kWeightNaming[] = "weight_naming";
inline constexpr char kWeightPanel[] = "weight_panel";
/// i4 weights: inputs per scale (32, 64 or 128); i8 weights: 16 or 32, or
/// 0 (a scale per output feature); 0 for the other types.
inline constexpr char kWeightGroup[] = "weight_group";
/// i4 weights with an f32 minimum per group instead of a zero point
/// (W = u · s + m: GGUF's Q4_1 and Q4_K); false for any other.
inline constexpr char kWeightMins[] = "weight_mins";
/// i4 weights a checkpoint holds quantized already: "gptq", "gptq_v2" or
/// "awq" (Int4Format); "" for weights the runtime quantizes or converts.
inline constexpr char kWeightFormat[] = "weight_format";
inline constexpr char kWeightBytesPerToken[] = "weight_bytes_per_token";
/// What the runtime adds to every stored RMS norm weight, QK-norm's
/// included (Gemma stores w for (1 + w)): 0 for most checkpoints.
inline constexpr char kNormWeightOffset[] = "norm_weight_offset";
inline constexpr char kKvBytesPerToken[] = "kv_bytes_per_token";
inline constexpr char kKvBytesPerSequence[] = "kv_bytes_per_sequence";
inline constexpr char kKvBytes[] = "kv_bytes";
inline constexpr char kLayers[] = "layers";
inline constexpr char kKernels[] = "kernels";
/// Every linear kernel by name: { weight_dtype, weight_panel, weight_group }
/// (kWeightDtype, kWeightPanel, kWeightGroup), how it reads its weights.
inline constexpr char kLinearKernels[] = "linear_kernels";
inline constexpr char kOps[] = "ops";

// Shared by layers, kernels and ops.
inline constexpr char kName[] = "name";
inline constexpr char kStack[] = "stack";
inline constexpr char kNumQueryHeads[] = "num_query_heads";
inline constexpr char kNumKvHeads[] = "num_kv_heads";
inline constexpr char kHeadDim[] = "head_dim";
inline constexpr char kScale[] = "scale";
inline constexpr char kKeyPadding[] = "key_padding";
inline constexpr char kPageSize[] = "page_size";

// An attention layer (kind: "self" or "cross").
inline constexpr char kCross[] = "cross";
inline constexpr char kMask[] = "mask";
inline constexpr char kPrefillKernel[] = "prefill_kernel";
inline constexpr char kDecodeKernel[] = "decode_kernel";
inline constexpr char kQueryKernel[] = "query_kernel";
inline constexpr char kKeyValueKernel[] = "key_value_kernel";
/// V alone, where K (key_value_kernel) and V are stored at different
/// precisions; absent: key_value_kernel computes both.
inline constexpr char kValueKernel[] = "value_kernel";
inline constexpr char kOutputKernel[] = "output_kernel";
inline constexpr char kProjectionBias[] = "projection_bias";
inline constexpr char kOutputBias[] = "output_bias";
inline constexpr char kFusedProjections[] = "fused_projections";
inline constexpr char kFusedCacheAppend[] = "fused_cache_append";
inline constexpr char kRopeTheta[] = "rope_theta";
/// QK-norm's scope ("head": a [head_dim] weight for the queries and one for
/// the keys; "projection": one over all query heads, one over all key
/// heads); absent: none.
inline constexpr char kQkNorm[] = "qk_norm";
inline constexpr char kQkNormHead[] = "head";
inline constexpr char kQkNormProjection[] = "projection";
/// A latent attention layer (#attn.latent; absent: none): its sizes, its
/// norms' eps and its kernels beyond query, key_value and output; the
/// layer's head_dim is then rope_dim + rank, its cache keys only.
inline constexpr char kLatent[] = "latent";
inline constexpr char kRank[] = "rank";
inline constexpr char kRopeDim[] = "rope_dim";
inline constexpr char kNopeDim[] = "nope_dim";
inline constexpr char kValueDim[] = "value_dim";
inline constexpr char kQueryRank[] = "query_rank";
inline constexpr char kQueryDownKernel[] = "query_down_kernel";
inline constexpr char kQueryNormKernel[] = "query_norm_kernel";
inline constexpr char kLatentNormKernel[] = "latent_norm_kernel";
inline constexpr char kAbsorbKernel[] = "absorb_kernel";
inline constexpr char kUnabsorbKernel[] = "unabsorb_kernel";
inline constexpr char kKvCache[] = "kv_cache";
inline constexpr char kLayout[] = "layout";
inline constexpr char kDtype[] = "dtype";
inline constexpr char kMaxLength[] = "max_length";
inline constexpr char kBytesPerToken[] = "bytes_per_token";
inline constexpr char kBytesPerSequence[] = "bytes_per_sequence";

// An attention kernel (for attn-tune: what specializes it).
inline constexpr char kSymbol[] = "symbol";
inline constexpr char kFamily[] = "family"; ///< "prefill" or "decode"
inline constexpr char kPrefill[] = "prefill";
inline constexpr char kCausal[] = "causal";
/// A kernel's and a layer's sliding window in keys (a layer's cache keeps
/// only it); absent or 0: none.
inline constexpr char kWindow[] = "window";
inline constexpr char kSoftcap[] = "softcap";
inline constexpr char kAlibi[] = "alibi";
/// A layer's and its kernels': a sink logit per query head (the layer's
/// "sinks" weight [num_query_heads]); absent: none.
inline constexpr char kSinks[] = "sinks";
inline constexpr char kComputeDtype[] = "compute_dtype";
inline constexpr char kKvDtype[] = "kv_dtype";
inline constexpr char kSchedule[] = "schedule";
inline constexpr char kQueryBlock[] = "query_block";
inline constexpr char kKvChunk[] = "kv_chunk";
inline constexpr char kQkTileKeys[] = "qk_tile_keys";
inline constexpr char kPvTileRows[] = "pv_tile_rows";
inline constexpr char kSplitKeys[] = "split_keys";
inline constexpr char kVectorWidth[] = "vector_width";
inline constexpr char kSource[] = "source";

// Ops, in execution order; "op" says which.
inline constexpr char kOp[] = "op";
inline constexpr char kKernel[] = "kernel";
inline constexpr char kBias[] = "bias";
inline constexpr char kOpAttention[] = "attention";
inline constexpr char kOpEmbedding[] = "embedding";
inline constexpr char kVocabSize[] = "vocab_size";
inline constexpr char kPositions[] = "positions";
inline constexpr char kMaxPositions[] = "max_positions";
inline constexpr char kPositionOffset[] = "position_offset";
inline constexpr char kOpNorm[] = "norm";
inline constexpr char kLayerNorm[] = "layer_norm"; ///< a norm's kind
inline constexpr char kEps[] = "eps";
inline constexpr char kPost[] = "post";
/// A norm of the preceding sublayer's output, added to the stream.
inline constexpr char kResidualAdd[] = "residual_add";
inline constexpr char kOpFfn[] = "ffn";
inline constexpr char kActivation[] = "activation";
inline constexpr char kIntermediateSize[] = "intermediate_size";
inline constexpr char kGated[] = "gated";
inline constexpr char kUpKernel[] = "up_kernel";
inline constexpr char kDownKernel[] = "down_kernel";
/// A mixture-of-experts FFN (absent: dense): { router, count, per_token,
/// normalize, groups, group_top_k, scale, router_kernel, router_dtype,
/// router_panel, weight_dtype, weight_panel, shared? }; up_kernel and
/// down_kernel are then one expert's, and the runtime adds the chosen
/// experts' weighted outputs to the stream. weight_dtype and weight_panel
/// (kWeightDtype, kWeightPanel) are the experts' weights': the model's, or
/// the checkpoint's own (mxfp4: gpt-oss's).
inline constexpr char kExperts[] = "experts";
inline constexpr char kRouter[] = "router"; ///< one of the two below
inline constexpr char kRouterSoftmaxTopK[] = "softmax_top_k";
/// Sigmoid scores, chosen with a per-expert bias (the router's
/// e_score_correction_bias weight, [count]).
inline constexpr char kRouterSigmoidTopK[] = "sigmoid_top_k";
/// Group-limited choice: experts in `groups` equal groups, only the
/// `group_top_k` best groups' eligible (ExpertsAttr); `scale` (kScale)
/// multiplies the weights.
inline constexpr char kGroups[] = "groups";
inline constexpr char kGroupTopK[] = "group_top_k";
inline constexpr char kCount[] = "count";
inline constexpr char kPerToken[] = "per_token";
inline constexpr char kNormalize[] = "normalize";
inline constexpr char kRouterKernel[] = "router_kernel";
/// The router's weights' element type and panel (not the model's where it
/// quantizes to integers: the router stays bf16).
inline constexpr char kRouterDtype[] = "router_dtype";
inline constexpr char kRouterPanel[] = "router_panel";
/// The experts' shared FFN every token runs (absent: none): {
/// intermediate_size, gate, up_kernel, down_kernel }; with `gate` its output
/// is scaled by sigmoid(x · g) (a [d_model] weight) before it is added.
inline constexpr char kShared[] = "shared";
inline constexpr char kSharedGate[] = "gate";
/// An output head: { vocab_size, bias, argmax, tied, kernel, weight_dtype,
/// weight_panel }; weight_dtype and weight_panel (kWeightDtype,
/// kWeightPanel) are its weights': the model's, or a float type of its own
/// (a GPTQ, AWQ or GGUF checkpoint's head as stored).
inline constexpr char kOpOutputHead[] = "output_head";
inline constexpr char kArgmax[] = "argmax";
inline constexpr char kTied[] = "tied";

} // namespace attn::plan

#endif // ATTN_RUNTIME_PLANSCHEMA_H
