//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn/AttnDialect.td"
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

#endif // ATTN_OPS_TD
