// RUN: attn-opt %s --attn-materialize-defaults | FileCheck %s

attn.model @m attributes {d_model = 256 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  // The default scale 1/sqrt(64) is written out; an explicit one is kept.
  // CHECK: attn.attention_layer @implicit_scale self {{{.*}}scale = 1.250000e-01 : f32}
  attn.attention_layer @implicit_scale self {head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 4 : i64}
  // CHECK: attn.attention_layer @explicit_scale self {{{.*}}scale = 3.000000e-01 : f32}
  attn.attention_layer @explicit_scale self {head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 4 : i64, scale = 0.3 : f32}
  // A contiguous cache's page is the whole sequence.
  // CHECK: attn.attention_layer @contiguous self {cache = #attn.kv_cache<contiguous, page_size = 100, dtype = f32, max_length = 100>
  attn.attention_layer @contiguous self {cache = #attn.kv_cache<contiguous, page_size = 16, dtype = f32, max_length = 100>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64}
  // A window as long as the cache is a causal mask; a shorter one stays.
  // CHECK: attn.attention_layer @wide_window self {{{.*}}mask = #attn.mask<causal>
  // CHECK-NOT: window
  // CHECK: attn.attention_layer @narrow_window self {{{.*}}mask = #attn.mask<sliding_window>{{.*}}window = 32 : i64
  attn.attention_layer @wide_window self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 100>, head_dim = 64 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, window = 100 : i64}
  attn.attention_layer @narrow_window self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 100>, head_dim = 64 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, window = 32 : i64}
}
