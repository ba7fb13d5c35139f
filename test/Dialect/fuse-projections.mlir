// RUN: attn-opt %s -split-input-file --attn-fuse-projections | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-fuse-projections=fuse=false | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s -split-input-file --attn-fuse-projections=cache-append=false | FileCheck %s --check-prefix=NOAPPEND

// Self-attention layers of a model of blocks fuse Q, K and V; cross layers
// cannot (their K and V read the encoder output).
// CHECK-LABEL: attn.model @blocks
// CHECK: attn.attention_layer @self self {fused_projections,
// CHECK: attn.attention_layer @cross cross {head_dim
// OFF-LABEL: attn.model @blocks
// OFF-NOT: fused_projections
// NOAPPEND-NOT: fused_cache_append
attn.model @blocks attributes {d_model = 64 : i64, kind = "encoder-decoder", max_batch = 1 : i64} {
  attn.norm @encoder_final_norm layer_norm {eps = 1.0e-05 : f32, stack = "encoder"}
  attn.norm @n layer_norm {eps = 1.0e-05 : f32}
  attn.attention_layer @self self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64}
  attn.attention_layer @cross cross {head_dim = 16 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64}
}

// -----

// A model of attention layers alone compiles no projections: nothing to fuse.
// CHECK-LABEL: attn.model @attention_only
// CHECK-NOT: fused_projections
attn.model @attention_only attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @self self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64}
}

// -----

// Cached layers also store K and V from their projection (fused or not; a
// cross layer's K/V projection of the encoder output); uncached layers do
// not.
// CHECK-LABEL: attn.model @cached
// CHECK: attn.attention_layer @encoder_self self {fused_projections, head_dim
// CHECK: attn.attention_layer @self self {cache = {{.*}}, fused_cache_append, fused_projections,
// CHECK: attn.attention_layer @cross cross {cache = {{.*}}, fused_cache_append, head_dim
// OFF-LABEL: attn.model @cached
// OFF: attn.attention_layer @self self {cache = {{.*}}, fused_cache_append, head_dim
// OFF-NOT: fused_projections
// NOAPPEND-LABEL: attn.model @cached
// NOAPPEND-NOT: fused_cache_append
attn.model @cached attributes {d_model = 64 : i64, kind = "encoder-decoder", max_batch = 1 : i64} {
  attn.norm @en layer_norm {eps = 1.0e-05 : f32, stack = "encoder"}
  attn.attention_layer @encoder_self self {head_dim = 16 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "encoder"}
  attn.norm @n layer_norm {eps = 1.0e-05 : f32, stack = "decoder"}
  attn.attention_layer @self self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 64>, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, stack = "decoder"}
  attn.attention_layer @cross cross {cache = #attn.kv_cache<contiguous, page_size = 64, dtype = f32, max_length = 64>, head_dim = 16 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "decoder"}
}

// -----

// An int8 cache too: the projection quantizes each row and stores its scale.
// CHECK-LABEL: attn.model @int8
// CHECK: attn.attention_layer @self self {cache = #attn.kv_cache<paged, page_size = 16, dtype = i8, max_length = 64>, fused_cache_append,
attn.model @int8 attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.norm @n layer_norm {eps = 1.0e-05 : f32}
  attn.attention_layer @self self {cache = #attn.kv_cache<paged, page_size = 16, dtype = i8, max_length = 64>, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64}
}

// -----

// One kernel reads one weight type (a GGUF file's Q4_K_M mix): a layer
// whose V is stored in Q6_K (i8 in groups of 16) beside i4 Q and K fuses
// nothing and appends to its cache apart; one whose Q alone differs fuses
// K with V and the append; one whose own weights equal the model's fuses
// everything.
// CHECK-LABEL: attn.model @mixed
// CHECK: attn.attention_layer @split_value self {cache = {{.*}}, head_dim = 16 : i64
// CHECK-NOT: fused
// CHECK-SAME: value_weights = #attn.weights<i8, group = 16>}
// CHECK: attn.attention_layer @own_query self {cache = {{.*}}, fused_cache_append, head_dim
// CHECK: attn.attention_layer @same self {cache = {{.*}}, fused_cache_append, fused_projections,
attn.model @mixed attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 32 : i64, weight_mins} {
  attn.norm @n layer_norm {eps = 1.0e-05 : f32}
  attn.attention_layer @split_value self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 64>, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, value_weights = #attn.weights<i8, group = 16>}
  attn.attention_layer @own_query self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 64>, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, query_weights = #attn.weights<i8, group = 32>}
  attn.attention_layer @same self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 64>, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, key_weights = #attn.weights<i4, group = 32>}
}
