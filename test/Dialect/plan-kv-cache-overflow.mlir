// RUN: attn-opt %s --attn-plan-kv-cache -verify-diagnostics

// Within every verifier limit, yet 65536 sequences of 2^30 tokens of 512 KV
// heads of 32768 channels need more than 2^63 bytes: every product of the
// plan is checked, and the model says so instead of a wrapped-around size.
// expected-error @+1 {{the KV cache's size overflows 64-bit byte counts}}
attn.model @m attributes {d_model = 8 : i64, kind = "decoder-only", max_batch = 65536 : i64} {
  attn.attention_layer @l self {cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 1073741824>, head_dim = 32768 : i64, mask = #attn.mask<causal>, num_kv_heads = 512 : i64, num_query_heads = 1024 : i64}
}
