// RUN: attn-opt %s --pass-pipeline='builtin.module(attn.model(attn-materialize-defaults),attn-outline-decode-steps)' -split-input-file | FileCheck %s
// RUN: attn-opt %s --pass-pipeline='builtin.module(attn.model(attn-materialize-defaults),attn-outline-decode-steps)' -split-input-file | attn-opt -split-input-file | FileCheck %s

// A Llama-style layer: RoPE on the new query and key, the cache appended to
// and viewed, causal attention with the materialized scale. The encoder-only
// layer (no cache) gets no step.
// CHECK-LABEL: func.func @llama_layer0_decode_step
// CHECK-SAME: (%[[Q:.*]]: tensor<?x?x8x64xf32>, %[[K:.*]]: tensor<?x?x2x64xf32>, %[[V:.*]]: tensor<?x?x2x64xf32>, %[[POS:.*]]: tensor<?x?xi32>, %[[C:.*]]: !attn.cache<heads = 2, head_dim = 64, #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 512>>)
// CHECK-SAME: -> (tensor<?x?x8x64xf32>, !attn.cache<heads = 2, head_dim = 64, #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 512>>)
// CHECK-NEXT: %[[QR:.*]] = attn.rope %[[Q]], %[[POS]] {theta = 5.000000e+05 : f32}
// CHECK-NEXT: %[[KR:.*]] = attn.rope %[[K]], %[[POS]] {theta = 5.000000e+05 : f32}
// CHECK-NEXT: %[[C1:.*]] = attn.cache_append %[[C]], %[[KR]], %[[V]]
// CHECK-NEXT: %[[KEYS:.*]], %[[VALUES:.*]] = attn.cache_view %[[C1]]
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[QR]], %[[KEYS]], %[[VALUES]] {causal, head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64, scale = 1.250000e-01 : f32}
// CHECK-NEXT: return %[[O]], %[[C1]]
// CHECK-NOT: func.func @llama_encoder
attn.model @llama attributes {d_model = 512 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.attention_layer @layer0 self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 512>, head_dim = 64 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 8 : i64, rope_theta = 5.0e5 : f32}
  attn.attention_layer @encoder self {head_dim = 64 : i64, mask = #attn.mask<none>, num_kv_heads = 8 : i64, num_query_heads = 8 : i64}
}

// -----

// Encoder-decoder: the decoder's cross layer views the encoder's K and V
// (no append, no RoPE, no mask); its self layer has a sliding window,
// softcap and ALiBi, which the step's sdpa carries.
// CHECK-LABEL: func.func @mt_self_decode_step
// CHECK-SAME: (%{{.*}}: tensor<?x?x4x32xf32>, %{{.*}}: tensor<?x?x4x32xf32>, %{{.*}}: tensor<?x?x4x32xf32>, %{{.*}}: !attn.cache<heads = 4, head_dim = 32, #attn.kv_cache<contiguous, page_size = 128, dtype = f32, max_length = 128>>)
// CHECK-NOT: attn.rope
// CHECK: attn.sdpa {{.*}} {alibi, causal, head_dim = 32 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = {{.*}}, softcap = 5.000000e+01 : f32, window = 16 : i64}
// CHECK-LABEL: func.func @mt_cross_decode_step
// CHECK-SAME: (%[[Q:.*]]: tensor<?x?x4x32xf32>, %[[C:.*]]: !attn.cache<{{.*}}>) -> tensor<?x?x4x32xf32>
// CHECK-NEXT: %[[KEYS:.*]], %[[VALUES:.*]] = attn.cache_view %[[C]]
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[KEYS]], %[[VALUES]] {head_dim = 32 : i64
// CHECK-NEXT: return %[[O]] :
attn.model @mt attributes {d_model = 128 : i64, kind = "encoder-decoder", max_batch = 1 : i64} {
  attn.attention_layer @enc self {head_dim = 32 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "encoder"}
  attn.attention_layer @self self {alibi, cache = #attn.kv_cache<contiguous, page_size = 128, dtype = f32, max_length = 128>, head_dim = 32 : i64, mask = #attn.mask<sliding_window>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, softcap = 50.0 : f32, stack = "decoder", window = 16 : i64}
  attn.attention_layer @cross cross {cache = #attn.kv_cache<contiguous, page_size = 64, dtype = f32, max_length = 64>, head_dim = 32 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, stack = "decoder"}
}

// -----

// A model of whole blocks: the step starts from the layer's input, projects
// Q, K and V (biases with projection_bias), and the output projection adds
// the residual stream; cross layers project only Q.
// CHECK-LABEL: func.func @bart_self_decode_step
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[R:.*]]: tensor<?x?x64xf32>, %[[C:.*]]: !attn.cache<{{.*}}>, %[[WQ:.*]]: tensor<64x64xf32>, %[[BQ:.*]]: tensor<64xf32>, %[[WK:.*]]: tensor<64x32xf32>, %[[BK:.*]]: tensor<32xf32>, %[[WV:.*]]: tensor<64x32xf32>, %[[BV:.*]]: tensor<32xf32>, %[[WO:.*]]: tensor<64x64xf32>, %[[BO:.*]]: tensor<64xf32>)
// CHECK-SAME: -> (tensor<?x?x64xf32>, !attn.cache<{{.*}}>)
// CHECK-NEXT: %[[Q:.*]] = attn.project %[[X]], %[[WQ]] bias(%[[BQ]]) : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x?x4x16xf32>
// CHECK-NEXT: %[[K:.*]] = attn.project %[[X]], %[[WK]] bias(%[[BK]]) : {{.*}} -> tensor<?x?x2x16xf32>
// CHECK-NEXT: %[[V:.*]] = attn.project %[[X]], %[[WV]] bias(%[[BV]]) : {{.*}} -> tensor<?x?x2x16xf32>
// CHECK-NEXT: %[[C1:.*]] = attn.cache_append %[[C]], %[[K]], %[[V]]
// CHECK-NEXT: %[[KEYS:.*]], %[[VALUES:.*]] = attn.cache_view %[[C1]]
// CHECK-NEXT: %[[O:.*]] = attn.sdpa %[[Q]], %[[KEYS]], %[[VALUES]]
// CHECK-NEXT: %[[Y:.*]] = attn.project %[[O]], %[[WO]] bias(%[[BO]]) residual(%[[R]]) : (tensor<?x?x4x16xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: return %[[Y]], %[[C1]]
// CHECK-LABEL: func.func @bart_cross_decode_step
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[R:.*]]: tensor<?x?x64xf32>, %[[C:.*]]: !attn.cache<{{.*}}>, %[[WQ:.*]]: tensor<64x64xf32>, %[[BQ:.*]]: tensor<64xf32>, %[[WO:.*]]: tensor<64x64xf32>, %[[BO:.*]]: tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: attn.project %[[X]], %[[WQ]] bias(%[[BQ]])
// CHECK-NEXT: attn.cache_view
// CHECK-NEXT: attn.sdpa
// CHECK-NEXT: attn.project {{.*}} residual(%[[R]])
attn.model @bart attributes {d_model = 64 : i64, kind = "encoder-decoder", max_batch = 1 : i64} {
  attn.embedding @encoder_embedding {max_positions = 32 : i64, positions = #attn.positions<learned>, stack = "encoder", vocab_size = 10 : i64}
  attn.attention_layer @enc self {head_dim = 16 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, projection_bias, stack = "encoder"}
  attn.norm @enc_norm layer_norm {eps = 1.0e-05 : f32, post, stack = "encoder"}
  attn.embedding @decoder_embedding {max_positions = 32 : i64, positions = #attn.positions<learned>, stack = "decoder", vocab_size = 10 : i64}
  attn.attention_layer @self self {cache = #attn.kv_cache<paged, page_size = 4, dtype = f32, max_length = 32>, head_dim = 16 : i64, mask = #attn.mask<causal>, num_kv_heads = 2 : i64, num_query_heads = 4 : i64, projection_bias, stack = "decoder"}
  attn.attention_layer @cross cross {cache = #attn.kv_cache<contiguous, page_size = 32, dtype = f32, max_length = 32>, head_dim = 16 : i64, mask = #attn.mask<none>, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, projection_bias, stack = "decoder"}
  attn.output_head @output_head {vocab_size = 10 : i64}
}
