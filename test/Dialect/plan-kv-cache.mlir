// RUN: attn-opt %s -split-input-file --attn-plan-kv-cache | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-plan-kv-cache=kv-budget=100000000 -verify-diagnostics

// Bytes per token: 2 (K and V) · KV heads · head size · element bytes; per
// sequence at max length, rounded up to whole pages; for the model, summed
// over layers and multiplied by max_batch. No cache, no bytes.
// CHECK-LABEL: attn.model @plan
// CHECK-SAME: kv_bytes = 59670528 : i64, kv_bytes_per_sequence = 14917632 : i64, kv_bytes_per_token = 7168 : i64
// CHECK: attn.attention_layer @f16_paged {{.*}}kv_bytes_per_sequence = 1032192 : i64, kv_bytes_per_token = 1024 : i64
// CHECK: attn.attention_layer @f32_contiguous {{.*}}kv_bytes_per_sequence = 8192000 : i64, kv_bytes_per_token = 4096 : i64
// CHECK: attn.attention_layer @bf16_mqa {{.*}}kv_bytes_per_sequence = 2048 : i64, kv_bytes_per_token = 256 : i64
// CHECK: attn.attention_layer @big {{.*}}kv_bytes_per_sequence = 5691392 : i64, kv_bytes_per_token = 1792 : i64
// CHECK: attn.attention_layer @encoder self {
// CHECK-NOT: kv_bytes
// CHECK-SAME: }
attn.model @plan attributes {d_model = 512 : i64, kind = "decoder-only", max_batch = 4 : i64} {
  // 2·2·128·2 = 1024 B/token; 1000 tokens → 63 pages of 16 = 1008 tokens.
  attn.attention_layer @f16_paged self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 1000>, head_dim = 128 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
  // 2·8·64·4 = 4096 B/token · 2000.
  attn.attention_layer @f32_contiguous self {cache = #attn.kv_cache<contiguous, page_size = 2000, dtype = f32, max_length = 2000>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 8 : i64, num_query_heads = 8 : i64}
  // 2·1·64·2 = 256 B/token · 8.
  attn.attention_layer @bf16_mqa self {cache = #attn.kv_cache<paged, page_size = 8, dtype = bf16, max_length = 8>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 8 : i64}
  // 2·7·32·4 = 1792 B/token; 3171 tokens → 397 pages of 8 = 3176 tokens.
  attn.attention_layer @big self {cache = #attn.kv_cache<paged, page_size = 8, dtype = f32, max_length = 3171>, head_dim = 32 : i64, mask = #attn.mask<causal>, num_kv_heads = 7 : i64, num_query_heads = 7 : i64}
  attn.attention_layer @encoder self {head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 8 : i64, num_query_heads = 8 : i64}
}

// -----

// 16 B/token: 20,000,000 + 80,000,064 bytes, 64 over the budget.
// expected-error @+1 {{the KV cache needs 95.37 MiB (100000064 bytes) for max_batch 1 at max length, over the budget of 95.37 MiB; largest consumers: @b (76.29 MiB per sequence), @a (19.07 MiB per sequence)}}
attn.model @over attributes {d_model = 512 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // expected-note @+1 {{@a declared here}}
  attn.attention_layer @a self {cache = #attn.kv_cache<paged, page_size = 1, dtype = f32, max_length = 1250000>, head_dim = 1 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 2 : i64}
  // expected-note @+1 {{@b declared here}}
  attn.attention_layer @b self {cache = #attn.kv_cache<paged, page_size = 1, dtype = f32, max_length = 5000004>, head_dim = 1 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 2 : i64}
}

// -----

// A sliding-window layer keeps the pages its window spans: 512 keys over
// pages of 16 touch at most 512/16 + 1 = 33 pages (528 tokens), whatever the
// max length; a window spanning all the pages of its cache keeps them all
// (510 keys of a 520-token cache: 33 pages either way). The budget counts
// the windows: 4096 global + 2 · 528 windowed tokens of 16 B = 82432 B.
// CHECK-LABEL: attn.model @windows
// CHECK-SAME: kv_bytes = 82432 : i64
// CHECK: attn.attention_layer @local {{.*}}kv_bytes_per_sequence = 8448 : i64, kv_bytes_per_token = 16 : i64
// CHECK: attn.attention_layer @wide {{.*}}kv_bytes_per_sequence = 8448 : i64
// CHECK: attn.attention_layer @global {{.*}}kv_bytes_per_sequence = 65536 : i64
attn.model @windows attributes {d_model = 512 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @local self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 4096>, head_dim = 1 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 2 : i64, num_query_heads = 2 : i64, window = 512 : i64}
  attn.attention_layer @wide self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 520>, head_dim = 1 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 2 : i64, num_query_heads = 2 : i64, window = 510 : i64}
  attn.attention_layer @global self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 4096>, head_dim = 1 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 2 : i64}
}
