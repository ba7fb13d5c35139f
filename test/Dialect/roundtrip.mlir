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
