// RUN: attn-opt %s -split-input-file --attn-materialize-defaults --attn-fuse-projections --attn-plan-activations | FileCheck %s
// RUN: not attn-opt %s -split-input-file --attn-plan-activations=alignment=48 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: error: --attn-plan-activations: alignment must be a power of two, got 48

// d_model 8 (32 B a token), fused QKV of (2 + 2·1)·4 floats (64 B), FFN of
// 16 (64 B), 10 logits (40 B); every value rounded up to 64 B a token (the
// default alignment). Ten values, 640 B if each had its own buffer; at most
// five are live at once (320 B). Largest first, lowest free offset. 16
// learned positions and max_batch 2: 320 · 16 · 2 = 10240 bytes for the
// longest prefill. The attention layer writes QKV, K/V (empty: fused into
// QKV), the attention output and the new residual stream.
// CHECK-LABEL: attn.model @tiny
// CHECK-SAME: activation_bytes = 10240 : i64, activation_bytes_per_token = 320 : i64, activation_naive_bytes_per_token = 640 : i64
// CHECK: attn.embedding @embedding {activation_offsets = array<i64: 0>
// CHECK: attn.norm @n0 layer_norm {activation_offsets = array<i64: 64>
// CHECK: attn.attention_layer @l0 self {activation_offsets = array<i64: 128, 0, 192, 256>
// CHECK: attn.norm @n1 layer_norm {activation_offsets = array<i64: 0>
// CHECK: attn.ffn @f0 {activation = #attn.activation<gelu_tanh>, activation_offsets = array<i64: 64, 128>
// CHECK: attn.norm @final layer_norm {activation_offsets = array<i64: 0>
// CHECK: attn.output_head @output_head {activation_offsets = array<i64: 64>
attn.model @tiny attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 2 : i64} {
  attn.embedding @embedding {max_positions = 16 : i64, positions = #attn.positions<learned>, vocab_size = 10 : i64}
  attn.norm @n0 layer_norm {eps = 1.0e-05 : f32}
  attn.attention_layer @l0 self {head_dim = 4 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 2 : i64}
  attn.norm @n1 layer_norm {eps = 1.0e-05 : f32}
  attn.ffn @f0 {activation = #attn.activation<gelu_tanh>, intermediate_size = 16 : i64}
  attn.norm @final layer_norm {eps = 1.0e-05 : f32}
  attn.output_head @output_head {vocab_size = 10 : i64}
}

// -----

// Attention layers alone: nothing to plan.
// CHECK-LABEL: attn.model @layers_only
// CHECK-NOT: activation_
attn.model @layers_only attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @l0 self {head_dim = 4 : i64, mask = #attn.mask<causal>, num_kv_heads = 1 : i64, num_query_heads = 2 : i64}
}
