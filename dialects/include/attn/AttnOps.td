//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn/AttnAttrs.td"
include "attn/AttnDialect.td"
include "attn/AttnTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// A [batch, sequence, heads, head_dim] activation; batch and sequence may be dynamic.
def Attn_ActivationTensor : 4DTensorOf<[F32]>;

def Attn_PositiveI64 : ConfinedAttr<I64Attr, [IntPositive]>;

// The attention settings attn.sdpa, attn.attention_layer and attn.kernel
// share, stated once: the heads, then (after each op's own mask and scale)
// what shapes the logits. One verifier checks them for all three
// (verifyAttentionSettings, AttnOps.cpp) and one conversion makes them the
// plain attn::AttentionSettings of schedules/ (attnc::attentionSettings).
defvar Attn_HeadSettings = (ins Attn_PositiveI64:$num_query_heads,
                                Attn_PositiveI64:$num_kv_heads,
                                Attn_PositiveI64:$head_dim);
defvar Attn_LogitSettings = (ins OptionalAttr<Attn_PositiveI64>:$window,
                                 OptionalAttr<F32Attr>:$softcap,
                                 UnitAttr:$alibi);

def Attn_SdpaOp : Attn_Op<"sdpa", [Pure]> {
  let summary = "scaled dot-product attention: softmax(Q·Kᵀ·scale + mask)·V";
  let description = [{
    Multi-head scaled dot-product attention at the math level. `query` is
    `[batch, q_len, num_query_heads, head_dim]`; `key` and `value` are
    `[batch, kv_len, num_kv_heads, head_dim]`. Query head `h` reads KV head
    `h / (num_query_heads / num_kv_heads)`, which covers multi-head (equal
    counts), grouped-query and multi-query (one KV head) attention.

    With `causal`, query `i` sees keys `j <= i + (kv_len - q_len)`: the mask is
    aligned to the end of the key sequence, so the same op describes a prefill
    (`q_len == kv_len`) and a decode step over a cache (`q_len < kv_len`).
    `scale` defaults to `1/sqrt(head_dim)`. A query row that sees no key yields 0.
    `window` (with `causal`) also requires `j > i + (kv_len - q_len) - window`;
    `softcap` caps logits to softcap·tanh(logit/softcap); `alibi` adds ALiBi
    biases slope_h·(j - i - (kv_len - q_len)).

    Example (grouped-query attention, 8 query heads sharing 2 KV heads):

    ```mlir
    %o = attn.sdpa %q, %k, %v {causal, head_dim = 64 : i64,
                                num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
        : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>
        -> tensor<?x?x8x64xf32>
    ```
  }];

  let arguments = !con(
    (ins Attn_ActivationTensor:$query, Attn_ActivationTensor:$key,
         Attn_ActivationTensor:$value),
    Attn_HeadSettings,
    (ins UnitAttr:$causal, OptionalAttr<F32Attr>:$scale),
    Attn_LogitSettings);
  let results = (outs Attn_ActivationTensor:$result);

  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,`
    type($value) `->` type($result)
  }];

  let extraClassDeclaration = [{
    /// The scale applied to Q·Kᵀ: the attribute, or 1/sqrt(head_dim).
    float getEffectiveScale();
  }];

  let hasVerifier = 1;
}

def Attn_PositionsTensor : 2DTensorOf<[I32]>;

def Attn_RopeOp : Attn_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of each head's channels";
  let description = [{
    Rotates each head of `input` (`[batch, seq, heads, head_dim]`) by its
    token's position (`positions`, `[batch, seq]`), Hugging Face's
    rotate_half convention: channel `c < head_dim/2` pairs with
    `c + head_dim/2`, and the pair turns by `position · theta^(-2c/head_dim)`.
    `scaling` carries a RoPE scaling rule as its source states it. Applied to
    queries and keys before attention; attnc fuses it into the QKV
    projection's epilogue.

    ```mlir
    %qr = attn.rope %q, %pos {theta = 1.000000e+04 : f32}
        : tensor<?x?x8x64xf32>, tensor<?x?xi32>
    ```
  }];
  let arguments = (ins Attn_ActivationTensor:$input,
                       Attn_PositionsTensor:$positions, F32Attr:$theta,
                       OptionalAttr<DictionaryAttr>:$scaling);
  let results = (outs Attn_ActivationTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions attr-dict `:` type($input) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Attn_ProjectOp : Attn_Op<"project", [Pure, AttrSizedOperandSegments]> {
  let summary = "a projection of token rows: input · weight (+ bias) (+ residual)";
  let description = [{
    Multiplies each token's features by `weight` (`[in, out]`, stored as
    the kernels read it), adds `bias` (`[out]`) and then `residual` (the
    result's type: an output projection finishing its block's residual
    connection). `input` is `[batch, seq, in]` or, heads flattened,
    `[batch, seq, heads, head_dim]` with heads · head_dim = in; the result
    likewise `[batch, seq, out]` or split into heads. attnc computes the
    Q/K/V projections of a layer as one (with RoPE and the cache append in
    its epilogue) and the output projection with its residual.

    ```mlir
    %q = attn.project %x, %wq bias(%bq)
        : (tensor<?x?x512xf32>, tensor<512x512xf32>, tensor<512xf32>)
          -> tensor<?x?x8x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input,
                       2DTensorOf<[F32]>:$weight,
                       Optional<1DTensorOf<[F32]>>:$bias,
                       Optional<RankedTensorOf<[F32]>>:$residual);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `)`)? (`residual` `(` $residual^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_CacheDeclareOp : Attn_Op<"cache_declare", [Pure]> {
  let summary = "an empty KV cache";
  let description = [{
    A cache of the result's type with no tokens for any sequence.

    ```mlir
    %c = attn.cache_declare : !attn.cache<heads = 2, head_dim = 64,
        #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 256>>
    ```
  }];
  let results = (outs Attn_CacheType:$cache);
  let assemblyFormat = "attr-dict `:` qualified(type($cache))";
}

def Attn_CacheAppendOp : Attn_Op<"cache_append",
                                 [Pure, AllTypesMatch<["cache", "result"]>,
                                  AllTypesMatch<["key", "value"]>]> {
  let summary = "the cache with new tokens' keys and values appended";
  let description = [{
    Appends `key` and `value` (`[batch, new_tokens, heads, head_dim]`, fp32,
    converted to the cache's element type) after each sequence's cached
    tokens. Appending past `max_length` is an error at run time (the
    runtime refuses it and keeps the cache unchanged).

    ```mlir
    %c1 = attn.cache_append %c0, %k, %v : !attn.cache<...>, tensor<?x?x2x64xf32>
    ```
  }];
  let arguments = (ins Attn_CacheType:$cache, Attn_ActivationTensor:$key,
                       Attn_ActivationTensor:$value);
  let results = (outs Attn_CacheType:$result);
  let assemblyFormat = [{
    $cache `,` $key `,` $value attr-dict `:` qualified(type($cache)) `,`
    type($key)
  }];
  let hasVerifier = 1;
}

def Attn_CacheViewOp : Attn_Op<"cache_view", [Pure,
                                              AllTypesMatch<["keys", "values"]>]> {
  let summary = "every cached key and value, for a decode step";
  let description = [{
    The cached keys and values (`[batch, kv_len, heads, head_dim]`, read as
    fp32 whatever the storage type), the K and V operands of the decode
    step's `attn.sdpa`. attnc's decode kernels read the pages in place
    instead of materializing this view.

    ```mlir
    %keys, %values = attn.cache_view %c1 : !attn.cache<...> -> tensor<?x?x2x64xf32>
    ```
  }];
  let arguments = (ins Attn_CacheType:$cache);
  let results = (outs Attn_ActivationTensor:$keys,
                      Attn_ActivationTensor:$values);
  let assemblyFormat = [{
    $cache attr-dict `:` qualified(type($cache)) `->` type($keys)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Model level
//===----------------------------------------------------------------------===//

def Attn_ModelOp : Attn_Op<"model", [Symbol, SymbolTable, NoTerminator,
                                      SingleBlock, IsolatedFromAbove]> {
  let summary = "a model: its attention layers and the kernels they use";
  let description = [{
    The unit attnc compiles. Its body holds `attn.attention_layer` ops in
    execution order and, after `--attn-specialize-kernels`, the
    `attn.kernel` ops they reference. `kind` is `decoder-only`, `encoder`
    or `encoder-decoder`; `max_batch` is the number of sequences the KV
    cache is planned for. `weight_dtype` (f32 when absent, f16, bf16, i8 or
    i4) is how the linear kernels read their weights: the runtime converts a
    checkpoint to it once, at load (round to nearest even; i8 symmetric per
    output feature with an f32 scale, absmax / 127, or per group of
    `weight_group` inputs (16 or 32: GGUF's Q6_K and Q8_0) and output
    feature; i4 symmetric per group of `weight_group` inputs (32, 64 or
    128; i4 requires it) and output feature, absmax / 7), and every product
    accumulates in fp32. `weight_naming` (`llama`, `gpt2` or
    `bart`, set by the Hugging Face importer from `model_type`) is how a
    checkpoint of the model names its tensors. `weight_format` (`gptq`,
    `gptq_v2` or `awq`; i4 only) says that the checkpoint holds its linear
    weights quantized already, as that format packs them, with a scale and a
    zero point per group: the runtime repacks them as they are (and
    quantizes only what the checkpoint keeps in floats, the output head),
    and every linear kernel reads zero points (`weight_zeros`).
    `weight_mins` (i4 only, without `weight_format`) says that each group
    of i4 weights has an f32 minimum m instead of a zero point, W = u · s
    + m (GGUF's Q4_1 and Q4_K blocks); every linear kernel of the model's
    i4 weights reads them (the kernels' `weight_mins`).
    `norm_weight_offset` says the checkpoint stores every RMS norm's weight
    as w - offset, QK-norm's included (Gemma: 1, applied as (1 + w)); the
    runtime adds it once, at load.

    ```mlir
    attn.model @tiny attributes {d_model = 256 : i64, kind = "decoder-only",
                                 max_batch = 1 : i64} {
      attn.attention_layer @layer0 self {...}
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Attn_PositiveI64:$d_model,
                       StrAttr:$kind, Attn_PositiveI64:$max_batch,
                       OptionalAttr<TypeAttr>:$weight_dtype,
                       OptionalAttr<StrAttr>:$weight_naming,
                       OptionalAttr<Attn_PositiveI64>:$weight_group,
                       OptionalAttr<StrAttr>:$weight_format,
                       OptionalAttr<F32Attr>:$norm_weight_offset,
                       UnitAttr:$weight_mins);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Attention layers in execution order.
    auto getLayers() { return getBody().getOps<AttentionLayerOp>(); }
    /// A projection's weights: `own` (its #attn.weights) where it has them,
    /// else the model's weight_dtype and weight_group.
    WeightsAttr projectionWeights(WeightsAttr own) {
      if (own)
        return own;
      return WeightsAttr::get(
          getContext(), getWeightDtype().value_or(FloatType::getF32(getContext())),
          int64_t(getWeightGroup().value_or(0)));
    }
    auto getKernels() { return getBody().getOps<KernelOp>(); }
    /// Whether the model describes whole blocks (embeddings, norms, FFNs, an
    /// output head) rather than attention layers alone; only then are its
    /// projections compiled.
    bool hasBlocks() {
      for (Operation &op : getBody().front())
        if (isa<EmbeddingOp, NormOp, FfnOp, OutputHeadOp>(op))
          return true;
      return false;
    }
  }];
}

def Attn_AttentionLayerOp : Attn_Op<"attention_layer",
                                    [Symbol, HasParent<"ModelOp">]> {
  let summary = "one multi-head attention layer and its KV cache";
  let description = [{
    Everything a model declares about one attention layer. `self` layers
    attend to their own sequence (masked for decoders); `cross` layers
    attend to an encoder's output, whose K and V are computed once per
    input. `window` is required with a `sliding_window` mask. `scale`
    defaults to 1/sqrt(head_dim) (`--attn-materialize-defaults` writes it
    out); `softcap` caps logits as softcap·tanh(logit/softcap); `alibi` adds
    ALiBi position biases; `rope_theta`
    enables rotary positions and `rope_scaling` carries a scaling rule as
    its source states it (e.g. `{rope_type = "llama3", factor = 8.0}`):
    `linear` (factor) or `llama3` (factor, low_freq_factor,
    high_freq_factor, original_max_position_embeddings), computed as
    transformers does; `default` is none; other rules are refused;
    `qk_norm` normalizes each query and key head (RMS, with learned
    weights) after the projection and before RoPE (Qwen3, Gemma 3);
    `rope_dim` (partial rotary: Phi-4-mini, GPT-NeoX) rotates only the
    first `rope_dim` channels of each head (pairs c and c + rope_dim/2,
    frequencies over rope_dim), the rest pass through; absent: all;
    `sinks` (gpt-oss): a learned logit per query head (the checkpoint's
    `self_attn.sinks`, `[num_query_heads]`) joins every row's softmax
    denominator and contributes no value;
    `projection_bias` says the Q/K/V/output projections have biases;
    `output_bias`, when present, overrides it for the output projection
    (Qwen2: Q/K/V biases, none on the output).
    `key_padding` says prefill runs over batches of padded sequences: each
    entry's keys past its length are masked (its prefill kernel takes the
    lengths; decode needs nothing, its cache lengths are exact).
    `compute_dtype = bf16` rounds the prefill kernel's matrix-product
    operands (Q, K, V and the softmax probabilities) to bf16, with fp32
    accumulation and an fp32 softmax: about 2x the fp32 rate where the CPU
    has AVX512-BF16, at bf16's precision (relative 2^-9 per operand). Absent
    means f32. It needs an even head_dim. `cache` is absent for layers that never decode
    (an encoder's self-attention). `stack` is `encoder` or `decoder` in
    encoder-decoder models. `prefill_kernel` and `decode_kernel` name the
    kernels `--attn-specialize-kernels` chose.

    Projections: `fused_projections` (set by `--attn-fuse-projections` on
    self-attention layers) says one linear kernel computes Q, K and V (with
    RoPE in its epilogue). After specialization, `query_kernel` computes Q
    (with K and V when fused), `key_value_kernel` K and V when not (from the
    encoder output for cross layers), and `output_kernel` the output
    projection, which also adds the block's residual.
    `fused_cache_append` (set by `--attn-fuse-projections` on cached
    layers) says the projection that computes K and V (a cross layer's: of
    the encoder output) also stores them into the layer's cache slots, in
    the cache dtype, so no separate append pass over K and V runs.
    `query_weights`, `key_weights`, `value_weights` and `output_weights`
    (`#attn.weights`) give a projection weights of their own type, where a
    checkpoint stores them so (absent: the model's `weight_dtype`);
    projections of different types are not fused: Q, K and V fuse when all
    three share a type, K with V (and the cache append) when those two do,
    and otherwise `value_kernel` computes V beside `key_value_kernel`'s K.

    `latent` (`#attn.latent`, DeepSeek's multi-head latent attention) makes
    the layer an attention of `num_query_heads` heads over one shared key
    head of `head_dim` = rope_dim + rank channels (`num_kv_heads` 1) whose
    values are the keys, so its cache holds `head_dim` values per token,
    not 2 · `head_dim`. Its kernels: `query_kernel` (the query, or with a
    query_rank its up projection, `query_down_kernel` and
    `query_norm_kernel` before it), `key_value_kernel` (the shared rotated
    key and the latent), `latent_norm_kernel`, `absorb_kernel` (W_ukᵀ per
    head, an expert kernel with a head per expert), `unabsorb_kernel` (W_uv
    per head) and `output_kernel`. It needs rope_theta, a self layer and
    no projection biases, qk_norm, rope_dim or fused projections.

    ```mlir
    attn.attention_layer @layer0 self {num_query_heads = 8 : i64,
        num_kv_heads = 2 : i64, head_dim = 64 : i64, mask = #attn.mask<causal>,
        cache = #attn.kv_cache<paged, page_size = 16, dtype = f16,
                               max_length = 2048>}
    ```
  }];
  let arguments = !con(
                  (ins SymbolNameAttr:$sym_name, Attn_LayerKind:$kind),
                  Attn_HeadSettings,
                  (ins Attn_MaskKindAttr:$mask, OptionalAttr<F32Attr>:$scale),
                  Attn_LogitSettings,
                  (ins UnitAttr:$key_padding,
                       OptionalAttr<TypeAttr>:$compute_dtype,
                       OptionalAttr<F32Attr>:$rope_theta,
                       OptionalAttr<DictionaryAttr>:$rope_scaling,
                       OptionalAttr<Attn_QkNormAttr>:$qk_norm,
                       OptionalAttr<Attn_PositiveI64>:$rope_dim,
                       UnitAttr:$projection_bias,
                       OptionalAttr<BoolAttr>:$output_bias,
                       OptionalAttr<Attn_KvCacheAttr>:$cache,
                       OptionalAttr<StrAttr>:$stack,
                       OptionalAttr<FlatSymbolRefAttr>:$prefill_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$decode_kernel,
                       UnitAttr:$fused_projections,
                       UnitAttr:$fused_cache_append,
                       OptionalAttr<FlatSymbolRefAttr>:$query_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$key_value_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$output_kernel,
                       UnitAttr:$sinks,
                       OptionalAttr<Attn_LatentAttr>:$latent,
                       OptionalAttr<FlatSymbolRefAttr>:$query_down_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$query_norm_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$latent_norm_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$absorb_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$unabsorb_kernel,
                       OptionalAttr<Attn_WeightsAttr>:$query_weights,
                       OptionalAttr<Attn_WeightsAttr>:$key_weights,
                       OptionalAttr<Attn_WeightsAttr>:$value_weights,
                       OptionalAttr<Attn_WeightsAttr>:$output_weights,
                       OptionalAttr<FlatSymbolRefAttr>:$value_kernel));
  let assemblyFormat = "$sym_name $kind attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the output projection adds a bias.
    bool hasOutputBias() {
      return getOutputBias().value_or(getProjectionBias());
    }
    /// Bytes its cache keeps per token (attn::kvBytesPerToken): keys only
    /// for a latent layer; 0 without a cache.
    int64_t getCacheTokenBytes() {
      KvCacheAttr cache = getCacheAttr();
      return cache ? cache.getTokenBytes(getNumKvHeads(), getHeadDim(),
                                         bool(getLatent()))
                   : 0;
    }
    /// The verifier's checks of a latent layer (and of latent kernels on
    /// another).
    ::mlir::LogicalResult verifyLatent();
    /// The checks of its projections' own weight types (#attn.weights).
    ::mlir::LogicalResult verifyProjectionWeights();
    /// Channels of each head's attention output the output projection
    /// reads: value_dim for a latent layer (after W_uv), else head_dim.
    int64_t getOutputHeadDim() {
      LatentAttr latent = getLatentAttr();
      return latent ? latent.getValueDim() : int64_t(getHeadDim());
    }
  }];
}

//===----------------------------------------------------------------------===//
// The rest of a block
//===----------------------------------------------------------------------===//

def Attn_EmbeddingOp : Attn_Op<"embedding", [Symbol, HasParent<"ModelOp">]> {
  let summary = "token embedding plus positions, the start of a stack";
  let description = [{
    Looks up `vocab_size` rows of `d_model` features, multiplies them by
    `scale` (absent: 1; Marian and BART's `scale_embedding` use
    √d_model) and adds positions: sinusoidal (computed), learned (a table of
    `max_positions` rows, read at position + `position_offset`: BART's
    table starts 2 rows in, so it has max_positions + 2 rows) or none (RoPE
    layers rotate Q and K instead). `stack` is `encoder` or `decoder` in
    encoder-decoder models.

    ```mlir
    attn.embedding @decoder_embedding {vocab_size = 34 : i64,
        positions = #attn.positions<sinusoidal>, max_positions = 64 : i64,
        stack = "decoder"}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Attn_PositiveI64:$vocab_size,
                       Attn_PositionKindAttr:$positions,
                       Attn_PositiveI64:$max_positions,
                       OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<I64Attr>:$position_offset,
                       OptionalAttr<StrAttr>:$stack,
                       OptionalAttr<FlatSymbolRefAttr>:$kernel);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

def Attn_NormOp : Attn_Op<"norm", [Symbol, HasParent<"ModelOp">]> {
  let summary = "a layer norm or RMS norm over d_model features";
  let description = [{
    In a pre-norm block, each attention layer and the FFN read the norm
    placed before them and add their output to the residual stream; a
    stack's final norm follows its last block. A `post` norm normalizes the
    residual stream itself (x = norm(x)), after the sublayer that added to
    it (post-norm blocks: Vaswani et al., Marian, BART) or after an
    embedding (BART's layernorm_embedding); the next sublayer then reads
    the stream. A `residual_add` norm follows an attention layer or FFN and
    normalizes that sublayer's output before it joins the residual stream,
    x = x + norm(sublayer) (Gemma's post-attention and post-feedforward
    norms); the sublayer then leaves the addition to it.

    ```mlir
    attn.norm @layer0_norm layer_norm {eps = 9.99999974E-6 : f32}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Attn_NormKind:$kind,
                       F32Attr:$eps, UnitAttr:$post,
                       OptionalAttr<StrAttr>:$stack,
                       OptionalAttr<FlatSymbolRefAttr>:$kernel,
                       UnitAttr:$residual_add);
  let assemblyFormat = "$sym_name $kind attr-dict";
  let hasVerifier = 1;
}

def Attn_FfnOp : Attn_Op<"ffn", [Symbol, HasParent<"ModelOp">]> {
  let summary = "the feed-forward part of a block: up, activation, down";
  let description = [{
    `d_model` → `intermediate_size` with `activation`, then back to
    `d_model`, added to the residual stream. `gated` (SwiGLU-style, Llama's
    MLP): the up kernel computes a gate and an up half, and the down
    projection reads activation(gate)·up. `bias`: both projections have
    biases. After specialization `up_kernel` and `down_kernel` name the
    linear kernels (the down projection adds the residual).

    With `experts` (a mixture of experts: Mixtral, Qwen3-MoE), the FFN is
    `count` FFNs of this shape, each token running the `per_token` that the
    router picks and the stream receiving their outputs weighted by it;
    `router_kernel` names the router's linear kernel (`d_model` → `count`
    logits), `up_kernel` and `down_kernel` one expert's (the runtime adds
    the weighted sum to the stream). An expert's weights start on a panel
    boundary of the matrix that stacks them all, so `d_model` and
    `intermediate_size` are multiples of 32 (the widest panel). Shared
    experts (the attribute's `shared`) have kernels of their own,
    `shared_up_kernel` and `shared_down_kernel`. With experts, `bias` gives
    the experts' projections and the router biases (gpt-oss).

    `expert_weight_dtype` gives the experts' kernels weights of their own
    type where the checkpoint stores them apart from the model's
    (`!attn.mxfp4`: gpt-oss's published experts); the router and shared
    experts keep the model's.

    `up_weights` and `down_weights` (`#attn.weights`, dense FFNs) give the
    up projection (a gated FFN's gate and up together) and the down
    projection weights of their own type, where a checkpoint stores them so
    (absent: the model's `weight_dtype`).

    `swiglu_alpha` and `swiglu_limit` (gated silu FFNs: gpt-oss's experts)
    change the gated product: the gate's SiLU becomes g·sigmoid(alpha·g),
    and with a limit the gate is first clamped above at `swiglu_limit`, the
    up half to [-limit, limit], and the product is act(gate)·(up + 1).

    ```mlir
    attn.ffn @block0_ffn {activation = #attn.activation<gelu_tanh>,
                          intermediate_size = 512 : i64, bias}
    attn.ffn @block1_ffn {activation = #attn.activation<silu>, gated,
                          intermediate_size = 768 : i64,
                          experts = #attn.experts<softmax_top_k, count = 128,
                                                  per_token = 8,
                                                  normalize = true>}
    attn.ffn @block2_ffn {activation = #attn.activation<silu>, gated, bias,
                          intermediate_size = 2880 : i64,
                          swiglu_alpha = 1.702000e+00 : f32,
                          swiglu_limit = 7.000000e+00 : f32,
                          experts = #attn.experts<softmax_top_k, count = 32,
                                                  per_token = 4,
                                                  normalize = true>}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Attn_ActivationAttr:$activation,
                       Attn_PositiveI64:$intermediate_size, UnitAttr:$bias,
                       UnitAttr:$gated, OptionalAttr<StrAttr>:$stack,
                       OptionalAttr<FlatSymbolRefAttr>:$up_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$down_kernel,
                       OptionalAttr<Attn_ExpertsAttr>:$experts,
                       OptionalAttr<FlatSymbolRefAttr>:$router_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$shared_up_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$shared_down_kernel,
                       OptionalAttr<F32Attr>:$swiglu_alpha,
                       OptionalAttr<F32Attr>:$swiglu_limit,
                       OptionalAttr<TypeAttr>:$expert_weight_dtype,
                       OptionalAttr<Attn_WeightsAttr>:$up_weights,
                       OptionalAttr<Attn_WeightsAttr>:$down_weights);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

def Attn_OutputHeadOp : Attn_Op<"output_head", [Symbol, HasParent<"ModelOp">]> {
  let summary = "the projection from d_model to vocabulary logits";
  let description = [{
    `tied` says its weight is the decoder embedding's table (Hugging Face's
    `tie_word_embeddings`): a checkpoint's own `lm_head.weight`, if any, is
    not what transformers computes with. `softcap` caps each logit to
    softcap·tanh(logit/softcap) (Gemma 2's final_logit_softcapping).
    `weight_dtype` (f32, f16, bf16 or i8; absent: the model's) is the head's
    own weight type: a checkpoint keeps its head at the precision it was
    published in beside quantized blocks (GPTQ's and AWQ's fp16 head, a GGUF
    file's F16 `output.weight` beside Q4_0 blocks), and the head's kernel
    reads it so. `weight_group` (16 or 32, with an i8 `weight_dtype`) gives
    that int8 a scale per group of inputs and output feature (a GGUF file's
    Q6_K or Q8_0 `output.weight` beside blocks of another type); absent, an
    i8 head of its own has a scale per output feature.
    ```mlir
    attn.output_head @output_head {vocab_size = 34 : i64}
    attn.output_head @output_head {vocab_size = 34 : i64, weight_dtype = f16}
    attn.output_head @output_head {vocab_size = 34 : i64, weight_dtype = i8,
                                   weight_group = 16 : i64}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Attn_PositiveI64:$vocab_size, UnitAttr:$bias,
                       OptionalAttr<FlatSymbolRefAttr>:$kernel,
                       UnitAttr:$tied, OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<TypeAttr>:$weight_dtype,
                       OptionalAttr<Attn_PositiveI64>:$weight_group);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def Attn_LinearKernelOp : Attn_Op<"linear_kernel",
                                  [Symbol, HasParent<"ModelOp">]> {
  let summary = "a specialized projection kernel: act(x·W + b) + residual";
  let description = [{
    `weight_dtype` (f32 when absent, f16, bf16, i8, i4, !attn.mxfp4) is the
    element type of W (widened to fp32 as it is read; i8 with a scale per
    output feature, applied once to each sum, or with `weight_group` one per
    group of inputs and output feature, applied to each group's sum; i4
    with a scale and zero point
    per group of `weight_group` inputs and output feature, applied to each
    group's sum; its zero point 8 unless `weight_zeros` gives each group one
    of its own, or, with `weight_mins`, no zero point and an f32 minimum m
    per group, W = u · s + m (each group adding m times its inputs' sum);
    mxfp4 with a power-of-two scale per 32 inputs and output
    feature, applied to each block's sum).
    With `rope_theta` (and the layer's
    `rope_scaling`, which changes the frequencies), the first `rope_heads` heads of `rope_head_dim`
    output features are rotated by their token's position (a fused QKV
    projection's Q and K); with `qk_norm`, each of those heads is
    RMS-normalized with its weight (one input, `[rope_heads · rope_head_dim]`)
    before it is rotated; with `rope_dim`, only the first `rope_dim`
    features of each of those heads rotate. With `input_gate`, the input has 2·in_features
    columns, a gate and an up half, and x is input_gate(gate)·up.
    With `append_kv_heads`, `append_head_dim` and `append_dtype`, the last
    2·append_kv_heads·append_head_dim output features (K, then V) are also
    stored into a KV cache's slots in `append_dtype` (the cache append fused
    into a K/V-producing projection; i8 quantizes each (token, head) row
    and stores its scale too, two more outputs). With `argmax` (an output head's
    kernel), a second output holds each token's greedy choice: the lowest
    index of its largest output, -1 when one of them is NaN. With `softcap`
    (an output head's), each output becomes softcap·tanh(output/softcap)
    first. With `experts` (a mixture's expert up or down kernel), W stacks
    that many matrices of out_features outputs each, whole panels one
    expert after another: the kernel runs on a view of one, and its grouped
    variant (`<name>_experts`) on the stack, input row m multiplying expert
    `expert_index[m]`'s (every expert a decode step chose, in one call).
    `gate_alpha` and `gate_limit` (with `input_gate` silu: the FFN's
    `swiglu_alpha` and `swiglu_limit`) change the gated input to
    g·sigmoid(alpha·g)·u, g and u clamped and u + 1 where a limit is given.

    ```mlir
    attn.linear_kernel @linear_i128_o512_bias_gelu_tanh {
        in_features = 128 : i64, out_features = 512 : i64, bias,
        activation = #attn.activation<gelu_tanh>}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Attn_PositiveI64:$in_features,
                       Attn_PositiveI64:$out_features, UnitAttr:$bias,
                       Attn_ActivationAttr:$activation, UnitAttr:$residual,
                       OptionalAttr<F32Attr>:$rope_theta,
                       OptionalAttr<Attn_PositiveI64>:$rope_heads,
                       OptionalAttr<Attn_PositiveI64>:$rope_head_dim,
                       OptionalAttr<Attn_ActivationAttr>:$input_gate,
                       OptionalAttr<Attn_PositiveI64>:$append_kv_heads,
                       OptionalAttr<Attn_PositiveI64>:$append_head_dim,
                       OptionalAttr<TypeAttr>:$append_dtype,
                       UnitAttr:$argmax,
                       OptionalAttr<DictionaryAttr>:$rope_scaling,
                       OptionalAttr<TypeAttr>:$weight_dtype,
                       OptionalAttr<Attn_PositiveI64>:$weight_group,
                       UnitAttr:$weight_zeros,
                       OptionalAttr<Attn_QkNormAttr>:$qk_norm,
                       OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<Attn_PositiveI64>:$rope_dim,
                       OptionalAttr<Attn_PositiveI64>:$experts,
                       OptionalAttr<F32Attr>:$gate_alpha,
                       OptionalAttr<F32Attr>:$gate_limit,
                       UnitAttr:$weight_mins);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

def Attn_NormKernelOp : Attn_Op<"norm_kernel", [Symbol, HasParent<"ModelOp">]> {
  let summary = "a specialized layer norm or RMS norm kernel";
  let description = [{
    With `residual`, the kernel adds a residual input to the normalized
    rows (a `residual_add` norm).

    ```mlir
    attn.norm_kernel @layer_norm_d128 layer_norm {dim = 128 : i64,
                                                  eps = 9.99999974E-6 : f32}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Attn_NormKind:$kind,
                       Attn_PositiveI64:$dim, F32Attr:$eps,
                       UnitAttr:$residual);
  let assemblyFormat = "$sym_name $kind attr-dict";
}

def Attn_EmbeddingKernelOp : Attn_Op<"embedding_kernel",
                                     [Symbol, HasParent<"ModelOp">]> {
  let summary = "a specialized embedding gather plus positions";
  let description = [{
    ```mlir
    attn.embedding_kernel @embedding_v34_d128_sinusoidal {vocab_size = 34 : i64,
        dim = 128 : i64, positions = #attn.positions<sinusoidal>,
        max_positions = 64 : i64}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Attn_PositiveI64:$vocab_size, Attn_PositiveI64:$dim,
                       Attn_PositionKindAttr:$positions,
                       Attn_PositiveI64:$max_positions,
                       OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<I64Attr>:$position_offset);
  let assemblyFormat = "$sym_name attr-dict";
}

def Attn_KernelOp : Attn_Op<"kernel", [Symbol, HasParent<"ModelOp">]> {
  let summary = "one specialized kernel attnc generates";
  let description = [{
    A kernel for one configuration (heads, head size, mask, scale, cache
    page size and cache element type `kv_dtype`, absent for f32, for
    decode). `window` limits each query to its last `window`
    keys (a causal sliding window). `key_padding` (prefill only) adds a
    per-entry key-length input. `compute_dtype` (prefill only, absent for
    f32) is the precision of the matrix products, as on the layer. `sinks`
    adds an input of a sink logit per query head, as on the layer. Layers
    that agree on all of it share the kernel.
    `schedule` is set by `--attn-select-schedules`.

    ```mlir
    attn.kernel @prefill_h8_kv2_d64_causal prefill {causal,
        num_query_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64,
        scale = 1.250000e-01 : f32}
    ```
  }];
  let arguments = !con(
                  (ins SymbolNameAttr:$sym_name, Attn_KernelFamily:$family),
                  Attn_HeadSettings,
                  (ins UnitAttr:$causal, F32Attr:$scale),
                  Attn_LogitSettings,
                  (ins UnitAttr:$key_padding,
                       OptionalAttr<Attn_PositiveI64>:$page_size,
                       OptionalAttr<TypeAttr>:$kv_dtype,
                       OptionalAttr<TypeAttr>:$compute_dtype,
                       OptionalAttr<Attn_ScheduleAttr>:$schedule,
                       UnitAttr:$sinks));
  let assemblyFormat = "$sym_name $family attr-dict";
  let hasVerifier = 1;
}

#endif // ATTN_OPS_TD
