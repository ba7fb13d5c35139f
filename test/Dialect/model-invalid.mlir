// RUN: attn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{kind must be decoder-only, encoder or encoder-decoder, got "decoder"}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder", max_batch = 1 : i64} {
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{a window is required with, and only with, a sliding_window mask}}
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, window = 4 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{prefill_kernel @missing does not name a kernel of the model}}
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, prefill_kernel = @missing}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{KV cache dtype must be f32, f16, bf16 or i8, got 'ui8'}}
  attn.attention_layer @l self {cache = #attn.kv_cache<paged, page_size = 16, dtype = ui8, max_length = 64>, head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{page_size is required by, and only by, decode kernels}}
  attn.kernel @k decode {head_dim = 8 : i64, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, scale = 0.5 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{schedule source must be "heuristic" or "db"}}
  attn.kernel @k prefill {head_dim = 8 : i64, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, scale = 0.5 : f32, schedule = #attn.schedule<query_block = 64, kv_chunk = 128, qk_tile_keys = 8, pv_tile_rows = 4, split_keys = 256, vector_width = 0, source = "guess">}
}

// -----

// expected-error @+1 {{'attn.attention_layer' op expects parent op 'attn.model'}}
attn.attention_layer @orphan self {head_dim = 8 : i64, mask = #attn.mask<none>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{an FFN needs an activation (gelu, gelu_tanh, relu or silu)}}
  attn.ffn @f {activation = #attn.activation<none>, intermediate_size = 32 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{eps must be in (0, 1], got -1}}
  attn.norm @n layer_norm {eps = -1.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{stack must be encoder or decoder, got "middle"}}
  attn.embedding @e {max_positions = 8 : i64, positions = #attn.positions<learned>, stack = "middle", vocab_size = 10 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{rope_theta, rope_heads and rope_head_dim come together}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 8 : i64, rope_theta = 10000.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{rope_heads · rope_head_dim (16) exceeds out_features (8)}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 8 : i64, rope_theta = 10000.0 : f32, rope_heads = 2 : i64, rope_head_dim = 8 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{append_kv_heads, append_head_dim and append_dtype come together}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 32 : i64, append_kv_heads = 1 : i64, append_head_dim = 8 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{the appended K and V (2 · append_kv_heads · append_head_dim = 32) exceed out_features (24)}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 24 : i64, append_kv_heads = 2 : i64, append_head_dim = 8 : i64, append_dtype = f16}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{append_dtype must be f32, f16, bf16 or i8, got 'f64'}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 32 : i64, append_kv_heads = 1 : i64, append_head_dim = 8 : i64, append_dtype = f64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{argmax (an output head's) and the cache append do not combine}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 32 : i64, append_kv_heads = 1 : i64, append_head_dim = 8 : i64, append_dtype = f32, argmax}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{experts must be in [2, 4096], got 1}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 32 : i64, experts = 1 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{experts need out_features to be a multiple of 32, got 48}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 48 : i64, experts = 4 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{an expert kernel has no RoPE, cache append or argmax}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 32 : i64, experts = 4 : i64, argmax}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{fused_cache_append needs a layer with a cache}}
  attn.attention_layer @l self {fused_cache_append, head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{kernel @nowhere does not name a kernel of the model}}
  attn.output_head @h {kernel = @nowhere, vocab_size = 10 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{a sliding window of 4096 tokens is longer than the cache's max_length (100)}}
  attn.attention_layer @l self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 100>, head_dim = 8 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, window = 4096 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{cross-attention needs an encoder, but the model's kind is "decoder-only"}}
  attn.attention_layer @l cross {head_dim = 8 : i64, mask = #attn.mask<none>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
  // expected-error @+2 {{redefinition of symbol named 'l'}}
  // expected-note @-2 {{see existing symbol definition here}}
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
}

// -----

// Sizes beyond attnc's limits (attn/Limits.h) are refused in .mlir input as
// in descriptions: 2^40 heads or d_model used to reach the backend (SIGFPE)
// and a 2^63 - 1 max_length overflowed the cache's byte count.
// expected-error @+1 {{d_model must be at most 1048576, got 1099511627776}}
attn.model @m attributes {d_model = 1099511627776 : i64, kind = "decoder-only", max_batch = 1 : i64} {
}

// -----

// expected-error @+1 {{max_batch must be at most 65536, got 9223372036854775807}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 9223372036854775807 : i64} {
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{num_query_heads must be at most 65536, got 1099511627776}}
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1099511627776 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{(num_query_heads + 2 * num_kv_heads) * head_dim must be at most 67108864, got 201326592}}
  attn.attention_layer @l self {head_dim = 65536 : i64, mask = #attn.mask<causal>, num_kv_heads = 512 : i64, num_query_heads = 2048 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{KV cache max_length must be in [1, 1073741824], got 9223372036854775807}}
  attn.attention_layer @l self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 9223372036854775807>, head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{KV cache page_size must be in [1, 1048576], got 1099511627776}}
  attn.attention_layer @l self {cache = #attn.kv_cache<paged, page_size = 1099511627776, dtype = f32, max_length = 64>, head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{eps must be in (0, 1], got 1.099512e+12}}
  attn.norm @n layer_norm {eps = 1099511627776.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{vocab_size must be at most 16777216, got 1099511627776}}
  attn.output_head @h {vocab_size = 1099511627776 : i64}
}

// -----

// The attention settings attn.sdpa, attn.attention_layer and attn.kernel
// share are checked alike for all three (verifyAttentionSettings): a kernel
// gets the limits, the window rule and the softcap check a layer gets.
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{num_query_heads must be at most 65536, got 1099511627776}}
  attn.kernel @k prefill {head_dim = 8 : i64, num_kv_heads = 1099511627776 : i64, num_query_heads = 1099511627776 : i64, scale = 0.5 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{a sliding window needs a causal mask}}
  attn.kernel @k prefill {head_dim = 8 : i64, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, scale = 0.5 : f32, window = 4 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{softcap must be positive and finite}}
  attn.kernel @k prefill {causal, head_dim = 8 : i64, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, scale = 0.5 : f32, softcap = -30.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{scale must be positive and finite}}
  attn.kernel @k prefill {head_dim = 8 : i64, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, scale = 0x7F800000 : f32}
}

// -----

// i4 weights come with a group of inputs per scale; i8 weights may, and
// no other weights do.
// expected-error @+1 {{i4 weights need a weight_group}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4} {
}

// -----

// expected-error @+1 {{weight_group applies to i4 and i8 weights only}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = bf16, weight_group = 64 : i64} {
}

// -----

// expected-error @+1 {{weight_group must be 16 or 32 for i8 weights, got 64}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i8, weight_group = 64 : i64} {
}

// -----

// A checkpoint's own int4 format: one of three, and i4 weights only.
// expected-error @+1 {{weight_format must be gptq, gptq_v2 or awq}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 128 : i64, weight_format = "marlin"} {
}

// -----

// expected-error @+1 {{weight_format gptq holds i4 weights: weight_dtype must be i4}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = bf16, weight_format = "gptq"} {
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{weight_zeros applies to i4 weights only}}
  attn.linear_kernel @l {in_features = 8 : i64, out_features = 8 : i64, activation = #attn.activation<none>, weight_zeros}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 128 : i64} {
  // expected-error @+1 {{weight_group must be 32, 64 or 128 for i4 weights, got 96}}
  attn.linear_kernel @l {in_features = 8 : i64, out_features = 8 : i64, activation = #attn.activation<none>, weight_dtype = i4, weight_group = 96 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{KV cache dtype must be f32, f16, bf16 or i8, got 'i4'}}
  attn.attention_layer @l self {cache = #attn.kv_cache<paged, page_size = 16, dtype = i4, max_length = 64>, head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{qk_norm is computed beside RoPE: it needs rope_theta}}
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, qk_norm = #attn.qk_norm<head, eps = 1.0e-6 : f32>}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "encoder-decoder", max_batch = 1 : i64} {
  // expected-error @+1 {{qk_norm applies to self-attention layers}}
  attn.attention_layer @l cross {head_dim = 8 : i64, mask = #attn.mask<none>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, qk_norm = #attn.qk_norm<head, eps = 1.0e-6 : f32>, rope_theta = 10000.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{qk_norm eps must be positive and finite, got -1}}
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, qk_norm = #attn.qk_norm<head, eps = -1.0 : f32>, rope_theta = 10000.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{qk_norm eps must be an f32 number}}
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, qk_norm = #attn.qk_norm<head, eps = 1.0e-6 : f64>, rope_theta = 10000.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{qk_norm normalizes the rope_heads: it needs rope_theta}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 8 : i64, qk_norm = #attn.qk_norm<head, eps = 1.0e-6 : f32>}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // 3 RoPE heads of 16 then 64 features: 4 more heads, more keys than RoPE heads.
  // expected-error @+1 {{a projection qk_norm needs out_features to be the RoPE heads and as many value heads as key heads after them, got out_features 112 for 3 RoPE heads of 16}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 112 : i64, qk_norm = #attn.qk_norm<projection, eps = 1.0e-6 : f32>, rope_head_dim = 16 : i64, rope_heads = 3 : i64, rope_theta = 10000.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{a projection qk_norm needs out_features to be the RoPE heads and as many value heads as key heads after them, got out_features 56 for 3 RoPE heads of 16}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 8 : i64, out_features = 56 : i64, qk_norm = #attn.qk_norm<projection, eps = 1.0e-6 : f32>, rope_head_dim = 16 : i64, rope_heads = 3 : i64, rope_theta = 10000.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+2 {{expected ::mlir::attn::QkNormScope to be one of: head, projection}}
  // expected-error @+1 {{failed to parse Attn_QkNormAttr parameter 'scope'}}
  attn.attention_layer @l self {head_dim = 8 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 1 : i64, qk_norm = #attn.qk_norm<layer, eps = 1.0e-6 : f32>, rope_theta = 10000.0 : f32}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.norm @pre rms_norm {eps = 1.0e-6 : f32}
  // expected-error @+1 {{a residual_add norm follows an attention layer or an FFN, whose output it normalizes}}
  attn.norm @n rms_norm {eps = 1.0e-6 : f32, residual_add}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.ffn @f {activation = #attn.activation<silu>, intermediate_size = 32 : i64}
  // expected-error @+1 {{a norm is post or residual_add, not both}}
  attn.norm @n rms_norm {eps = 1.0e-6 : f32, post, residual_add}
}

// -----

attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{softcap must be positive and finite}}
  attn.output_head @head {softcap = -30.0 : f32, vocab_size = 100 : i64}
}

// -----

// A head's own type is not i4: an int4 head is the blocks' type, in their groups.
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 32 : i64} {
  // expected-error @+1 {{weight_dtype must be f32, f16, bf16 or i8, got 'i4'}}
  attn.output_head @head {vocab_size = 100 : i64, weight_dtype = i4}
}

// -----

// A head's own int8 may have groups (a GGUF file's Q6_K head), of 16 or 32.
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 32 : i64} {
  // expected-error @+1 {{weight_group must be 16 or 32 for i8 weights, got 64}}
  attn.output_head @head {vocab_size = 100 : i64, weight_dtype = i8, weight_group = 64 : i64}
}

// -----

// ... only its own int8.
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 32 : i64} {
  // expected-error @+1 {{weight_group needs weight_dtype i8}}
  attn.output_head @head {vocab_size = 100 : i64, weight_dtype = bf16, weight_group = 16 : i64}
}

// -----

// expected-error @+1 {{weight_naming must be llama, gemma, gemma3, phi3, mixtral, deepseek, gpt_oss, gpt2, bart; got phi}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_naming = "phi"} {
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{experts per_token must be in [1, count = 4], got 5}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 96 : i64, experts = #attn.experts<softmax_top_k, count = 4, per_token = 5, normalize = true>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{experts count must be in [2, 4096], got 1}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 96 : i64, experts = #attn.experts<softmax_top_k, count = 1, per_token = 1, normalize = true>}
}

// -----

attn.model @m attributes {d_model = 48 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{experts need d_model and intermediate_size to be multiples of 32, got 48 and 96}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 96 : i64, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = false>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{a router_kernel needs experts}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 96 : i64, router_kernel = @k}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{experts shared_gate needs shared experts}}
  attn.ffn @f {activation = #attn.activation<silu>, intermediate_size = 32 : i64, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = true, shared_gate = true>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{shared expert kernels need experts with shared}}
  attn.ffn @f {activation = #attn.activation<silu>, intermediate_size = 32 : i64, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = true>, shared_up_kernel = @k}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{experts groups must divide count = 16, got 3}}
  attn.ffn @f {activation = #attn.activation<silu>, intermediate_size = 32 : i64, experts = #attn.experts<sigmoid_top_k, count = 16, per_token = 2, normalize = true, groups = 3>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{sigmoid_top_k scores a group by its two best experts: groups need 2 experts or more}}
  attn.ffn @f {activation = #attn.activation<silu>, intermediate_size = 32 : i64, experts = #attn.experts<sigmoid_top_k, count = 4, per_token = 1, normalize = true, groups = 4, group_top_k = 2>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{experts scale must be positive and finite}}
  attn.ffn @f {activation = #attn.activation<silu>, intermediate_size = 32 : i64, experts = #attn.experts<softmax_top_k, count = 4, per_token = 1, normalize = true, scale = -1.0 : f32>}
}

// -----

// gpt-oss's gated product changes a gated silu FFN's.
attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{swiglu_alpha and swiglu_limit change a gated silu FFN's product; this FFN is not gated, silu}}
  attn.ffn @f {activation = #attn.activation<silu>, intermediate_size = 32 : i64, swiglu_limit = 7.0 : f32}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{this FFN is gated gelu}}
  attn.ffn @f {activation = #attn.activation<gelu>, gated, intermediate_size = 32 : i64, swiglu_alpha = 1.702 : f32}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{swiglu_limit must be positive and finite}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 32 : i64, swiglu_limit = 0.0 : f32}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{gate_alpha and gate_limit change a silu input_gate}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 32 : i64, out_features = 64 : i64, gate_limit = 7.0 : f32}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{gate_alpha must be positive and finite}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 32 : i64, out_features = 64 : i64, input_gate = #attn.activation<silu>, gate_alpha = -1.0 : f32}
}

// -----

// MXFP4 is a checkpoint's experts' type, not a whole model's.
// expected-error @+1 {{!attn.mxfp4 is the weight type of a checkpoint's experts (attn.ffn's expert_weight_dtype), not a model's}}
attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = !attn.mxfp4} {
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{expert_weight_dtype needs experts}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 32 : i64, expert_weight_dtype = !attn.mxfp4}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{expert_weight_dtype must be f32, f16, bf16, i8 or !attn.mxfp4, got 'i4'}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 32 : i64, expert_weight_dtype = i4, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = true>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{weight_group applies to i4 and i8 weights only}}
  attn.linear_kernel @k {activation = #attn.activation<none>, in_features = 32 : i64, out_features = 64 : i64, weight_dtype = !attn.mxfp4, weight_group = 32 : i64}
}

// -----

// A projection's own weights (#attn.weights): their dtype and group, and
// the layouts one kernel cannot read.
attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{#attn.weights group must be 32, 64 or 128 for i4 weights, got 0}}
  attn.attention_layer @l self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, value_weights = #attn.weights<i4>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{#attn.weights group must be 16 or 32 for i8 weights (or absent), got 64}}
  attn.attention_layer @l self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, value_weights = #attn.weights<i8, group = 64>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{#attn.weights dtype must be f32, f16, bf16, i8 or i4, got '!attn.mxfp4'}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 32 : i64, down_weights = #attn.weights<!attn.mxfp4>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{#attn.weights group applies to i4 and i8 weights only}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 32 : i64, up_weights = #attn.weights<bf16, group = 32>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 32 : i64} {
  // expected-error @+1 {{fused_projections needs Q, K and V of one weight type, got #attn.weights<i4, group = 32>, #attn.weights<i4, group = 32> and #attn.weights<i8, group = 16>}}
  attn.attention_layer @l self {fused_projections, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, value_weights = #attn.weights<i8, group = 16>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{fused_cache_append needs K and V of one weight type (one kernel computes both), got #attn.weights<f32> and #attn.weights<bf16>}}
  attn.attention_layer @l self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 64>, fused_cache_append, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, value_weights = #attn.weights<bf16>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "encoder-decoder", max_batch = 1 : i64} {
  attn.norm @n layer_norm {eps = 1.0e-05 : f32, stack = "encoder"}
  // expected-error @+1 {{a cross layer's K and V are one projection of the encoder output: they need one weight type}}
  attn.attention_layer @l cross {head_dim = 16 : i64, key_weights = #attn.weights<bf16>, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "decoder"}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{a value_kernel computes V beside a key_value_kernel's K, where their weight types differ}}
  attn.attention_layer @l self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, value_kernel = @v}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_format = "gptq", weight_group = 32 : i64} {
  // expected-error @+1 {{a model with a weight_format reads every projection in it: no projection has weights of its own}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 32 : i64, down_weights = #attn.weights<i8>}
}

// -----

attn.model @m attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-error @+1 {{up_weights and down_weights apply to dense FFNs (experts have expert_weight_dtype)}}
  attn.ffn @f {activation = #attn.activation<silu>, gated, intermediate_size = 32 : i64, down_weights = #attn.weights<bf16>, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = true>}
}
