//===- AttnPasses.td - attn dialect passes -----------------*- tablegen -*-===//

#ifndef ATTN_PASSES_TD
#define ATTN_PASSES_TD

include "mlir/Pass/PassBase.td"

def MaterializeDefaults : Pass<"attn-materialize-defaults",
                               "::mlir::attn::ModelOp"> {
  let summary = "Write out every implied layer setting";
  let description = [{
    Canonicalizes attention layers so later passes compare like with like:
    the default scale 1/sqrt(head_dim) becomes explicit, a contiguous
    cache's page size becomes its max length, and a sliding window that
    covers the whole cache becomes a causal mask. Multi-query attention
    needs nothing: it already is grouped-query attention with one KV head.
  }];
}

def FuseProjections : Pass<"attn-fuse-projections", "::mlir::attn::ModelOp"> {
  let summary = "One projection kernel for Q, K and V where the weights allow";
  let description = [{
    Marks `fused_projections` on self-attention layers: Q, K and V read the
    same normalized input, so one [d_model][(Hq + 2·Hkv)·head_dim] product
    computes them, with RoPE on Q and K in its epilogue. Unmarked layers
    compute Q alone and K with V (cross-attention layers always do: their
    K and V read the encoder output). The runtime concatenates the weights
    at load time. With `fuse=false` nothing is marked. Projections whose
    weights differ in type (`#attn.weights`) are not fused: Q, K and V
    only when all three share one, and the cache append only into a K/V
    projection whose K and V share one.

    Also marks `fused_cache_append` on attention layers with a cache: the
    projection that produces K and V (fused or not; a cross layer's, from
    the encoder output) writes them into the layer's cache slots in the
    cache dtype (int8: quantized, with their scales), instead of the
    runtime converting and copying them afterwards. `cache-append=false`
    keeps the separate append.
  }];
  let options = [
    Option<"fuse", "fuse", "bool", /*default=*/"true",
           "Fuse the projections (false: mark nothing)">,
    Option<"cacheAppend", "cache-append", "bool", /*default=*/"true",
           "Fuse the cache append into the K/V projection">
  ];
}

def SpecializeKernels : Pass<"attn-specialize-kernels",
                             "::mlir::attn::ModelOp"> {
  let summary = "Create one prefill and one decode kernel per distinct layer";
  let description = [{
    Adds an `attn.kernel` per distinct configuration and points each layer's
    `prefill_kernel` and `decode_kernel` at them: layers that agree on heads,
    head size, mask, scale (and, for decode, cache page size) share kernels,
    so a model of 32 identical layers compiles two attention kernels, not 64.
    Kernels are named after what they compute, e.g.
    `prefill_h32_kv8_d128_causal`. Runs after --attn-materialize-defaults.

    In models of whole blocks (not attention layers alone), the rest of
    each block gets its kernels the same way: linear kernels for
    the projections (fused as `--attn-fuse-projections` marked them), FFNs
    and output head (`linear_i128_o512_bias_gelu_tanh`), norm kernels
    (`layer_norm_d128`) and embedding kernels.
  }];
}

def PlanKvCache : Pass<"attn-plan-kv-cache", "::mlir::attn::ModelOp"> {
  let summary = "Size every layer's KV cache and check the memory budget";
  let description = [{
    Annotates each layer with `kv_bytes_per_token` (2 · KV heads · head size
    · element bytes) and `kv_bytes_per_sequence` (at max length, rounded up
    to whole pages; a sliding-window layer's cache at the pages its window
    spans, attn::kvPagesPerSequence), and the model with the sums and the total for
    `max_batch` sequences (`kv_bytes`). With `kv-budget`, a model that needs
    more fails with an error naming its largest consumers.
  }];
  let options = [
    Option<"kvBudget", "kv-budget", "int64_t", /*default=*/"0",
           "KV cache budget in bytes for the whole model (0: unlimited)">
  ];
}

def SelectSchedules : Pass<"attn-select-schedules", "::mlir::attn::ModelOp"> {
  let summary = "Pick each kernel's schedule: tuning database or heuristic";
  let description = [{
    Sets `schedule` on every `attn.kernel`: the entry of the tuning database
    (`schedule-db`, JSON) whose kernel name and target match, else the
    target's heuristic. The attribute's `source` records which.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"host\"",
           "--target value of attnc (as written) the kernels are generated for">,
    Option<"scheduleDb", "schedule-db", "std::string", /*default=*/"\"\"",
           "Tuning database file (JSON); empty: heuristics only">
  ];
}

def OutlineDecodeSteps : Pass<"attn-outline-decode-steps", "::mlir::ModuleOp"> {
  let summary = "Write each cached layer's decode step with math-level ops";
  let description = [{
    For every attention layer with a KV cache, adds a function
    `@<model>_<layer>_decode_step` that states what one decode step of the
    layer computes, with the tensor-level ops: for self-attention,
    `attn.rope` on the new queries and keys (with `rope_theta`),
    `attn.cache_append` of the new keys and values, `attn.cache_view` and
    `attn.sdpa` with the layer's mask, window, scale, softcap and ALiBi;
    for cross-attention, `attn.cache_view` of the encoder's keys and values
    and `attn.sdpa`. Arguments: query, [key, value, positions (with RoPE)],
    cache; results: the attention output and (self layers) the new cache.
    In a model of whole blocks the step starts from the layer's input
    instead: `attn.project` computes Q (and K, V) from it, and the output
    projection adds the residual stream. Arguments: input [batch, new,
    d_model], the residual stream, [positions], cache, then the weights
    (wq, [bq], [wk, [bk], wv, [bv]], wo, [bo]); results: the new stream and
    (self layers) the new cache.
    This is the reference semantics of the fused kernels attnc generates
    (projection epilogues, decode over pages in place); it is not lowered
    further. Runs after --attn-materialize-defaults.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def DecomposeSdpa : Pass<"attn-decompose-sdpa", "::mlir::func::FuncOp"> {
  let summary = "attn.sdpa as tiled online softmax in linalg and scf";
  let description = [{
    Rewrites every `attn.sdpa` into the loop a flash-attention kernel runs,
    on tensors, in upstream dialects only: an `scf.for` over tiles of
    `kv-tile` keys carries each query row's running maximum `m`, running
    sum `l` and unnormalized output `acc`; per tile, `linalg.generic` ops
    compute the logits Q·Kᵀ (query head h reads KV head h / group), scale,
    softcap, ALiBi and the causal / sliding-window mask, the new maximum,
    the weights exp(logit - m), and fold them into `l` and `acc` after
    rescaling both by exp(m_old - m_new). After the loop `acc / l` is the
    result (0 for a row that saw no key). With `query-tile`, an
    `scf.forall` over (batch entry, tile of rows) holds that loop, each
    iteration independent: the unit the GPU lowering maps to thread
    blocks. Every setting of the op is
    honoured; this is the decomposition the GPU lowering tiles further
    (docs/cuda-tensor-cores.md), checked on the CPU through MLIR's own
    pipeline against attn.sdpa's interpreter (sdpa-decomposition-test).
  }];
  let options = [
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"64",
           "Keys per step of the online softmax">,
    Option<"queryTile", "query-tile", "int64_t", /*default=*/"0",
           "Query rows per scf.forall iteration (with each batch entry); "
           "0: no forall, every row in one key loop">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"];
}

#endif // ATTN_PASSES_TD
