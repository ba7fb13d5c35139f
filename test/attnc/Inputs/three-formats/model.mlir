// The model of config.json and model.json in the attn dialect: a Llama-style
// decoder, d_model 64, GQA 8/2 heads of 8 with RoPE (theta 500000), RMS norm,
// a SiLU-gated FFN of 96, two blocks.
module {
  attn.model @tiny attributes {kind = "decoder-only", d_model = 64 : i64,
                               max_batch = 1 : i64,
                               weight_naming = "llama"} {
    attn.embedding @embedding {vocab_size = 100 : i64, max_positions = 128 : i64,
                               positions = #attn.positions<none>}
    attn.norm @layer0_norm rms_norm {eps = 1.0e-5 : f32}
    attn.attention_layer @layer0 self {num_query_heads = 8 : i64,
        num_kv_heads = 2 : i64, head_dim = 8 : i64, mask = #attn.mask<causal>,
        rope_theta = 5.0e5 : f32,
        cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 128>}
    attn.norm @block0_ffn_norm rms_norm {eps = 1.0e-5 : f32}
    attn.ffn @block0_ffn {activation = #attn.activation<silu>, gated,
                          intermediate_size = 96 : i64}
    attn.norm @layer1_norm rms_norm {eps = 1.0e-5 : f32}
    attn.attention_layer @layer1 self {num_query_heads = 8 : i64,
        num_kv_heads = 2 : i64, head_dim = 8 : i64, mask = #attn.mask<causal>,
        rope_theta = 5.0e5 : f32,
        cache = #attn.kv_cache<paged, page_size = 16, dtype = f32, max_length = 128>}
    attn.norm @block1_ffn_norm rms_norm {eps = 1.0e-5 : f32}
    attn.ffn @block1_ffn {activation = #attn.activation<silu>, gated,
                          intermediate_size = 96 : i64}
    attn.norm @final_norm rms_norm {eps = 1.0e-5 : f32}
    attn.output_head @output_head {vocab_size = 100 : i64}
  }
}
