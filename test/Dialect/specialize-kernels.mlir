// RUN: attn-opt %s -split-input-file --attn-materialize-defaults --attn-specialize-kernels | FileCheck %s

// Identical layers share one prefill and one decode kernel; a layer that
// differs (here: MHA, no mask, another page size) gets its own.
// CHECK-LABEL: attn.model @dedupe
// CHECK-COUNT-3: attn.attention_layer {{.*}}decode_kernel = @decode_h8_kv2_d64_p16_causal{{.*}}prefill_kernel = @prefill_h8_kv2_d64_causal
// CHECK: attn.attention_layer @other self {{{.*}}decode_kernel = @decode_h8_kv8_d64_p32{{.*}}prefill_kernel = @prefill_h8_kv8_d64,
// CHECK: attn.kernel @prefill_h8_kv2_d64_causal prefill {causal, head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64, scale = 1.250000e-01 : f32}
// CHECK-NEXT: attn.kernel @decode_h8_kv2_d64_p16_causal decode {causal, head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64, page_size = 16 : i64, scale = 1.250000e-01 : f32}
// CHECK-NEXT: attn.kernel @prefill_h8_kv8_d64 prefill
// CHECK-NEXT: attn.kernel @decode_h8_kv8_d64_p32 decode
// CHECK-NOT: attn.kernel
attn.model @dedupe attributes {d_model = 512 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @l0 self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
  attn.attention_layer @l1 self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
  attn.attention_layer @l2 self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
  attn.attention_layer @other self {cache = #attn.kv_cache<paged, page_size = 32, dtype = f32, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 8 : i64, num_query_heads = 8 : i64}
}

// -----

// Same shape, different scale: distinct kernels, the second one renamed.
// Layers without a cache (an encoder's) get no decode kernel.
// CHECK-LABEL: attn.model @scales
// CHECK: attn.attention_layer @a self {head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, prefill_kernel = @prefill_h4_kv4_d64, scale
// CHECK: attn.attention_layer @b self {head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, prefill_kernel = @prefill_h4_kv4_d64_0, scale
// CHECK: attn.kernel @prefill_h4_kv4_d64 prefill {{{.*}}scale = 1.250000e-01 : f32}
// CHECK: attn.kernel @prefill_h4_kv4_d64_0 prefill {{{.*}}scale = 5.000000e-01 : f32}
attn.model @scales attributes {d_model = 256 : i64, kind = "encoder", max_batch = 1 : i64} {
  attn.attention_layer @a self {head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64}
  attn.attention_layer @b self {head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = 0.5 : f32}
}

// -----

// A sliding window is part of the kernel signature.
// CHECK-LABEL: attn.model @windows
// CHECK: attn.kernel @prefill_h4_kv4_d64_w64 prefill {causal, head_dim = 64 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = 1.250000e-01 : f32, window = 64 : i64}
// CHECK: attn.kernel @decode_h4_kv4_d64_p16_w64 decode
attn.model @windows attributes {d_model = 256 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @swa self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, window = 64 : i64}
}

// -----

// The cache's element type is part of a decode kernel's signature (not of
// the prefill kernel's, which reads fresh f32 activations).
// CHECK-LABEL: attn.model @dtypes
// CHECK: attn.kernel @prefill_h4_kv4_d64_causal prefill
// CHECK: attn.kernel @decode_h4_kv4_d64_p16_f16_causal decode {causal, head_dim = 64 : i64, kv_dtype = f16,
// CHECK: attn.kernel @decode_h4_kv4_d64_p16_bf16_causal decode {causal, head_dim = 64 : i64, kv_dtype = bf16,
// CHECK: attn.kernel @decode_h4_kv4_d64_p16_causal decode {causal, head_dim = 64 : i64, num_kv_heads
// CHECK-NOT: attn.kernel
attn.model @dtypes attributes {d_model = 256 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @half self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64}
  attn.attention_layer @brain self {cache = #attn.kv_cache<paged, page_size = 16, dtype = bf16, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64}
  attn.attention_layer @full self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64}
}

// -----

// Softcap and ALiBi are part of the signature too.
// CHECK-LABEL: attn.model @capped
// CHECK: attn.kernel @prefill_h4_kv4_d64_cap30_alibi_causal prefill {alibi, causal, head_dim = 64 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = 1.250000e-01 : f32, softcap = 3.000000e+01 : f32}
// CHECK: attn.kernel @decode_h4_kv4_d64_p16_cap30_alibi_causal decode {alibi, causal,
attn.model @capped attributes {d_model = 256 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @capped self {alibi, cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 256>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, softcap = 30.0 : f32}
}

// -----

// Blocks: projections, norms, FFNs, embeddings and the head get kernels too,
// shared by every block that agrees (two identical blocks: one of each).
// The fused QKV projection rotates Q and K (4 + 2 heads of 16) by RoPE; the
// output and FFN down projections add the residual.
// CHECK-LABEL: attn.model @blocks
// CHECK: attn.embedding @embedding {kernel = @embedding_v100_d64_none
// CHECK: attn.norm @n0 rms_norm {eps = {{.*}}, kernel = @rms_norm_d64}
// CHECK: attn.attention_layer @l0 self {{{.*}}output_kernel = @linear_i64_o64_res, prefill_kernel = @prefill_h4_kv2_d16_causal, query_kernel = @linear_i64_o128_rope10000_h6_d16,
// CHECK: attn.ffn @f0 {{{.*}}down_kernel = @linear_i96_o64_res{{.*}}up_kernel = @linear_i64_o96_silu}
// CHECK: attn.attention_layer @l1 self {{{.*}}output_kernel = @linear_i64_o64_res, prefill_kernel = @prefill_h4_kv2_d16_causal, query_kernel = @linear_i64_o128_rope10000_h6_d16,
// CHECK: attn.output_head @output_head {kernel = @linear_i64_o100_argmax, vocab_size = 100 : i64}
// CHECK-DAG: attn.embedding_kernel @embedding_v100_d64_none {dim = 64 : i64, max_positions = 4096 : i64, positions = #attn.positions<none>, vocab_size = 100 : i64}
// CHECK-DAG: attn.norm_kernel @rms_norm_d64 rms_norm {dim = 64 : i64, eps = {{.*}} : f32}
// CHECK-DAG: attn.linear_kernel @linear_i64_o128_rope10000_h6_d16 {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 128 : i64, rope_head_dim = 16 : i64, rope_heads = 6 : i64, rope_theta = 1.000000e+04 : f32}
// CHECK-DAG: attn.linear_kernel @linear_i64_o64_res {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 64 : i64, residual}
// CHECK-DAG: attn.linear_kernel @linear_i64_o96_silu {activation = #attn.activation<silu>, in_features = 64 : i64, out_features = 96 : i64}
// CHECK-DAG: attn.linear_kernel @linear_i96_o64_res {activation = #attn.activation<none>, in_features = 96 : i64, out_features = 64 : i64, residual}
// CHECK-DAG: attn.linear_kernel @linear_i64_o100_argmax {activation = #attn.activation<none>, argmax, in_features = 64 : i64, out_features = 100 : i64}
// CHECK-NOT: attn.norm_kernel
// CHECK: attn.kernel @prefill_h4_kv2_d16_causal prefill
attn.model @blocks attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.embedding @embedding {max_positions = 4096 : i64, positions = #attn.positions<none>, vocab_size = 100 : i64}
  attn.norm @n0 rms_norm {eps = 1.0e-06 : f32}
  attn.attention_layer @l0 self {fused_projections, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, rope_theta = 10000.0 : f32}
  attn.norm @fn0 rms_norm {eps = 1.0e-06 : f32}
  attn.ffn @f0 {activation = #attn.activation<silu>, intermediate_size = 96 : i64}
  attn.norm @n1 rms_norm {eps = 1.0e-06 : f32}
  attn.attention_layer @l1 self {fused_projections, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, rope_theta = 10000.0 : f32}
  attn.norm @fn1 rms_norm {eps = 1.0e-06 : f32}
  attn.ffn @f1 {activation = #attn.activation<silu>, intermediate_size = 96 : i64}
  attn.norm @final rms_norm {eps = 1.0e-06 : f32}
  attn.output_head @output_head {vocab_size = 100 : i64}
}

// -----

// Unfused self-attention computes Q alone and K with V.
// CHECK-LABEL: attn.model @unfused
// CHECK: attn.attention_layer @l0 self {{{.*}}key_value_kernel = @linear_i32_o64_bias{{.*}}output_kernel = @linear_i32_o32_bias_res{{.*}}query_kernel = @linear_i32_o32_bias,
attn.model @unfused attributes {d_model = 32 : i64, kind = "encoder", max_batch = 1 : i64} {
  attn.norm @n0 layer_norm {eps = 1.0e-05 : f32}
  attn.attention_layer @l0 self {head_dim = 8 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, projection_bias}
}

// -----

// The K/V-producing projection of a layer with fused_cache_append stores
// K and V in the cache dtype: the fused QKV kernel, or the K/V kernel.
// CHECK-LABEL: attn.model @append
// CHECK: attn.attention_layer @fused self {{{.*}}query_kernel = @linear_i64_o128_rope10000_h6_d16_append_kv2_d16_bf16,
// CHECK: attn.attention_layer @unfused self {{{.*}}key_value_kernel = @linear_i64_o64_append_kv2_d16_f32{{.*}}query_kernel = @linear_i64_o64,
// CHECK-DAG: attn.linear_kernel @linear_i64_o128_rope10000_h6_d16_append_kv2_d16_bf16 {activation = #attn.activation<none>, append_dtype = bf16, append_head_dim = 16 : i64, append_kv_heads = 2 : i64, in_features = 64 : i64, out_features = 128 : i64, rope_head_dim = 16 : i64, rope_heads = 6 : i64, rope_theta = 1.000000e+04 : f32}
// CHECK-DAG: attn.linear_kernel @linear_i64_o64_append_kv2_d16_f32 {activation = #attn.activation<none>, append_dtype = f32, append_head_dim = 16 : i64, append_kv_heads = 2 : i64, in_features = 64 : i64, out_features = 64 : i64}
attn.model @append attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.norm @n0 rms_norm {eps = 1.0e-06 : f32}
  attn.attention_layer @fused self {cache = #attn.kv_cache<paged, page_size = 16, dtype = bf16, max_length = 64>, fused_cache_append, fused_projections, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, rope_theta = 10000.0 : f32}
  attn.norm @n1 rms_norm {eps = 1.0e-06 : f32}
  attn.attention_layer @unfused self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 64>, fused_cache_append, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64}
}

// -----

// Projections stored at a precision of their own (a GGUF file's Q4_K_M mix:
// some layers' V and down projections in Q6_K beside Q4_K) get kernels of
// that type: @l0's Q and K in the model's i4 with minimums, its V alone in
// i8 in groups of 16 beside a K-only kernel; @f0's down projection in i8.
// @l1 and @f1 read the model's weights and share its kernels.
// CHECK-LABEL: attn.model @mixed
// CHECK: attn.attention_layer @l0 self {{{.*}}key_value_kernel = @linear_i64_o32_rope10000_h2_d16_wi4_g32m,{{.*}}query_kernel = @linear_i64_o64_rope10000_h4_d16_wi4_g32m,{{.*}}value_kernel = @linear_i64_o32_wi8_g16, value_weights = #attn.weights<i8, group = 16>}
// CHECK: attn.ffn @f0 {{{.*}}down_kernel = @linear_i96_o64_res_wi8_g16, down_weights = #attn.weights<i8, group = 16>,{{.*}}up_kernel = @linear_i64_o96_silu_wi4_g32m}
// CHECK: attn.attention_layer @l1 self {{{.*}}key_value_kernel = @linear_i64_o64_rope10000_h2_d16_wi4_g32m,
// CHECK-NOT: value_kernel
// CHECK: attn.ffn @f1 {{{.*}}down_kernel = @linear_i96_o64_res_wi4_g32m,
// CHECK: attn.linear_kernel @linear_i64_o32_wi8_g16 {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 32 : i64, weight_dtype = i8, weight_group = 16 : i64}
// CHECK: attn.linear_kernel @linear_i96_o64_res_wi8_g16 {activation = #attn.activation<none>, in_features = 96 : i64, out_features = 64 : i64, residual, weight_dtype = i8, weight_group = 16 : i64}
attn.model @mixed attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 32 : i64, weight_mins} {
  attn.norm @n0 rms_norm {eps = 1.0e-05 : f32}
  attn.attention_layer @l0 self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, rope_theta = 1.0e+04 : f32, value_weights = #attn.weights<i8, group = 16>}
  attn.norm @n1 rms_norm {eps = 1.0e-05 : f32}
  attn.ffn @f0 {activation = #attn.activation<silu>, intermediate_size = 96 : i64, down_weights = #attn.weights<i8, group = 16>}
  attn.norm @n2 rms_norm {eps = 1.0e-05 : f32}
  attn.attention_layer @l1 self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, rope_theta = 1.0e+04 : f32}
  attn.norm @n3 rms_norm {eps = 1.0e-05 : f32}
  attn.ffn @f1 {activation = #attn.activation<silu>, intermediate_size = 96 : i64}
}
