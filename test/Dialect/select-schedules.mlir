// RUN: rm -rf %t && split-file %s %t
// RUN: attn-opt %t/model.mlir --attn-select-schedules | FileCheck %s --check-prefix=HEURISTIC
// RUN: attn-opt %t/model.mlir '--attn-select-schedules=target=x86-64-linux-avx2-fma schedule-db=%t/db.json' | FileCheck %s --check-prefix=DB
// RUN: not attn-opt %t/model.mlir '--attn-select-schedules=schedule-db=%t/bad.json' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not attn-opt %t/model.mlir '--attn-select-schedules=schedule-db=%t/syntax.json' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not attn-opt %t/model.mlir '--attn-select-schedules=schedule-db=%t/none.json' 2>&1 | FileCheck %s --check-prefix=MISSING

// Heuristics (attn::defaultSdpaSchedule): 128-row query blocks, 256-key
// chunks, 6-row P·V register tiles; Q·Kᵀ tiles of 4 keys, 8 for fp32
// products from head_dim 128 up.
// HEURISTIC: attn.kernel @prefill_small prefill {{.*}}schedule = #attn.schedule<query_block = 128, kv_chunk = 256, qk_tile_keys = 4, pv_tile_rows = 6, split_keys = 512, vector_width = 0, source = "heuristic">
// HEURISTIC: attn.kernel @prefill_wide prefill {{.*}}schedule = #attn.schedule<query_block = 128, kv_chunk = 256, qk_tile_keys = 8, pv_tile_rows = 6, split_keys = 512, vector_width = 0, source = "heuristic">
// HEURISTIC: attn.kernel @prefill_wide_bf16 prefill {{.*}}schedule = #attn.schedule<query_block = 128, kv_chunk = 256, qk_tile_keys = 4, pv_tile_rows = 6, split_keys = 512, vector_width = 0, source = "heuristic">

// The database entry for this kernel and target wins; others fall back.
// DB: attn.kernel @prefill_small prefill {{.*}}schedule = #attn.schedule<query_block = 96, kv_chunk = 128, qk_tile_keys = 8, pv_tile_rows = 4, split_keys = 1024, vector_width = 8, source = "db">
// DB: attn.kernel @prefill_wide prefill {{.*}}source = "heuristic">

// BAD: bad.json:4:50: error: 'kv_chunk' must be an integer in [1, 1048576]
// BAD: bad.json:6:7: error: unknown key 'colour' in 'entries[0]'
// SYNTAX: syntax.json:1:15: error: invalid JSON: Invalid JSON value
// MISSING: error: cannot read the schedule database: {{.*}}none.json

//--- model.mlir
attn.model @m attributes {d_model = 256 : i64, kind = "decoder-only", max_batch = 1 : i64} {
  attn.kernel @prefill_small prefill {causal, head_dim = 64 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = 0.125 : f32}
  attn.kernel @prefill_wide prefill {causal, head_dim = 256 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = 0.0625 : f32}
  attn.kernel @prefill_wide_bf16 prefill {causal, compute_dtype = bf16, head_dim = 256 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, scale = 0.0625 : f32}
}
//--- db.json
{
  "entries": [
    {"kernel": "prefill_small", "target": "x86-64-linux-avx2-fma",
     "schedule": {"query_block": 96, "kv_chunk": 128, "qk_tile_keys": 8, "pv_tile_rows": 4, "split_keys": 1024, "vector_width": 8},
     "gflops": 123.4},
    {"kernel": "prefill_wide", "target": "x86-64-linux-avx512",
     "schedule": {"query_block": 32, "kv_chunk": 64, "qk_tile_keys": 4, "pv_tile_rows": 2, "split_keys": 64}}
  ]
}
//--- bad.json
{
  "entries": [
    {"kernel": "prefill_small", "target": "x86-64-linux-avx2-fma",
     "schedule": {"query_block": 96, "kv_chunk": -128,
                  "qk_tile_keys": 8, "pv_tile_rows": 4, "split_keys": 1024},
      "colour": "blue"}
  ]
}
//--- syntax.json
{"entries": [,]}
