//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn/AttnAttrs.td"
include "attn/AttnDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// A [batch, sequence, heads, head_dim] activation; batch and sequence may be dynamic.
def Attn_Activation : 4DTensorOf<[F32]>;

def Attn_PositiveI64 : ConfinedAttr<I64Attr, [IntPositive]>;

def Attn_SdpaOp : Attn_Op<"sdpa", [Pure]> {
  let summary = "scaled dot-product attention: softmax(Q·Kᵀ·scale + mask)·V";
  let description = [{
    Multi-head scaled dot-product attention at the math level. `query` is
    `[batch, q_len, num_query_heads, head_dim]`; `key` and `value` are
    `[batch, kv_len, num_kv_heads, head_dim]`. Query head `h` reads KV head
    `h / (num_query_heads / num_kv_heads)`, which covers multi-head (equal
    counts), grouped-query and multi-query (one KV head) attention.

    With `causal`, query `i` sees keys `j <= i + (kv_len - q_len)`: the mask is
    aligned to the end of the key sequence, so the same op describes a prefill
    (`q_len == kv_len`) and a decode step over a cache (`q_len < kv_len`).
    `scale` defaults to `1/sqrt(head_dim)`. A query row that sees no key yields 0.

    Example (grouped-query attention, 8 query heads sharing 2 KV heads):

    ```mlir
    %o = attn.sdpa %q, %k, %v {causal, head_dim = 64 : i64,
                                num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
        : tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>
        -> tensor<?x?x8x64xf32>
    ```
  }];

  let arguments = (ins
    Attn_Activation:$query,
    Attn_Activation:$key,
    Attn_Activation:$value,
    Attn_PositiveI64:$num_query_heads,
    Attn_PositiveI64:$num_kv_heads,
    Attn_PositiveI64:$head_dim,
    UnitAttr:$causal,
    OptionalAttr<F32Attr>:$scale
  );
  let results = (outs Attn_Activation:$result);

  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,`
    type($value) `->` type($result)
  }];

  let extraClassDeclaration = [{
    /// The scale applied to Q·Kᵀ: the attribute, or 1/sqrt(head_dim).
    float getEffectiveScale();
  }];

  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Model level
//===----------------------------------------------------------------------===//

def Attn_ModelOp : Attn_Op<"model", [Symbol, SymbolTable, NoTerminator,
                                      SingleBlock, IsolatedFromAbove]> {
  let summary = "a model: its attention layers and the kernels they use";
  let description = [{
    The unit attnc compiles. Its body holds `attn.attention_layer` ops in
    execution order and, after `--attn-specialize-kernels`, the
    `attn.kernel` ops they reference. `kind` is `decoder-only`, `encoder`
    or `encoder-decoder`; `max_batch` is the number of sequences the KV
    cache is planned for.

    ```mlir
    attn.model @tiny attributes {d_model = 256 : i64, kind = "decoder-only",
                                 max_batch = 1 : i64} {
      attn.attention_layer @layer0 self {...}
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Attn_PositiveI64:$d_model,
                       StrAttr:$kind, Attn_PositiveI64:$max_batch);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Attention layers in execution order.
    auto getLayers() { return getBody().getOps<AttentionLayerOp>(); }
    auto getKernels() { return getBody().getOps<KernelOp>(); }
  }];
}

def Attn_AttentionLayerOp : Attn_Op<"attention_layer",
                                    [Symbol, HasParent<"ModelOp">]> {
  let summary = "one multi-head attention layer and its KV cache";
  let description = [{
    Everything a model declares about one attention layer. `self` layers
    attend to their own sequence (masked for decoders); `cross` layers
    attend to an encoder's output, whose K and V are computed once per
    input. `window` is required with a `sliding_window` mask. `scale`
    defaults to 1/sqrt(head_dim) (`--attn-materialize-defaults` writes it
    out); `softcap` caps logits as softcap·tanh(logit/softcap); `alibi` adds
    ALiBi position biases; `rope_theta`
    enables rotary positions and `rope_scaling` carries a scaling rule as
    its source states it (e.g. `{rope_type = "llama3", factor = 8.0}`);
    `projection_bias` says the Q/K/V/output projections have biases. `cache` is absent for layers that never decode
    (an encoder's self-attention). `stack` is `encoder` or `decoder` in
    encoder-decoder models. `prefill_kernel` and `decode_kernel` name the
    kernels `--attn-specialize-kernels` chose.

    ```mlir
    attn.attention_layer @layer0 self {num_query_heads = 8 : i64,
        num_kv_heads = 2 : i64, head_dim = 64 : i64, mask = #attn.mask<causal>,
        cache = #attn.kv_cache<paged, page_size = 16, dtype = f16,
                               max_length = 2048>}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Attn_LayerKind:$kind,
                       Attn_PositiveI64:$num_query_heads,
                       Attn_PositiveI64:$num_kv_heads,
                       Attn_PositiveI64:$head_dim, Attn_MaskKindAttr:$mask,
                       OptionalAttr<Attn_PositiveI64>:$window,
                       OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<F32Attr>:$softcap,
                       UnitAttr:$alibi,
                       OptionalAttr<F32Attr>:$rope_theta,
                       OptionalAttr<DictionaryAttr>:$rope_scaling,
                       UnitAttr:$projection_bias,
                       OptionalAttr<Attn_KvCacheAttr>:$cache,
                       OptionalAttr<StrAttr>:$stack,
                       OptionalAttr<FlatSymbolRefAttr>:$prefill_kernel,
                       OptionalAttr<FlatSymbolRefAttr>:$decode_kernel);
  let assemblyFormat = "$sym_name $kind attr-dict";
  let hasVerifier = 1;
}

def Attn_KernelOp : Attn_Op<"kernel", [Symbol, HasParent<"ModelOp">]> {
  let summary = "one specialized kernel attnc generates";
  let description = [{
    A kernel for one configuration (heads, head size, mask, scale, cache
    page size and cache element type `kv_dtype`, absent for f32, for
    decode). `window` limits each query to its last `window`
    keys (a causal sliding window). Layers that agree on all of it share the kernel.
    `schedule` is set by `--attn-select-schedules`.

    ```mlir
    attn.kernel @prefill_h8_kv2_d64_causal prefill {causal,
        num_query_heads = 8 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64,
        scale = 1.250000e-01 : f32}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Attn_KernelFamily:$family,
                       Attn_PositiveI64:$num_query_heads,
                       Attn_PositiveI64:$num_kv_heads,
                       Attn_PositiveI64:$head_dim, UnitAttr:$causal,
                       OptionalAttr<Attn_PositiveI64>:$window,
                       F32Attr:$scale, OptionalAttr<F32Attr>:$softcap,
                       UnitAttr:$alibi,
                       OptionalAttr<Attn_PositiveI64>:$page_size,
                       OptionalAttr<TypeAttr>:$kv_dtype,
                       OptionalAttr<Attn_ScheduleAttr>:$schedule);
  let assemblyFormat = "$sym_name $family attr-dict";
  let hasVerifier = 1;
}

#endif // ATTN_OPS_TD
