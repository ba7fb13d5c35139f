//===- LatentAttention.h - multi-head latent attention ----------*- C++ -*-===//
//
// Private to the runtime. A latent layer (PlanOp::Latent, DeepSeek's MLA)
// runs as an attention of its H heads over one key head whose values are
// the keys: the rows [k_pe (rope), latent (rank)], which are also all its
// cache holds. latentProject computes, before the attention, each head's
// absorbed query [q_pe, W_uk_hᵀ · q_nope] and the new tokens' rows;
// latentUnabsorb takes, after it, the latent part of each head's output
// through W_uv_h. ModelRunner attends between the two with the layer's
// prefill and decode kernels as for any other layer. W_ukᵀ and W_uv are
// expert kernels with a head per expert: one GEMM per head over a pass's
// tokens, or for one token the grouped variant, every head in one call.
// CPU only (Model::load).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_LATENTATTENTION_H
#define ATTN_RUNTIME_LATENTATTENTION_H

#include "ContextBuffers.h"
#include "ModelWeights.h"

#include "attn/runtime/ModelPlan.h"

#include <cstdint>

namespace attn::runtime {

/// A latent layer's weights (Model::Weights, ModelWeights.h).
struct LatentWeights {
  const WeightMatrix &queryDown, &query, &keyValue, &absorb, &unabsorb;
  const Floats &queryDownNorm, &latentNorm;
};

/// From `input` [tokens][d] at `positions` [tokens]: `queryRows`
/// [tokens][H][rope + rank], each head's rotated query channels and its
/// absorbed latent query, and `rows` [tokens][rope + rank], each token's
/// rotated shared key and normed latent (its keys, its values and what
/// the cache keeps).
Status latentProject(const PlanOp &op, const LatentWeights &w,
                     const float *input, int64_t tokens, int64_t d,
                     const int32_t *positions, LatentBuffers &buffers,
                     float *queryRows, float *rows);

/// `output` [tokens][H · value]: each head's W_uv_h times the latent part
/// of its attention output, `attention` [tokens][H][rope + rank]; the two
/// may be one buffer (its rows are read first).
Status latentUnabsorb(const PlanOp &op, const LatentWeights &w,
                      const float *attention, int64_t tokens,
                      LatentBuffers &buffers, float *output);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_LATENTATTENTION_H
