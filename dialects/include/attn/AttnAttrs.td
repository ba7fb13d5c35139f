//===- AttnAttrs.td - attn dialect attributes --------------*- tablegen -*-===//

#ifndef ATTN_ATTRS_TD
#define ATTN_ATTRS_TD

include "attn/AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_MaskKind : I32EnumAttr<"MaskKind", "which keys a query sees", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Causal", 1, "causal">,
    I32EnumAttrCase<"SlidingWindow", 2, "sliding_window">]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_MaskKindAttr : EnumAttr<Attn_Dialect, Attn_MaskKind, "mask"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_LayerKind : I32EnumAttr<"LayerKind", "where keys and values come from", [
    I32EnumAttrCase<"Self", 0, "self">,
    I32EnumAttrCase<"Cross", 1, "cross">]> {
  let cppNamespace = "::mlir::attn";
}

def Attn_CacheLayout : I32EnumAttr<"CacheLayout", "KV cache layout", [
    I32EnumAttrCase<"Contiguous", 0, "contiguous">,
    I32EnumAttrCase<"Paged", 1, "paged">]> {
  let cppNamespace = "::mlir::attn";
}

def Attn_KernelFamily : I32EnumAttr<"KernelFamily", "kernel family", [
    I32EnumAttrCase<"Prefill", 0, "prefill">,
    I32EnumAttrCase<"Decode", 1, "decode">]> {
  let cppNamespace = "::mlir::attn";
}

def Attn_NormKind : I32EnumAttr<"NormKind", "normalization of a block", [
    I32EnumAttrCase<"LayerNorm", 0, "layer_norm">,
    I32EnumAttrCase<"RmsNorm", 1, "rms_norm">]> {
  let cppNamespace = "::mlir::attn";
}

def Attn_Activation : I32EnumAttr<"Activation", "elementwise activation", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"GeluTanh", 1, "gelu_tanh">,
    I32EnumAttrCase<"Relu", 2, "relu">,
    I32EnumAttrCase<"Silu", 3, "silu">,
    I32EnumAttrCase<"Gelu", 4, "gelu">]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_ActivationAttr : EnumAttr<Attn_Dialect, Attn_Activation,
                                   "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

def Attn_PositionKind : I32EnumAttr<"PositionKind",
                                    "positions added to token embeddings", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Sinusoidal", 1, "sinusoidal">,
    I32EnumAttrCase<"Learned", 2, "learned">,
    I32EnumAttrCase<"SinusoidalHalves", 3, "sinusoidal_halves">]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_PositionKindAttr : EnumAttr<Attn_Dialect, Attn_PositionKind,
                                     "positions"> {
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Attn_KvCacheAttr : AttrDef<Attn_Dialect, "KvCache"> {
  let mnemonic = "kv_cache";
  let summary = "where and how a layer's keys and values are kept";
  let description = [{
    `layout` is `contiguous` (one region of `max_length` tokens per sequence)
    or `paged` (pages of `page_size` tokens from a shared pool). `dtype` is
    the storage element type: f32, f16, bf16 or i8 (symmetric int8 with one
    f32 scale per token and head: max|row| / 127).

    ```mlir
    #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 4096>
    ```
  }];
  let parameters = (ins EnumParameter<Attn_CacheLayout>:$layout,
                        "int64_t":$pageSize, "::mlir::Type":$dtype,
                        "int64_t":$maxLength);
  let assemblyFormat = [{
    `<` $layout `,` `page_size` `=` $pageSize `,` `dtype` `=` $dtype `,`
    `max_length` `=` $maxLength `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of K and V per token (attn::kvBytesPerToken): of the keys
    /// alone where they are the values too (a latent layer).
    int64_t getTokenBytes(int64_t kvHeads, int64_t headDim,
                          bool keysOnly = false) const;
  }];
}

def Attn_QkNormScope : I32EnumAttr<"QkNormScope",
                                    "what one RMS norm of a query or key spans", [
    I32EnumAttrCase<"Head", 0, "head">,
    I32EnumAttrCase<"Projection", 1, "projection">]> {
  let cppNamespace = "::mlir::attn";
}

def Attn_QkNormAttr : AttrDef<Attn_Dialect, "QkNorm"> {
  let mnemonic = "qk_norm";
  let summary = "an RMS norm of each query and key before RoPE (QK-norm)";
  let description = [{
    `head`: each query head and each key head of `head_dim` channels is
    divided by sqrt(mean(x²) + eps) and multiplied by a learned
    `[head_dim]` weight, one for the queries and one for the keys (Qwen3,
    Gemma 3), in fp32, before RoPE rotates it. `projection`: all the query
    heads together (`[heads · head_dim]` features, one weight of that size)
    and all the key heads together (`[kv_heads · head_dim]`), OLMo 2's. attnc
    computes either in the epilogue of the projection that produces Q and K.

    ```mlir
    #attn.qk_norm<head, eps = 9.99999997E-7 : f32>
    ```
  }];
  let parameters = (ins EnumParameter<Attn_QkNormScope>:$scope,
                        "::mlir::FloatAttr":$eps);
  let assemblyFormat = "`<` $scope `,` `eps` `=` $eps `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    float getEpsValue() const { return getEps().getValue().convertToFloat(); }
  }];
}

def Attn_WeightsAttr : AttrDef<Attn_Dialect, "Weights"> {
  let mnemonic = "weights";
  let summary = "how one projection's kernel reads its weight matrix";
  let description = [{
    A projection's own weight type where a checkpoint stores it at a
    precision of its own (a GGUF file's Q4_K_M mix: Q6_K values beside Q4_K
    queries): `dtype` (f32, f16, bf16, i8 or i4) and, for i8 and i4, the
    inputs per scale, `group` (i8: 16 or 32, absent: a scale per output
    feature; i4: 32, 64 or 128, required), as the model's `weight_dtype`
    and `weight_group` say for the rest. i4 weights keep the model's rule
    for their offsets (its `weight_mins`, else the zero point 8).

    ```mlir
    #attn.weights<i8, group = 16>
    ```
  }];
  let parameters = (ins "::mlir::Type":$dtype,
                        DefaultValuedParameter<"int64_t", "0">:$group);
  let assemblyFormat = "`<` $dtype (`,` `group` `=` $group^)? `>`";
  let genVerifyDecl = 1;
}

def Attn_LatentAttr : AttrDef<Attn_Dialect, "Latent"> {
  let mnemonic = "latent";
  let summary = "multi-head latent attention: a KV cache of one latent per token";
  let description = [{
    DeepSeek's multi-head latent attention (MLA). Each token's keys and
    values come from one compressed latent of `rank` channels (the
    checkpoint's `kv_a_proj_with_mqa`, then an RMS norm `kv_a_layernorm`
    with `eps`) and a key of `rope_dim` channels every head shares, rotated
    by RoPE; the cache holds those `rope_dim + rank` values per token and
    nothing else. Head h's key is [W_uk_h · latent (`nope_dim`), the shared
    rotated key] and its value W_uv_h · latent (`value_dim`), W_uk and W_uv
    the rows of `kv_b_proj`. The query is `q_proj` of the token, or with
    `query_rank` the low-rank path `q_b_proj(norm(q_a_proj(x)))` (an RMS
    norm of `query_rank` channels, `q_a_layernorm`); each head's first
    `nope_dim` channels meet the latent part of the key, its last
    `rope_dim` channels (rotated) the shared key.

    attnc computes it absorbed, as an attention of `num_query_heads` heads
    over one key head of `head_dim = rope_dim + rank` channels whose values
    are the keys themselves: head h's query is [its rotated channels,
    W_uk_hᵀ · its other channels], and W_uv_h maps the latent part of its
    output back to `value_dim` channels before the output projection. The
    layer's `scale` multiplies the logits as stated (DeepSeek:
    (nope_dim + rope_dim)^-1/2, times YaRN's mscale²; the default is the
    former). The checkpoint's RoPE channels come in interleaved pairs (rope
    interleave, as DeepSeek stores them): the runtime reorders them at
    load, which the dot products do not see.

    ```mlir
    #attn.latent<rank = 512, rope_dim = 64, nope_dim = 128, value_dim = 128,
                 query_rank = 1536, eps = 9.99999997E-7 : f32>
    ```
  }];
  // Named as printed; query_rank elided at 0 (a direct q_proj).
  let parameters = (ins "int64_t":$rank, "int64_t":$rope_dim,
                        "int64_t":$nope_dim, "int64_t":$value_dim,
                        DefaultValuedParameter<"int64_t", "0">:$query_rank,
                        "::mlir::FloatAttr":$eps);
  let assemblyFormat = [{
    `<` struct($rank, $rope_dim, $nope_dim, $value_dim, $query_rank, $eps) `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    float getEpsValue() const { return getEps().getValue().convertToFloat(); }
    /// Channels of one head's query and key before absorption.
    int64_t getQueryHeadDim() const { return getNopeDim() + getRopeDim(); }
  }];
}

def Attn_RouterKind : I32EnumAttr<"RouterKind",
                                  "how a token's experts are chosen and weighted", [
    I32EnumAttrCase<"SoftmaxTopK", 0, "softmax_top_k">,
    I32EnumAttrCase<"SigmoidTopK", 1, "sigmoid_top_k">]> {
  let cppNamespace = "::mlir::attn";
}

def Attn_ExpertsAttr : AttrDef<Attn_Dialect, "Experts"> {
  let mnemonic = "experts";
  let summary = "a mixture-of-experts FFN: how many experts, how many a token uses";
  let description = [{
    The FFN holds `count` experts of the FFN's shape; a router (a linear map
    of the normed token to `count` logits) picks `per_token` of them for
    each token, and the FFN's output is the weighted sum of theirs.
    `softmax_top_k` (Mixtral, Qwen3-MoE): softmax over all the logits, the
    `per_token` largest (the lower expert first on ties), their
    probabilities as the weights, divided by their sum when `normalize`
    (Mixtral always; Qwen3-MoE's `norm_topk_prob`). `sigmoid_top_k`
    (DeepSeek-V3): each expert's score is the sigmoid of its logit; the
    experts are chosen by score plus a learned per-expert bias (the
    checkpoint's `e_score_correction_bias`, `[count]`), weighted by their
    scores without it, divided by their sum when `normalize`.

    With `groups` (DeepSeek's `n_group`), the experts form that many equal
    groups and only the `group_top_k` best groups' experts can be chosen: a
    group's score is its largest selection score (`softmax_top_k`,
    DeepSeek-V2's group-limited greedy) or the sum of its two largest
    (`sigmoid_top_k`, DeepSeek-V3's); the other experts' selection scores
    become 0, as transformers masks them. `scale` (`routed_scaling_factor`)
    multiplies the final weights.

    With `shared` (Qwen2-MoE, DeepSeek), every token also runs a shared
    FFN of the FFN's kind with `shared` hidden features, added unweighted —
    or, with `shared_gate` (Qwen2-MoE's `shared_expert_gate`), scaled by
    sigmoid(x · g), g a learned `[d_model]` vector.

    ```mlir
    #attn.experts<softmax_top_k, count = 8, per_token = 2, normalize = true>
    #attn.experts<softmax_top_k, count = 60, per_token = 4, normalize = false,
                  shared = 5632, shared_gate = true>
    #attn.experts<sigmoid_top_k, count = 256, per_token = 8, normalize = true,
                  shared = 2048, groups = 8, group_top_k = 4,
                  scale = 2.500000e+00 : f32>
    ```
  }];
  // Named as printed (a struct: the optional ones in any order, elided at
  // their defaults); the getters are camel case (getPerToken).
  let parameters = (ins EnumParameter<Attn_RouterKind>:$router,
                        "int64_t":$count, "int64_t":$per_token,
                        "::mlir::BoolAttr":$normalize,
                        DefaultValuedParameter<"int64_t", "0">:$shared,
                        OptionalParameter<"::mlir::BoolAttr">:$shared_gate,
                        DefaultValuedParameter<"int64_t", "1">:$groups,
                        DefaultValuedParameter<"int64_t", "1">:$group_top_k,
                        OptionalParameter<"::mlir::FloatAttr">:$scale);
  let assemblyFormat = [{
    `<` $router `,` struct($count, $per_token, $normalize, $shared,
                           $shared_gate, $groups, $group_top_k, $scale) `>`
  }];
  let extraClassDeclaration = [{
    /// `scale`, 1 when absent.
    double getScaleValue() const {
      return getScale() ? getScale().getValueAsDouble() : 1.0;
    }
  }];
  let genVerifyDecl = 1;
}

def Attn_ScheduleAttr : AttrDef<Attn_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "the tunable loop-nest parameters of a kernel";
  let description = [{
    Prefill kernels use `query_block` (query rows per task), `kv_chunk` (keys
    per online-softmax step) and the register tiles `qk_tile_keys` and
    `pv_tile_rows`; decode kernels use `split_keys` (keys per split-KV task).
    `vector_width` 0 means the target's natural width. `source` says who
    chose it: `heuristic` or `db` (a tuning database entry).
  }];
  let parameters = (ins "int64_t":$queryBlock, "int64_t":$kvChunk,
                        "int64_t":$qkTileKeys, "int64_t":$pvTileRows,
                        "int64_t":$splitKeys, "int64_t":$vectorWidth,
                        StringRefParameter<"heuristic or db">:$source);
  let assemblyFormat = [{
    `<` `query_block` `=` $queryBlock `,` `kv_chunk` `=` $kvChunk `,`
    `qk_tile_keys` `=` $qkTileKeys `,` `pv_tile_rows` `=` $pvTileRows `,`
    `split_keys` `=` $splitKeys `,` `vector_width` `=` $vectorWidth `,`
    `source` `=` $source `>`
  }];
  let genVerifyDecl = 1;
}

#endif // ATTN_ATTRS_TD
