// RUN: attn-opt %s --attn-decompose-sdpa=kv-tile=32 -split-input-file | FileCheck %s
// RUN: not attn-opt %s --attn-decompose-sdpa=kv-tile=0 -split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO

// RUN: attn-opt %s --attn-decompose-sdpa="kv-tile=32 query-tile=64" -split-input-file | FileCheck %s --check-prefix=ROWS
// RUN: not attn-opt %s --attn-decompose-sdpa=query-tile=-1 -split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// ZERO: error: kv-tile must be positive, not 0
// NEGATIVE: error: query-tile must be 0 (no tiling) or positive, not -1

// With query-tile, an scf.forall over (batch entry, tile of 64 rows), the
// last tile shorter; each iteration runs the key loop on its rows of Q and
// its entry's K and V, the causal diagonal shifted by the tile's first row,
// and writes its rows of the result.
// ROWS-LABEL: func.func @gqa
// ROWS: %[[S:.*]] = tensor.dim %arg0, %c1
// ROWS: %[[TILES:.*]] = affine.apply #{{.*}}(%[[S]])
// ROWS: scf.forall (%[[B:.*]], %[[T:.*]]) in (%{{.*}}, %[[TILES]]) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<?x?x8x16xf32>)
// ROWS: %[[FIRST:.*]] = arith.muli %[[T]], %{{.*}}
// ROWS: %[[ROWS:.*]] = affine.min #{{.*}}(%[[FIRST]], %[[S]])
// ROWS: tensor.extract_slice %arg0[%[[B]], %[[FIRST]], 0, 0] [1, %[[ROWS]], 8, 16]
// ROWS: tensor.extract_slice %arg1[%[[B]], 0, 0, 0] [1, %{{.*}}, 2, 16]
// ROWS: tensor.extract_slice %arg2[%[[B]], 0, 0, 0] [1, %{{.*}}, 2, 16]
// ROWS: %[[SHIFT:.*]] = arith.subi %{{.*}}, %[[S]]
// ROWS: arith.addi %[[SHIFT]], %[[FIRST]]
// ROWS: scf.for
// ROWS: scf.yield
// ROWS: scf.forall.in_parallel
// ROWS: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[B]], %[[FIRST]], 0, 0] [1, %[[ROWS]], 8, 16]

// Grouped-query attention (8 query heads on 2 KV heads): the keys in tiles
// of 32, the last one shorter; m, l and acc carried by the loop; query
// head h reads KV head h floordiv 4 in both products.
// CHECK-DAG: #[[TILE:.*]] = affine_map<(d0, d1) -> (32, d1 - d0)>
// CHECK-DAG: #[[KEYS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2 floordiv 4, d4)>
// CHECK-DAG: #[[VALUES:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2 floordiv 4, d3)>
// CHECK-LABEL: func.func @gqa
// CHECK-NOT: attn.sdpa
// CHECK: %[[KV:.*]] = tensor.dim %arg1, %c1
// CHECK: %[[MAX:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x?x8xf32>)
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: scf.for %[[FIRST:.*]] = %{{.*}} to %[[KV]] step %[[C32]] iter_args(%[[M:.*]] = %[[MAX]], %[[L:.*]] = %{{.*}}, %[[ACC:.*]] = %{{.*}}) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8x16xf32>)
// CHECK: %[[N:.*]] = affine.min #[[TILE]](%[[FIRST]], %[[KV]])
// CHECK: tensor.extract_slice %arg1[0, %[[FIRST]], 0, 0] [%{{.*}}, %[[N]], 2, 16]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[KEYS]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// The logits: scale, the causal mask (key past the row's diagonal), -inf.
// CHECK: arith.constant 2.500000e-01
// CHECK: arith.cmpi sgt
// CHECK: arith.select %{{.*}}, %cst{{.*}}, %{{.*}} : f32
// The running maximum reduces into the carried m.
// CHECK: outs(%[[M]] : tensor<?x?x8xf32>)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[VALUES]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: scf.yield
// After the loop, acc / l, 0 where l is 0.
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: return
func.func @gqa(%q: tensor<?x?x8x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>) -> tensor<?x?x8x16xf32> {
  %o = attn.sdpa %q, %k, %v {causal, head_dim = 16 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
      : tensor<?x?x8x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x8x16xf32>
  return %o : tensor<?x?x8x16xf32>
}

// -----

// Every logit setting honoured: softcap (tanh), ALiBi (a constant of the 4
// heads' slopes, times the key's distance from the diagonal), the sliding
// window (a key at or before diagonal - window is masked too).
// CHECK-LABEL: func.func @settings
// CHECK: arith.constant dense<[2.500000e-01, 6.250000e-02, 1.562500e-02, 3.906250e-03]> : tensor<4xf32>
// CHECK: scf.for
// CHECK: math.tanh
// CHECK: arith.sitofp
// CHECK: arith.cmpi sgt
// CHECK: arith.constant 5 : index
// CHECK: arith.cmpi sle
// CHECK: arith.ori
func.func @settings(%q: tensor<?x?x4x8xf32>, %k: tensor<?x?x4x8xf32>, %v: tensor<?x?x4x8xf32>) -> tensor<?x?x4x8xf32> {
  %o = attn.sdpa %q, %k, %v {alibi, causal, head_dim = 8 : i64, num_kv_heads = 4 : i64, num_query_heads = 4 : i64, softcap = 30.0 : f32, window = 5 : i64}
      : tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x?x4x8xf32>
  return %o : tensor<?x?x4x8xf32>
}

// -----

// Static shapes (a kernel specialized for one prompt length): the running
// state and every tile keep the static sizes; only a tile's key count is
// dynamic (the last tile may be shorter).
// CHECK-LABEL: func.func @static_shapes
// CHECK: tensor.empty() : tensor<1x128x8xf32>
// CHECK: tensor.empty() : tensor<1x128x8x64xf32>
// CHECK: scf.for
// CHECK: tensor.empty(%{{.*}}) : tensor<1x128x8x?xf32>
// CHECK: scf.yield
// CHECK: tensor.empty() : tensor<1x128x8x64xf32>
// CHECK: return %{{.*}} : tensor<1x128x8x64xf32>
func.func @static_shapes(%q: tensor<1x128x8x64xf32>, %k: tensor<1x128x2x64xf32>, %v: tensor<1x128x2x64xf32>) -> tensor<1x128x8x64xf32> {
  %o = attn.sdpa %q, %k, %v {causal, head_dim = 64 : i64, num_kv_heads = 2 : i64, num_query_heads = 8 : i64}
      : tensor<1x128x8x64xf32>, tensor<1x128x2x64xf32>, tensor<1x128x2x64xf32> -> tensor<1x128x8x64xf32>
  return %o : tensor<1x128x8x64xf32>
}
