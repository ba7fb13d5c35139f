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
