//===- DecomposeSdpa.cpp - attn.sdpa as tiled online softmax --------------===//
//
// attn.sdpa in upstream dialects, the way flash attention computes it: the
// keys in tiles, a running maximum, sum and output per query row. Shapes in
// the comments: B batch, S query rows, H query heads, D head_dim, N the
// keys of the current tile; every tensor is indexed (b, i, h, ...) so the
// output keeps the query's [B][S][H][D] layout.
//
//===----------------------------------------------------------------------===//

#include "attn/AttnPasses.h"
#include "attn/schedules/Alibi.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_DECOMPOSESDPA
#include "attn/AttnPasses.h.inc"

namespace {
using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel,
                       kRed = IteratorType::reduction;

/// Builds one attn.sdpa's replacement in front of it.
class SdpaDecomposition {
public:
  SdpaDecomposition(SdpaOp op, int64_t kvTile, int64_t queryTile)
      : op(op), b(op), loc(op.getLoc()), kvTile(kvTile), queryTile(queryTile),
        f32(b.getF32Type()) {}

  /// The op's replacement: all its rows at once, or with queryTile an
  /// scf.forall over (batch entry, tile of queryTile rows), each iteration
  /// the whole key loop for its rows and every head. Those iterations are
  /// independent (the unit a GPU lowering maps to thread blocks; the heads
  /// of a block share its K and V tiles under GQA).
  Value build() {
    Value query = op.getQuery(), key = op.getKey(), value = op.getValue();
    Value allRows = dimension(query, 1);
    if (queryTile <= 0) {
      Value result = decompose(query, key, value, allRows,
                               b.create<arith::ConstantIndexOp>(loc, 0));
      return b.createOrFold<tensor::CastOp>(loc, op.getType(), result);
    }
    SmallVector<OpFoldResult> upperBounds = {
        getAsOpFoldResult(dimension(query, 0)),
        getAsOpFoldResult(b.createOrFold<affine::AffineApplyOp>(
            loc, map(1, {d(0).ceilDiv(queryTile)}), ValueRange{allRows}))};
    auto forall = b.create<scf::ForallOp>(
        loc, upperBounds, ValueRange{emptyLike(query)}, std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    Value entry = forall.getInductionVars()[0];
    Value firstRow = b.create<arith::MulIOp>(
        loc, forall.getInductionVars()[1],
        b.create<arith::ConstantIndexOp>(loc, queryTile));
    // min(queryTile, rows - firstRow) rows in this tile.
    Value tileRows = b.create<affine::AffineMinOp>(
        loc,
        AffineMap::get(2, 0, {b.getAffineConstantExpr(queryTile), d(1) - d(0)},
                       b.getContext()),
        ValueRange{firstRow, allRows});
    // Rows [first, first + count) of this iteration's batch entry, every
    // head and channel: the slice's offsets, sizes and strides.
    struct Rows {
      SmallVector<OpFoldResult> offsets, sizes, strides;
    };
    auto rowsOf = [&](Value tensor, OpFoldResult first, OpFoldResult count) {
      auto type = cast<RankedTensorType>(tensor.getType());
      return Rows{{entry, first, b.getIndexAttr(0), b.getIndexAttr(0)},
                  {b.getIndexAttr(1), count, b.getIndexAttr(type.getDimSize(2)),
                   b.getIndexAttr(type.getDimSize(3))},
                  SmallVector<OpFoldResult>(4, b.getIndexAttr(1))};
    };
    auto extract = [&](Value tensor, const Rows &rows) -> Value {
      return b.create<tensor::ExtractSliceOp>(loc, tensor, rows.offsets,
                                              rows.sizes, rows.strides);
    };
    auto everyKey = [&](Value tensor) {
      return extract(tensor, rowsOf(tensor, b.getIndexAttr(0),
                                    getAsOpFoldResult(dimension(tensor, 1))));
    };
    const Rows queryRows = rowsOf(query, firstRow, tileRows);
    Value tileQuery = extract(query, queryRows);
    Value entryKeys = everyKey(key), entryValues = everyKey(value);
    Value tile =
        decompose(tileQuery, entryKeys, entryValues, allRows, firstRow);
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    b.create<tensor::ParallelInsertSliceOp>(
        loc, tile, forall.getRegionIterArgs()[0], queryRows.offsets,
        queryRows.sizes, queryRows.strides);
    return forall.getResult(0);
  }

private:
  /// The key loop for `query`'s rows, which are rows firstRow... of an op
  /// with allRows rows: [B][S][H][D] for the query's B and S.
  Value decompose(Value query, Value key, Value value, Value allRows,
                  Value firstRow) {
    const int64_t heads = op.getNumQueryHeads(), dim = op.getHeadDim();
    group = heads / op.getNumKvHeads();
    batch = dimension(query, 0);
    rows = dimension(query, 1);
    keys = dimension(key, 1);
    // Row i of the op sees its diagonal key at i + (keys - allRows): the
    // mask is aligned to the end of the keys (a decode step over a cache).
    // Row i of this tile is row firstRow + i of the op.
    offset = b.create<arith::AddIOp>(
        loc, b.create<arith::SubIOp>(loc, keys, allRows), firstRow);
    if (op.getAlibi()) {
      std::vector<float> slopes = ::attn::alibiSlopes(int(heads));
      auto type = RankedTensorType::get({heads}, f32);
      alibi = b.create<arith::ConstantOp>(
          loc, DenseElementsAttr::get(type, llvm::ArrayRef(slopes)));
    }

    // m, l [B][S][H] and acc [B][S][H][D] before the first tile.
    const float negInf = -std::numeric_limits<float>::infinity();
    const OpFoldResult b0 = getAsOpFoldResult(batch),
                       s0 = getAsOpFoldResult(rows);
    Value m = filled({b0, s0, b.getIndexAttr(heads)}, negInf);
    Value l = filled({b0, s0, b.getIndexAttr(heads)}, 0.0f);
    Value acc =
        filled({b0, s0, b.getIndexAttr(heads), b.getIndexAttr(dim)}, 0.0f);
    Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
    Value step = b.create<arith::ConstantIndexOp>(loc, kvTile);
    auto loop = b.create<scf::ForOp>(
        loc, zero, keys, step, ValueRange{m, l, acc},
        [&](OpBuilder &nested, Location, Value first, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          SmallVector<Value> next = tile(query, key, value, first, carried[0],
                                         carried[1], carried[2]);
          b.create<scf::YieldOp>(loc, next);
        });
    return normalize(loop.getResult(1), loop.getResult(2));
  }

  Value dimension(Value tensor, int64_t d) {
    return b.createOrFold<tensor::DimOp>(loc, tensor, d);
  }
  Value constant(float x) {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(x));
  }
  AffineExpr d(int i) { return b.getAffineDimExpr(i); }
  AffineMap map(int dims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(dims, 0, results, b.getContext());
  }

  /// An f32 tensor of these sizes (static where they are constants, so the
  /// types follow the query's: batch and rows may be static or not), filled
  /// with `x`.
  Value filled(ArrayRef<OpFoldResult> sizes, float x) {
    Value empty = b.create<tensor::EmptyOp>(loc, sizes, f32);
    return b.create<linalg::FillOp>(loc, constant(x), empty).getResult(0);
  }
  Value emptyLike(Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    SmallVector<Value> dynamic;
    for (int64_t i = 0; i < type.getRank(); i++)
      if (type.isDynamicDim(i))
        dynamic.push_back(dimension(tensor, i));
    return b.create<tensor::EmptyOp>(loc, type.getShape(), f32, dynamic);
  }

  /// One tile of keys [first, first + N): the new m, l and acc.
  SmallVector<Value> tile(Value query, Value key, Value value, Value first,
                          Value m, Value l, Value acc) {
    // N = min(kvTile, keys - first).
    Value count = b.create<affine::AffineMinOp>(
        loc,
        AffineMap::get(2, 0, {b.getAffineConstantExpr(kvTile), d(1) - d(0)},
                       b.getContext()),
        ValueRange{first, keys});
    auto slice = [&](Value tensor) {
      auto type = cast<RankedTensorType>(tensor.getType());
      SmallVector<OpFoldResult> offsets = {
          b.getIndexAttr(0), first, b.getIndexAttr(0), b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {batch, count,
                                         b.getIndexAttr(type.getDimSize(2)),
                                         b.getIndexAttr(type.getDimSize(3))};
      SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
      return b.create<tensor::ExtractSliceOp>(loc, tensor, offsets, sizes,
                                              strides);
    };
    Value keyTile = slice(key), valueTile = slice(value);
    const int64_t heads = op.getNumQueryHeads();
    // The KV head of query head h.
    AffineExpr kvHead = d(2).floorDiv(group);

    // Q·Kᵀ [B][S][H][N], loops (b, i, h, t, c).
    Value scores = filled({getAsOpFoldResult(batch), getAsOpFoldResult(rows),
                           b.getIndexAttr(heads), getAsOpFoldResult(count)},
                          0.0f);
    scores = contract(query, keyTile, scores, {d(0), d(1), d(2), d(4)},
                      {d(0), d(3), kvHead, d(4)});

    // Logits: scaled, capped, biased and masked, loops (b, i, h, t).
    const int64_t window = op.getWindow().value_or(0);
    const float softcap =
        op.getSoftcap() ? op.getSoftcap()->convertToFloat() : 0.0f;
    SmallVector<Value> inputs = {scores};
    SmallVector<AffineMap> maps = {map(4, {d(0), d(1), d(2), d(3)})};
    if (alibi) {
      inputs.push_back(alibi);
      maps.push_back(map(4, {d(2)}));
    }
    maps.push_back(map(4, {d(0), d(1), d(2), d(3)}));
    Value logits =
        b.create<linalg::GenericOp>(
             loc, scores.getType(), inputs, emptyLike(scores), maps,
             ArrayRef<IteratorType>{kPar, kPar, kPar, kPar},
             [&](OpBuilder &n, Location at, ValueRange args) {
               auto c = [&](float x) -> Value {
                 return n.create<arith::ConstantOp>(at, n.getF32FloatAttr(x));
               };
               Value x = n.create<arith::MulFOp>(at, args[0],
                                                 c(op.getEffectiveScale()));
               if (softcap > 0)
                 x = n.create<arith::MulFOp>(
                     at, c(softcap),
                     n.create<math::TanhOp>(
                         at, n.create<arith::DivFOp>(at, x, c(softcap))));
               // j (the key) and the row's diagonal key, as indices.
               Value i = n.create<linalg::IndexOp>(at, 1);
               Value j = n.create<arith::AddIOp>(
                   at, first, n.create<linalg::IndexOp>(at, 3));
               Value diagonal = n.create<arith::AddIOp>(at, i, offset);
               if (alibi) {
                 Value distance = n.create<arith::SIToFPOp>(
                     at, f32,
                     n.create<arith::IndexCastOp>(
                         at, n.getI64Type(),
                         n.create<arith::SubIOp>(at, j, diagonal)));
                 x = n.create<arith::AddFOp>(
                     at, x, n.create<arith::MulFOp>(at, args[1], distance));
               }
               if (op.getCausal()) {
                 Value hidden = n.create<arith::CmpIOp>(
                     at, arith::CmpIPredicate::sgt, j, diagonal);
                 if (window > 0) {
                   Value edge = n.create<arith::SubIOp>(
                       at, diagonal,
                       n.create<arith::ConstantIndexOp>(at, window));
                   hidden = n.create<arith::OrIOp>(
                       at, hidden,
                       n.create<arith::CmpIOp>(at, arith::CmpIPredicate::sle, j,
                                               edge));
                 }
                 x = n.create<arith::SelectOp>(
                     at, hidden, c(-std::numeric_limits<float>::infinity()), x);
               }
               n.create<linalg::YieldOp>(at, x);
             })
            .getResult(0);

    // m_new = max(m, max_t logit), loops (b, i, h, t).
    Value mNew = b.create<linalg::GenericOp>(
                      loc, m.getType(), logits, m,
                      ArrayRef<AffineMap>{map(4, {d(0), d(1), d(2), d(3)}),
                                          map(4, {d(0), d(1), d(2)})},
                      ArrayRef<IteratorType>{kPar, kPar, kPar, kRed},
                      [&](OpBuilder &n, Location at, ValueRange args) {
                        n.create<linalg::YieldOp>(
                            at, ValueRange{n.create<arith::MaximumFOp>(
                                    at, args[0], args[1])});
                      })
                     .getResult(0);

    // exp(x - m_new) over x's rank-`rank` loops (m_new indexed by the first
    // three), or `unseenValue` where m_new is -inf: a row that has seen no
    // key has weights 0 and rescaling 1, never exp(-inf - -inf).
    auto expMinusMax = [&](Value x, int rank, float unseenValue) {
      SmallVector<AffineExpr> all;
      for (int i = 0; i < rank; i++)
        all.push_back(d(i));
      return b
          .create<linalg::GenericOp>(
              loc, x.getType(), ValueRange{x, mNew}, emptyLike(x),
              ArrayRef<AffineMap>{map(rank, all), map(rank, {d(0), d(1), d(2)}),
                                  map(rank, all)},
              SmallVector<IteratorType>(rank, kPar),
              [&](OpBuilder &n, Location at, ValueRange args) {
                Value e = n.create<math::ExpOp>(
                    at, n.create<arith::SubFOp>(at, args[0], args[1]));
                Value unseen = n.create<arith::CmpFOp>(
                    at, arith::CmpFPredicate::OEQ, args[1],
                    n.create<arith::ConstantOp>(
                        at, n.getF32FloatAttr(
                                -std::numeric_limits<float>::infinity())));
                Value fallback = n.create<arith::ConstantOp>(
                    at, n.getF32FloatAttr(unseenValue));
                n.create<linalg::YieldOp>(
                    at, ValueRange{n.create<arith::SelectOp>(at, unseen,
                                                             fallback, e)});
              })
          .getResult(0);
    };
    // Weights p = exp(logit - m_new) [B][S][H][N]; rescaling of the old sum
    // and output, exp(m - m_new) [B][S][H].
    Value weights = expMinusMax(logits, 4, 0.0f);
    Value rescale = expMinusMax(m, 3, 1.0f);

    // l_new = l·rescale + Σ_t p, loops (b, i, h, t).
    Value lScaled = multiply(l, rescale, 3);
    Value lNew =
        b.create<linalg::GenericOp>(
             loc, l.getType(), weights, lScaled,
             ArrayRef<AffineMap>{map(4, {d(0), d(1), d(2), d(3)}),
                                 map(4, {d(0), d(1), d(2)})},
             ArrayRef<IteratorType>{kPar, kPar, kPar, kRed},
             [&](OpBuilder &n, Location at, ValueRange args) {
               n.create<linalg::YieldOp>(at, ValueRange{n.create<arith::AddFOp>(
                                                 at, args[0], args[1])});
             })
            .getResult(0);
    // acc_new = acc·rescale + Σ_t p·V, loops (b, i, h, c, t).
    Value accScaled = multiply(acc, rescale, 4);
    Value accNew =
        contract(weights, valueTile, accScaled, {d(0), d(1), d(2), d(4)},
                 {d(0), d(4), kvHead, d(3)});
    return {mNew, lNew, accNew};
  }

  /// init + Σ lhs·rhs over loops (b, i, h, x, r): the result is indexed
  /// (b, i, h, x) and r is reduced; lhsIndex and rhsIndex place the operands
  /// in those loops (Q·Kᵀ: r = channel; P·V: r = key).
  Value contract(Value lhs, Value rhs, Value init,
                 ArrayRef<AffineExpr> lhsIndex, ArrayRef<AffineExpr> rhsIndex) {
    return b
        .create<linalg::GenericOp>(
            loc, init.getType(), ValueRange{lhs, rhs}, init,
            ArrayRef<AffineMap>{map(5, lhsIndex), map(5, rhsIndex),
                                map(5, {d(0), d(1), d(2), d(3)})},
            ArrayRef<IteratorType>{kPar, kPar, kPar, kPar, kRed},
            [&](OpBuilder &n, Location at, ValueRange args) {
              Value product = n.create<arith::MulFOp>(at, args[0], args[1]);
              n.create<linalg::YieldOp>(at, ValueRange{n.create<arith::AddFOp>(
                                                at, args[2], product)});
            })
        .getResult(0);
  }

  /// `tensor` (rank `rank`, indexed (b, i, h, ...)) times `perRow` [B][S][H].
  Value multiply(Value tensor, Value perRow, int rank) {
    SmallVector<AffineExpr> all;
    for (int i = 0; i < rank; i++)
      all.push_back(d(i));
    SmallVector<IteratorType> iterators(rank, kPar);
    return b
        .create<linalg::GenericOp>(
            loc, tensor.getType(), ValueRange{tensor, perRow},
            emptyLike(tensor),
            ArrayRef<AffineMap>{map(rank, all), map(rank, {d(0), d(1), d(2)}),
                                map(rank, all)},
            iterators,
            [&](OpBuilder &n, Location at, ValueRange args) {
              n.create<linalg::YieldOp>(at, ValueRange{n.create<arith::MulFOp>(
                                                at, args[0], args[1])});
            })
        .getResult(0);
  }

  /// The result [B][S][H][D]: acc / l, 0 where the row saw no key (l = 0).
  Value normalize(Value l, Value acc) {
    return b
        .create<linalg::GenericOp>(
            loc, acc.getType(), ValueRange{acc, l}, emptyLike(acc),
            ArrayRef<AffineMap>{map(4, {d(0), d(1), d(2), d(3)}),
                                map(4, {d(0), d(1), d(2)}),
                                map(4, {d(0), d(1), d(2), d(3)})},
            ArrayRef<IteratorType>{kPar, kPar, kPar, kPar},
            [&](OpBuilder &n, Location at, ValueRange args) {
              Value zero =
                  n.create<arith::ConstantOp>(at, n.getF32FloatAttr(0.0f));
              Value empty = n.create<arith::CmpFOp>(
                  at, arith::CmpFPredicate::OEQ, args[1], zero);
              Value quotient = n.create<arith::DivFOp>(at, args[0], args[1]);
              n.create<linalg::YieldOp>(
                  at, ValueRange{n.create<arith::SelectOp>(at, empty, zero,
                                                           quotient)});
            })
        .getResult(0);
  }

  SdpaOp op;
  OpBuilder b;
  Location loc;
  int64_t kvTile, queryTile;
  Type f32;
  int64_t group = 1;
  Value batch, rows, keys, offset, alibi;
};

struct DecomposeSdpaPass : impl::DecomposeSdpaBase<DecomposeSdpaPass> {
  using DecomposeSdpaBase::DecomposeSdpaBase;

  void runOnOperation() override {
    if (kvTile < 1) {
      getOperation().emitError()
          << "kv-tile must be positive, not " << int64_t(kvTile);
      return signalPassFailure();
    }
    if (queryTile < 0) {
      getOperation().emitError()
          << "query-tile must be 0 (no tiling) or positive, not "
          << int64_t(queryTile);
      return signalPassFailure();
    }
    getOperation().walk([&](SdpaOp op) {
      Value result = SdpaDecomposition(op, kvTile, queryTile).build();
      op.getResult().replaceAllUsesWith(result);
      op.erase();
    });
  }
};
} // namespace
} // namespace mlir::attn
