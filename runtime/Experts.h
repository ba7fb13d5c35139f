//===- Experts.h - a mixture-of-experts FFN ---------------------*- C++ -*-===//
//
// Private to the runtime. A mixture of experts (PlanOp::Experts): the
// router's logits, each token's choice of experts by the plan's rule, then
// per expert one up and one down kernel over the tokens that chose it
// (gathered into consecutive rows: one GEMM per active expert of a prompt),
// or, where no expert was chosen twice (a decode step), one call of each
// kernel's grouped variant for all the choices (a row per choice, each
// reading its expert's weights); their outputs added to the stream
// weighted. The experts a token did not choose are never read.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_EXPERTS_H
#define ATTN_RUNTIME_EXPERTS_H

#include "ContextBuffers.h"
#include "ModelWeights.h"

#include "attn/runtime/ModelPlan.h"

#include <cstdint>
#include <vector>

namespace attn::runtime {

/// The router's rule (PlanOp::Experts, in double) for each of `tokens`
/// rows of `logits` [tokens][experts.count]: each expert's score (softmax
/// over the row, or the logit's sigmoid) and selection score (the score,
/// plus bias[e] for the sigmoid rule; `bias` [count], null otherwise);
/// with groups, only the experts of the groupTopK best groups keep their
/// selection score (a group's: its largest, or for the sigmoid rule the sum
/// of its two largest; the lower group first among equals), the others' 0;
/// the experts.perToken largest selection scores (the lower expert first
/// among equals, NaN last), weighted by their scores, divided by the chosen
/// ones' sum when experts.normalize, times experts.scale: `choices`
/// [tokens][experts.perToken], in the order chosen.
void routeTokens(const PlanOp::Experts &experts, const float *logits,
                 const float *bias, int64_t tokens, ExpertChoice *choices);

/// A mixture's weights (Model::Weights): the router [d][experts], its bias
/// [experts] (gpt-oss's; empty: none) and a sigmoid router's selection bias
/// [experts], every
/// expert's up [d][experts · width] and down [f][experts · d] and their
/// biases (empty: none); the shared experts' up [d][shared width] and down
/// [shared][d], their biases, and their output's gate [d] (empty: none).
struct ExpertWeights {
  const WeightMatrix &router;
  const Floats &routerBias;    ///< added to the logits; else empty
  const Floats &selectionBias; ///< a sigmoid router's [experts]; else empty
  const WeightMatrix &up, &down;
  const Floats &upBias, &downBias;
  const WeightMatrix &sharedUp, &sharedDown;
  const Floats &sharedUpBias, &sharedDownBias, &sharedGate;
};

/// `out` [tokens][d] = `residual` (null: zero) + the weighted sum of the
/// chosen experts' FFNs of `input` [tokens][d] + the shared experts' FFN
/// (gated where the plan says), with `hidden` [tokens][the wider of one
/// expert's and the shared experts' (gate | up)] for their hidden rows.
/// CPU only.
Status mixtureOfExperts(const PlanOp &op, const ExpertWeights &w,
                        const float *input, int64_t tokens, int64_t d,
                        ExpertBuffers &buffers, float *hidden,
                        const float *residual, float *out);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_EXPERTS_H
