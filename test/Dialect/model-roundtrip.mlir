// RUN: attn-opt %s | FileCheck %s
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt --mlir-print-op-generic %s | attn-opt | FileCheck %s

// CHECK-LABEL: attn.model @translator attributes {d_model = 256 : i64, kind = "encoder-decoder", max_batch = 8 : i64}
// CHECK-NEXT: attn.attention_layer @enc0 self {head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "encoder"}
// CHECK-NEXT: attn.attention_layer @dec0 self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 128>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, rope_theta = 1.000000e+04 : f32, stack = "decoder"}
// CHECK-NEXT: attn.attention_layer @cross0 cross {cache = #attn.kv_cache<contiguous, page_size = 64, dtype = bf16, max_length = 64>, head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "decoder"}
// CHECK-NEXT: attn.attention_layer @swa self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 128>, head_dim = 64 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 1 : i64, num_query_heads = 4 : i64, softcap = 5.000000e+01 : f32, window = 32 : i64}
// CHECK-NEXT: attn.kernel @k prefill {causal, head_dim = 64 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = 1.250000e-01 : f32, schedule = #attn.schedule<query_block = 64, kv_chunk = 128, qk_tile_keys = 8, pv_tile_rows = 4, split_keys = 256, vector_width = 16, source = "db">}
attn.model @translator attributes {d_model = 256 : i64, kind = "encoder-decoder", max_batch = 8 : i64} {
  attn.attention_layer @enc0 self {head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "encoder"}
  attn.attention_layer @dec0 self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 128>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, rope_theta = 10000.0 : f32, stack = "decoder"}
  attn.attention_layer @cross0 cross {cache = #attn.kv_cache<contiguous, page_size = 64, dtype = bf16, max_length = 64>, head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "decoder"}
  attn.attention_layer @swa self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 128>, head_dim = 64 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 1 : i64, num_query_heads = 4 : i64, softcap = 50.0 : f32, window = 32 : i64}
  attn.kernel @k prefill {causal, head_dim = 64 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = 0.125 : f32, schedule = #attn.schedule<query_block = 64, kv_chunk = 128, qk_tile_keys = 8, pv_tile_rows = 4, split_keys = 256, vector_width = 16, source = "db">}
}

// QK-norm on a layer and on the projection kernel that computes it.
// CHECK-LABEL: attn.model @qwen3
// CHECK-NEXT: attn.attention_layer @layer0 self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, qk_norm = #attn.qk_norm<head, eps = 9.99999997E-7 : f32>, rope_theta = 1.000000e+06 : f32}
// CHECK-NEXT: attn.linear_kernel @q {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 128 : i64, qk_norm = #attn.qk_norm<head, eps = 9.99999997E-7 : f32>, rope_head_dim = 16 : i64, rope_heads = 6 : i64, rope_theta = 1.000000e+06 : f32}
attn.model @qwen3 attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @layer0 self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, qk_norm = #attn.qk_norm<head, eps = 1.0e-6 : f32>, rope_theta = 1000000.0 : f32}
  attn.linear_kernel @q {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 128 : i64, qk_norm = #attn.qk_norm<head, eps = 1.0e-6 : f32>, rope_head_dim = 16 : i64, rope_heads = 6 : i64, rope_theta = 1000000.0 : f32}
}

// gpt-oss's attention sinks on a layer and its kernels.
// CHECK-LABEL: attn.model @gpt_oss
// CHECK-NEXT: attn.attention_layer @layer0 self {head_dim = 64 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 8 : i64, num_query_heads = 64 : i64, sinks, window = 128 : i64}
// CHECK-NEXT: attn.kernel @p prefill {causal, head_dim = 64 : i64, num_kv_heads = 8 : i64, num_query_heads = 64 : i64, scale = 1.250000e-01 : f32, sinks, window = 128 : i64}
attn.model @gpt_oss attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @layer0 self {head_dim = 64 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 8 : i64, num_query_heads = 64 : i64, sinks, window = 128 : i64}
  attn.kernel @p prefill {causal, head_dim = 64 : i64, num_kv_heads = 8 : i64, num_query_heads = 64 : i64, scale = 0.125 : f32, sinks, window = 128 : i64}
}

// gpt-oss's experts: biases (the router's too), the clamped SwiGLU on the
// FFN and on its down kernel.
// CHECK-LABEL: attn.model @gpt_oss_experts
// CHECK-NEXT: attn.ffn @f {activation = #attn.activation<silu>, bias, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = true>, gated, intermediate_size = 32 : i64, swiglu_alpha = 1.702000e+00 : f32, swiglu_limit = 7.000000e+00 : f32}
// CHECK-NEXT: attn.linear_kernel @down {activation = #attn.activation<none>, bias, experts = 4 : i64, gate_alpha = 1.702000e+00 : f32, gate_limit = 7.000000e+00 : f32, in_features = 32 : i64, input_gate = #attn.activation<silu>, out_features = 64 : i64}
attn.model @gpt_oss_experts attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.ffn @f {activation = #attn.activation<silu>, bias, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = true>, gated, intermediate_size = 32 : i64, swiglu_alpha = 1.702 : f32, swiglu_limit = 7.0 : f32}
  attn.linear_kernel @down {activation = #attn.activation<none>, bias, experts = 4 : i64, gate_alpha = 1.702 : f32, gate_limit = 7.0 : f32, in_features = 32 : i64, input_gate = #attn.activation<silu>, out_features = 64 : i64}
}

// Experts whose checkpoint keeps them in MXFP4, the model's other weights
// bf16.
// CHECK-LABEL: attn.model @mxfp4_experts
// CHECK-NEXT: attn.ffn @f {activation = #attn.activation<silu>, expert_weight_dtype = !attn.mxfp4, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = true>, gated, intermediate_size = 32 : i64}
// CHECK-NEXT: attn.linear_kernel @up {activation = #attn.activation<none>, experts = 4 : i64, in_features = 64 : i64, out_features = 64 : i64, weight_dtype = !attn.mxfp4}
attn.model @mxfp4_experts attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = bf16} {
  attn.ffn @f {activation = #attn.activation<silu>, expert_weight_dtype = !attn.mxfp4, experts = #attn.experts<softmax_top_k, count = 4, per_token = 2, normalize = true>, gated, intermediate_size = 32 : i64}
  attn.linear_kernel @up {activation = #attn.activation<none>, experts = 4 : i64, in_features = 64 : i64, out_features = 64 : i64, weight_dtype = !attn.mxfp4}
}

// OLMo 2's QK-norm over the whole query and key projections.
// CHECK-LABEL: attn.model @olmo2
// CHECK-NEXT: attn.attention_layer @layer0 self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, qk_norm = #attn.qk_norm<projection, eps = 9.99999997E-7 : f32>, rope_theta = 5.000000e+05 : f32}
// CHECK-NEXT: attn.linear_kernel @q {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 128 : i64, qk_norm = #attn.qk_norm<projection, eps = 9.99999997E-7 : f32>, rope_head_dim = 16 : i64, rope_heads = 6 : i64, rope_theta = 5.000000e+05 : f32}
attn.model @olmo2 attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @layer0 self {head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, qk_norm = #attn.qk_norm<projection, eps = 1.0e-6 : f32>, rope_theta = 500000.0 : f32}
  attn.linear_kernel @q {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 128 : i64, qk_norm = #attn.qk_norm<projection, eps = 1.0e-6 : f32>, rope_head_dim = 16 : i64, rope_heads = 6 : i64, rope_theta = 500000.0 : f32}
}

// Gemma's forms: norm weights stored as w - 1, a norm of the FFN's output
// added to the stream, a capped head.
// CHECK-LABEL: attn.model @gemma attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, norm_weight_offset = 1.000000e+00 : f32, weight_naming = "gemma"}
// CHECK-NEXT: attn.ffn @f
// CHECK-NEXT: attn.norm @f_output_norm rms_norm {eps = 9.99999997E-7 : f32, residual_add}
// CHECK-NEXT: attn.output_head @head {softcap = 3.000000e+01 : f32, vocab_size = 100 : i64}
// CHECK-NEXT: attn.norm_kernel @n rms_norm {dim = 64 : i64, eps = 9.99999997E-7 : f32, residual}
// CHECK-NEXT: attn.linear_kernel @h {activation = #attn.activation<none>, argmax, in_features = 64 : i64, out_features = 100 : i64, softcap = 3.000000e+01 : f32}
attn.model @gemma attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, norm_weight_offset = 1.0 : f32, weight_naming = "gemma"} {
  attn.ffn @f {activation = #attn.activation<gelu_tanh>, gated, intermediate_size = 96 : i64}
  attn.norm @f_output_norm rms_norm {eps = 1.0e-6 : f32, residual_add}
  attn.output_head @head {softcap = 30.0 : f32, vocab_size = 100 : i64}
  attn.norm_kernel @n rms_norm {dim = 64 : i64, eps = 1.0e-6 : f32, residual}
  attn.linear_kernel @h {activation = #attn.activation<none>, argmax, in_features = 64 : i64, out_features = 100 : i64, softcap = 30.0 : f32}
}

// A mixture of experts: its rule and its router kernel.
// CHECK-LABEL: attn.model @moe
// CHECK-NEXT: attn.ffn @f {activation = #attn.activation<silu>, down_kernel = @d, experts = #attn.experts<softmax_top_k, count = 8, per_token = 2, normalize = false>, gated, intermediate_size = 96 : i64, router_kernel = @r, up_kernel = @u}
attn.model @moe attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.ffn @f {activation = #attn.activation<silu>, down_kernel = @d, experts = #attn.experts<softmax_top_k, count = 8, per_token = 2, normalize = false>, gated, intermediate_size = 96 : i64, router_kernel = @r, up_kernel = @u}
  attn.linear_kernel @r {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 8 : i64, weight_dtype = bf16}
  attn.linear_kernel @u {activation = #attn.activation<none>, in_features = 64 : i64, out_features = 192 : i64}
  attn.linear_kernel @d {activation = #attn.activation<none>, in_features = 96 : i64, out_features = 64 : i64, input_gate = #attn.activation<silu>}
}

// A head of its own weight type beside int4 blocks (a GPTQ checkpoint's
// float16 head).
// CHECK-LABEL: attn.model @own_head
// CHECK-NEXT: attn.output_head @head {vocab_size = 100 : i64, weight_dtype = f16}
attn.model @own_head attributes {d_model = 64 : i64, kind = "decoder-only", max_batch = 1 : i64, weight_dtype = i4, weight_group = 32 : i64} {
  attn.output_head @head {vocab_size = 100 : i64, weight_dtype = f16}
}
