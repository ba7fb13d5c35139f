//===- CrossAttentionTrace.h - where a decoded token looked ---*- C++ -*-===//
//
// Private to the runtime. A decode step may report its last cross-attention
// layer's weights (Model::decodeStep's `trace`, e.g. the translator's
// attention picture). The kernels keep no probabilities, so the trace is
// recomputed here in plain C++ from the cached keys, off the path of every
// step that does not ask for it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_CROSSATTENTIONTRACE_H
#define ATTN_RUNTIME_CROSSATTENTIONTRACE_H

#include "attn/runtime/KvCache.h"
#include "attn/runtime/Model.h"
#include "attn/runtime/ModelPlan.h"

namespace attn::runtime {

/// softmax(q·Kᵀ·scale) of every head of `query` [batch][Hq·D] over the
/// keys `layer` of `cache` holds for each of `sequences`, averaged over
/// heads, into trace.weights [batch][keys].
Status traceCrossAttention(const PlanOp &op, const KvCache &cache,
                           const SequenceId *sequences, const float *query,
                           int64_t batch, int layer,
                           CrossAttentionTrace &trace);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_CROSSATTENTIONTRACE_H
