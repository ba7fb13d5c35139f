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
  // expected-error @+1 {{scale must be positive and finite}}
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

// -----

func.func @rope_odd(%x: tensor<?x?x4x7xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x4x7xf32> {
  // expected-error @+1 {{rotates channel pairs: head_dim must be static and even, got 7}}
  %y = attn.rope %x, %pos {theta = 1.0e4 : f32} : tensor<?x?x4x7xf32>, tensor<?x?xi32>
  return %y : tensor<?x?x4x7xf32>
}

// -----

func.func @rope_positions(%x: tensor<2x5x4x8xf32>, %pos: tensor<2x6xi32>) -> tensor<2x5x4x8xf32> {
  // expected-error @+1 {{input and positions disagree on sequence length (5 vs 6)}}
  %y = attn.rope %x, %pos {theta = 1.0e4 : f32} : tensor<2x5x4x8xf32>, tensor<2x6xi32>
  return %y : tensor<2x5x4x8xf32>
}

// -----

func.func @rope_theta(%x: tensor<?x?x4x8xf32>, %pos: tensor<?x?xi32>) -> tensor<?x?x4x8xf32> {
  // expected-error @+1 {{theta must be positive and finite}}
  %y = attn.rope %x, %pos {theta = -1.0 : f32} : tensor<?x?x4x8xf32>, tensor<?x?xi32>
  return %y : tensor<?x?x4x8xf32>
}

// -----

func.func @append_heads(%k: tensor<?x?x3x8xf32>) {
  %c = attn.cache_declare : !attn.cache<heads = 2, head_dim = 8,
      #attn.kv_cache<contiguous, page_size = 64, dtype = f32, max_length = 64>>
  // expected-error @+1 {{key has 3 heads but the cache's heads = 2}}
  %c1 = attn.cache_append %c, %k, %k : !attn.cache<heads = 2, head_dim = 8,
      #attn.kv_cache<contiguous, page_size = 64, dtype = f32, max_length = 64>>, tensor<?x?x3x8xf32>
  return
}

// -----

func.func @view_too_long() {
  %c = attn.cache_declare : !attn.cache<heads = 2, head_dim = 8,
      #attn.kv_cache<contiguous, page_size = 64, dtype = f32, max_length = 64>>
  // expected-error @+1 {{views 65 tokens of a cache that holds at most 64}}
  %k, %v = attn.cache_view %c : !attn.cache<heads = 2, head_dim = 8,
      #attn.kv_cache<contiguous, page_size = 64, dtype = f32, max_length = 64>> -> tensor<1x65x2x8xf32>
  return
}

// -----

// expected-error @+1 {{a cache needs at least one head of at least one channel, got heads = 0, head_dim = 8}}
func.func @empty_cache(%c: !attn.cache<heads = 0, head_dim = 8,
    #attn.kv_cache<contiguous, page_size = 64, dtype = f32, max_length = 64>>) {
  return
}

// -----

func.func @window_without_causal(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x2x64xf32>,
                                 %v: tensor<?x?x2x64xf32>) -> tensor<?x?x8x64xf32> {
  // expected-error @+1 {{a sliding window needs a causal mask}}
  %o = attn.sdpa %q, %k, %v {head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64, window = 4 : i64}
      : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x8x64xf32>
  return %o : tensor<?x?x8x64xf32>
}

// -----

func.func @project_rows(%x: tensor<?x?x512xf32>, %w: tensor<256x512xf32>) -> tensor<?x?x512xf32> {
  // expected-error @+1 {{input features and weight rows disagree (512 vs 256)}}
  %y = attn.project %x, %w : (tensor<?x?x512xf32>, tensor<256x512xf32>) -> tensor<?x?x512xf32>
  return %y : tensor<?x?x512xf32>
}

// -----

func.func @project_heads(%x: tensor<?x?x512xf32>, %w: tensor<512x512xf32>) -> tensor<?x?x8x32xf32> {
  // expected-error @+1 {{result features and weight columns disagree (256 vs 512)}}
  %y = attn.project %x, %w : (tensor<?x?x512xf32>, tensor<512x512xf32>) -> tensor<?x?x8x32xf32>
  return %y : tensor<?x?x8x32xf32>
}

// -----

func.func @project_bias(%x: tensor<?x?x64xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{bias and weight columns disagree (64 vs 32)}}
  %y = attn.project %x, %w bias(%b) : (tensor<?x?x64xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

func.func @project_residual(%x: tensor<?x?x64xf32>, %w: tensor<64x32xf32>, %r: tensor<?x?x64xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{residual must have the result's type 'tensor<?x?x32xf32>', got 'tensor<?x?x64xf32>'}}
  %y = attn.project %x, %w residual(%r) : (tensor<?x?x64xf32>, tensor<64x32xf32>, tensor<?x?x64xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

func.func @project_rank(%x: tensor<?x64xf32>, %w: tensor<64x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{input must be [batch, seq, features] or [batch, seq, heads, head_dim], got rank 2}}
  %y = attn.project %x, %w : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// -----

// The limits attn.attention_layer has hold for the math-level op too.
func.func @head_dim_too_large(%q: tensor<?x?x1x131072xf32>, %k: tensor<?x?x1x131072xf32>,
                              %v: tensor<?x?x1x131072xf32>) -> tensor<?x?x1x131072xf32> {
  // expected-error @+1 {{head_dim must be at most 65536, got 131072}}
  %o = attn.sdpa %q, %k, %v {head_dim = 131072 : i64, num_kv_heads = 1 : i64, num_query_heads = 1 : i64}
      : tensor<?x?x1x131072xf32>, tensor<?x?x1x131072xf32>, tensor<?x?x1x131072xf32> -> tensor<?x?x1x131072xf32>
  return %o : tensor<?x?x1x131072xf32>
}
