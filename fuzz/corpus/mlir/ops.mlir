// RUN: attn-opt %s | FileCheck %s
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt --mlir-print-op-generic %s | attn-opt | FileCheck %s

// CHECK-LABEL: func.func @gqa_causal
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} {causal, head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64} : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x8x64xf32>
func.func @gqa_causal(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x2x64xf32>,
                      %v: tensor<?x?x2x64xf32>) -> tensor<?x?x8x64xf32> {
  %o = attn.sdpa %q, %k, %v {causal, head_dim = 64 : i64, num_kv_heads = 2 : i64,
                              num_query_heads = 8 : i64}
      : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>
      -> tensor<?x?x8x64xf32>
  return %o : tensor<?x?x8x64xf32>
}

// Static shapes, an explicit scale, multi-query (one KV head), no mask.
// CHECK-LABEL: func.func @mqa_static
// CHECK: attn.sdpa %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 32 : i64, num_kv_heads = 1 : i64, num_query_heads = 4 : i64, scale = 2.500000e-01 : f32} : tensor<1x7x4x32xf32>, tensor<1x9x1x32xf32>, tensor<1x9x1x32xf32> -> tensor<1x7x4x32xf32>
// CHECK-NOT: causal
func.func @mqa_static(%q: tensor<1x7x4x32xf32>, %k: tensor<1x9x1x32xf32>,
                      %v: tensor<1x9x1x32xf32>) -> tensor<1x7x4x32xf32> {
  %o = attn.sdpa %q, %k, %v {head_dim = 32 : i64, num_kv_heads = 1 : i64,
                              num_query_heads = 4 : i64, scale = 0.25 : f32}
      : tensor<1x7x4x32xf32>, tensor<1x9x1x32xf32>, tensor<1x9x1x32xf32>
      -> tensor<1x7x4x32xf32>
  return %o : tensor<1x7x4x32xf32>
}

// One decode step at the math level: RoPE on the new query and key, the
// cache as a value (declared empty, appended to, viewed), attention with a
// sliding window, softcap and ALiBi.
// CHECK-LABEL: func.func @decode_step
// CHECK: %[[C0:.*]] = attn.cache_declare : !attn.cache<heads = 2, head_dim = 64, #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 256>>
// CHECK: %[[Q:.*]] = attn.rope %{{.*}}, %{{.*}} {theta = 1.000000e+04 : f32} : tensor<?x?x8x64xf32>, tensor<?x?xi32>
// CHECK: %[[K:.*]] = attn.rope %{{.*}}, %{{.*}} {scaling = {factor = 8.000000e+00 : f64, rope_type = "llama3"}, theta = 5.000000e+05 : f32} : tensor<?x?x2x64xf32>, tensor<?x?xi32>
// CHECK: %[[C1:.*]] = attn.cache_append %[[C0]], %[[K]], %{{.*}} : !attn.cache<heads = 2, head_dim = 64, #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 256>>, tensor<?x?x2x64xf32>
// CHECK: %[[KEYS:.*]], %[[VALUES:.*]] = attn.cache_view %[[C1]] : !attn.cache<{{.*}}> -> tensor<?x?x2x64xf32>
// CHECK: attn.sdpa %[[Q]], %[[KEYS]], %[[VALUES]] {alibi, causal, head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64, softcap = 3.000000e+01 : f32, window = 128 : i64}
func.func @decode_step(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x2x64xf32>,
                       %v: tensor<?x?x2x64xf32>, %pos: tensor<?x?xi32>)
    -> tensor<?x?x8x64xf32> {
  %c0 = attn.cache_declare : !attn.cache<heads = 2, head_dim = 64,
      #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 256>>
  %qr = attn.rope %q, %pos {theta = 1.0e4 : f32} : tensor<?x?x8x64xf32>, tensor<?x?xi32>
  %kr = attn.rope %k, %pos {theta = 5.0e5 : f32, scaling = {rope_type = "llama3", factor = 8.0}}
      : tensor<?x?x2x64xf32>, tensor<?x?xi32>
  %c1 = attn.cache_append %c0, %kr, %v : !attn.cache<heads = 2, head_dim = 64,
      #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 256>>, tensor<?x?x2x64xf32>
  %keys, %values = attn.cache_view %c1 : !attn.cache<heads = 2, head_dim = 64,
      #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 256>> -> tensor<?x?x2x64xf32>
  %o = attn.sdpa %qr, %keys, %values {alibi, causal, head_dim = 64 : i64, num_kv_heads = 2 : i64,
                                      num_query_heads = 8 : i64, softcap = 30.0 : f32, window = 128 : i64}
      : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x8x64xf32>
  return %o : tensor<?x?x8x64xf32>
}

// Projections into heads and back, with a bias and the residual stream.
// CHECK-LABEL: func.func @projections
// CHECK: %[[Q:.*]] = attn.project %{{.*}}, %{{.*}} bias(%{{.*}}) : (tensor<?x?x512xf32>, tensor<512x512xf32>, tensor<512xf32>) -> tensor<?x?x8x64xf32>
// CHECK: attn.project %[[Q]], %{{.*}} residual(%{{.*}}) : (tensor<?x?x8x64xf32>, tensor<512x512xf32>, tensor<?x?x512xf32>) -> tensor<?x?x512xf32>
func.func @projections(%x: tensor<?x?x512xf32>, %wq: tensor<512x512xf32>,
                       %bq: tensor<512xf32>, %wo: tensor<512x512xf32>)
    -> tensor<?x?x512xf32> {
  %q = attn.project %x, %wq bias(%bq)
      : (tensor<?x?x512xf32>, tensor<512x512xf32>, tensor<512xf32>) -> tensor<?x?x8x64xf32>
  %y = attn.project %q, %wo residual(%x)
      : (tensor<?x?x8x64xf32>, tensor<512x512xf32>, tensor<?x?x512xf32>) -> tensor<?x?x512xf32>
  return %y : tensor<?x?x512xf32>
}
