//===- AttnTypes.td - attn dialect types -------------------*- tablegen -*-===//

#ifndef ATTN_TYPES_TD
#define ATTN_TYPES_TD

include "attn/AttnAttrs.td"
include "mlir/IR/AttrTypeBase.td"

def Attn_CacheType : TypeDef<Attn_Dialect, "Cache"> {
  let mnemonic = "cache";
  let summary = "the KV cache of one attention layer, as a value";
  let description = [{
    The keys and values one layer has cached for each sequence of a batch:
    `heads` KV heads of `head_dim` channels, stored as the `#attn.kv_cache`
    configuration says (layout, page size, element type, max length). At
    the math level a cache is a value: `attn.cache_append` returns a new
    cache rather than changing its operand; the runtime's `KvCache` is its
    in-place implementation.

    ```mlir
    !attn.cache<heads = 2, head_dim = 64,
                #attn.kv_cache<paged, page_size = 16, dtype = f16, max_length = 4096>>
    ```
  }];
  let parameters = (ins "int64_t":$heads, "int64_t":$headDim,
                        "::mlir::attn::KvCacheAttr":$config);
  let assemblyFormat = [{
    `<` `heads` `=` $heads `,` `head_dim` `=` $headDim `,` qualified($config) `>`
  }];
  let genVerifyDecl = 1;
}

def Attn_Mxfp4Type : TypeDef<Attn_Dialect, "Mxfp4"> {
  let mnemonic = "mxfp4";
  let summary = "OCP Microscaling FP4 weights: E2M1 values, 32 to a scale";
  let description = [{
    A weight element type (MLIR 19 has no builtin FP4): 4-bit E2M1 values
    (0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6) whose every block of 32 inputs of an
    output feature shares a power-of-two scale, an E8M0 byte e: W = value ·
    2^(e - 127). What gpt-oss's checkpoints store their experts in; the
    kernels read it as stored (`weight_dtype = !attn.mxfp4`).
  }];
}

#endif // ATTN_TYPES_TD
