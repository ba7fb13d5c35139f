// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @heads_not_divisible(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x3x64xf32>,
                               %v: tensor<?x?x3x64xf32>) -> tensor<?x?x8x64xf32> {
  // expected-error @+1 {{num_query_heads (8) must be a multiple of num_kv_heads (3)}}
  %o = attn.sdpa %q, %k, %v {head_dim = 64 : i64, num_kv_heads = 3 : i64, num_query_heads = 8 : i64}
      : tensor<?x?x8x64xf32>, tensor<?x?x3x64xf32>, tensor<?x?x3x64xf32> -> tensor<?x?x8x64xf32>
  return %o : tensor<?x?x8x64xf32>
}

// -----

func.func @query_heads_mismatch(%q: tensor<?x?x4x64xf32>, %k: tensor<?x?x2x64xf32>,
                                %v: tensor<?x?x2x64xf32>) -> tensor<?x?x4x64xf32> {
  // expected-error @+1 {{query has 4 heads but num_query_heads = 8}}
  %o = attn.sdpa %q, %k, %v {head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
      : tensor<?x?x4x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x4x64xf32>
  return %o : tensor<?x?x4x64xf32>
}

// -----

func.func @head_dim_mismatch(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x2x32xf32>,
                             %v: tensor<?x?x2x64xf32>) -> tensor<?x?x8x64xf32> {
  // expected-error @+1 {{key has 32 channels per head but head_dim = 64}}
  %o = attn.sdpa %q, %k, %v {head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
      : tensor<?x?x8x64xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x8x64xf32>
  return %o : tensor<?x?x8x64xf32>
}

// -----

func.func @kv_length_mismatch(%q: tensor<1x4x8x64xf32>, %k: tensor<1x5x2x64xf32>,
                              %v: tensor<1x6x2x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{key and value disagree on the key sequence length (5 vs 6)}}
  %o = attn.sdpa %q, %k, %v {head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
      : tensor<1x4x8x64xf32>, tensor<1x5x2x64xf32>, tensor<1x6x2x64xf32> -> tensor<1x4x8x64xf32>
  return %o : tensor<1x4x8x64xf32>
}

// -----

func.func @bad_scale(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x2x64xf32>,
                     %v: tensor<?x?x2x64xf32>) -> tensor<?x?x8x64xf32> {
  // expected-error @+1 {{scale must be positive and finite, got -1}}
  %o = attn.sdpa %q, %k, %v {head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64, scale = -1.0 : f32}
      : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x8x64xf32>
  return %o : tensor<?x?x8x64xf32>
}

// -----

func.func @zero_heads(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x2x64xf32>,
                      %v: tensor<?x?x2x64xf32>) -> tensor<?x?x8x64xf32> {
  // expected-error @+1 {{attribute 'num_kv_heads' failed to satisfy constraint}}
  %o = attn.sdpa %q, %k, %v {head_dim = 64 : i64, num_kv_heads = 0 : i64, num_query_heads = 8 : i64}
      : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x8x64xf32>
  return %o : tensor<?x?x8x64xf32>
}

// -----

func.func @result_shape(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x2x64xf32>,
                        %v: tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xf32> {
  // expected-error @+1 {{result type 'tensor<?x?x2x64xf32>' must have the shape of the query 'tensor<?x?x8x64xf32>'}}
  %o = attn.sdpa %q, %k, %v {head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
      : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x2x64xf32>
  return %o : tensor<?x?x2x64xf32>
}
