// RUN: attn-opt %s -split-input-file --attn-fuse-projections | FileCheck %s
// RUN: attn-opt %s -split-input-file --attn-fuse-projections=fuse=false | FileCheck %s --check-prefix=OFF

// Self-attention layers of a model of blocks fuse Q, K and V; cross layers
// cannot (their K and V read the encoder output).
// CHECK-LABEL: attn.model @blocks
// CHECK: attn.attention_layer @self self {fused_projections,
// CHECK: attn.attention_layer @cross cross {head_dim
// OFF-LABEL: attn.model @blocks
// OFF-NOT: fused_projections
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
