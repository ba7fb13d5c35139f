//===- LatentAttention.cpp - multi-head latent attention ------------------===//

#include "LatentAttention.h"

#include "KernelCalls.h"

#include <algorithm>

namespace attn::runtime {

namespace {
/// A latent layer's projections have no biases. (LinearCall holds a
/// reference: a named call must not bind a temporary.)
const Floats kNoBias;

/// out [tokens][dim] = the RMS norm of `input` [tokens][dim] by `kernel`
/// (one of a latent layer's norms) with `weight` [dim].
Status rmsNorm(const PlanOp &layer, const Kernel &kernel, const Floats &weight,
               const float *input, int64_t tokens, float *out) {
  PlanOp norm;
  norm.kind = OpKind::Norm;
  norm.name = layer.name;
  norm.layerNorm = false;
  norm.kernel = kernel;
  const int64_t dim = int64_t(weight.size());
  return runtime::norm(nullptr, norm, weight, kNoBias, {input, dim, tokens},
                       out);
}

/// Head h's matrix of `kernel` (an expert kernel, a head per expert) for
/// every row of `rows` [tokens · H][in], row i·H + h of token i: `out`
/// [tokens · H][outputs]. One token: the grouped variant over all its
/// heads; more: one product per head over its tokens' rows, gathered into
/// `gathered` and scattered back from `products`.
Status perHead(const Kernel &kernel, const WeightMatrix &weights,
               const float *rows, int64_t tokens, int64_t heads, int64_t in,
               int64_t outputs, LatentBuffers &buffers,
               std::vector<float> &gathered, std::vector<float> &products,
               float *out) {
  if (tokens == 1 && kernel.grouped) {
    buffers.heads.resize(size_t(heads));
    for (int64_t h = 0; h < heads; h++)
      buffers.heads[size_t(h)] = int32_t(h);
    LinearCall call{kernel, weights, kNoBias, rows, heads, in, outputs, out};
    call.experts = buffers.heads.data();
    return linear(nullptr, call);
  }
  gathered.resize(size_t(tokens * in));
  products.resize(size_t(tokens * outputs));
  for (int64_t h = 0; h < heads; h++) {
    for (int64_t i = 0; i < tokens; i++)
      std::copy_n(rows + (i * heads + h) * in, in,
                  gathered.data() + i * in);
    if (Status s = linear(nullptr, {kernel, weights.outputs(h * outputs, outputs),
                                    kNoBias, gathered.data(), tokens, in,
                                    outputs, products.data()});
        !s)
      return s;
    for (int64_t i = 0; i < tokens; i++)
      std::copy_n(products.data() + i * outputs, outputs,
                  out + (i * heads + h) * outputs);
  }
  return Status::ok();
}
} // namespace

Status latentProject(const PlanOp &op, const LatentWeights &w,
                     const float *input, int64_t tokens, int64_t d,
                     const int32_t *positions, LatentBuffers &b,
                     float *queryRows, float *rows) {
  const PlanOp::Latent &l = op.latent;
  const int64_t t = tokens, heads = op.queryHeads, rope = l.ropeDim,
                nope = l.nopeDim, rank = l.rank, width = rope + rank,
                headQuery = rope + nope;
  // The query, through its low-rank path where it has one; RoPE on each
  // head's first rope channels (the kernel's epilogue).
  const float *queryInput = input;
  int64_t queryIn = d;
  if (l.queryRank) {
    b.down.resize(size_t(t * l.queryRank));
    b.downNormed.resize(b.down.size());
    if (Status s = linear(nullptr, {l.queryDown, w.queryDown, kNoBias, input,
                                    t, d, l.queryRank, b.down.data()});
        !s)
      return s;
    if (Status s = rmsNorm(op, l.queryNorm, w.queryDownNorm, b.down.data(), t,
                           b.downNormed.data());
        !s)
      return s;
    queryInput = b.downNormed.data();
    queryIn = l.queryRank;
  }
  b.query.resize(size_t(t * heads * headQuery));
  LinearCall query{op.query, w.query,     kNoBias,       queryInput,
                   t,        queryIn,     heads * headQuery, b.query.data()};
  query.positions = positions;
  if (Status s = linear(nullptr, query); !s)
    return s;
  // The shared key (rotated) and the latent, normed: each token's row.
  b.keyLatent.resize(size_t(t * width));
  LinearCall keyLatent{op.keyValue, w.keyValue, kNoBias, input,
                       t,           d,          width,    b.keyLatent.data()};
  keyLatent.positions = positions;
  if (Status s = linear(nullptr, keyLatent); !s)
    return s;
  b.latent.resize(size_t(t * rank));
  b.normed.resize(b.latent.size());
  for (int64_t i = 0; i < t; i++)
    std::copy_n(b.keyLatent.data() + i * width + rope, rank,
                b.latent.data() + i * rank);
  if (Status s = rmsNorm(op, l.latentNorm, w.latentNorm, b.latent.data(), t,
                         b.normed.data());
      !s)
    return s;
  for (int64_t i = 0; i < t; i++) {
    std::copy_n(b.keyLatent.data() + i * width, rope, rows + i * width);
    std::copy_n(b.normed.data() + i * rank, rank, rows + i * width + rope);
  }
  // Each head's query: its rotated channels, and its other channels taken
  // to the latent by W_uk_hᵀ (the key's up projection absorbed).
  b.nope.resize(size_t(t * heads * nope));
  b.absorbed.resize(size_t(t * heads * rank));
  for (int64_t r = 0; r < t * heads; r++)
    std::copy_n(b.query.data() + r * headQuery + rope, nope,
                b.nope.data() + r * nope);
  // The latent's dense and normed rows are in `rows` now: their buffers
  // serve perHead.
  if (Status s = perHead(l.absorb, w.absorb, b.nope.data(), t, heads, nope,
                         rank, b, b.latent, b.normed, b.absorbed.data());
      !s)
    return s;
  for (int64_t r = 0; r < t * heads; r++) {
    std::copy_n(b.query.data() + r * headQuery, rope, queryRows + r * width);
    std::copy_n(b.absorbed.data() + r * rank, rank,
                queryRows + r * width + rope);
  }
  return Status::ok();
}

Status latentUnabsorb(const PlanOp &op, const LatentWeights &w,
                      const float *attention, int64_t tokens,
                      LatentBuffers &b, float *output) {
  const PlanOp::Latent &l = op.latent;
  const int64_t t = tokens, heads = op.queryHeads, rank = l.rank,
                width = l.ropeDim + rank;
  // The latent part of each head's output (its first rope channels are
  // the weighted shared keys, which no value has), then W_uv_h.
  b.nope.resize(size_t(t * heads * rank));
  for (int64_t r = 0; r < t * heads; r++)
    std::copy_n(attention + r * width + l.ropeDim, rank,
                b.nope.data() + r * rank);
  return perHead(l.unabsorb, w.unabsorb, b.nope.data(), t, heads, rank,
                 l.valueDim, b, b.latent, b.absorbed, output);
}

} // namespace attn::runtime
