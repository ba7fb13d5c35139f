//===- ModelRunner.h - one forward pass over a model's ops ------*- C++ -*-===//
//
// Private to the runtime: Model's public calls (ModelCalls.cpp) check their
// arguments and the caches, then run one stack's ops here.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_MODELRUNNER_H
#define ATTN_RUNTIME_MODELRUNNER_H

#include "attn/runtime/KernelCall.h"
#include "attn/runtime/Model.h"

namespace attn::runtime {

/// Prefill: whole sequences, attention by the prefill kernels. Step: one
/// new token per sequence of a batch, attention by the decode kernels over
/// KV caches.
enum class Mode { Prefill, Step };

/// The walk over one stack's ops (a friend of Model).
class ModelRunner {
public:
  using Weights = Model::Weights;
  struct Inputs {
    Mode mode;
    int tokens; // tokens in the batch (Step: one per sequence)
    const int32_t *ids, *positions;
    // Prefill with cross layers: the encoder output.
    const float *memory = nullptr;
    int memoryLength = 0;
    // Step: caches and sequences; a sequence may take several rows (a
    // prompt's chunk), each attending to its cache up to its own position.
    KvCache *selfCache = nullptr;
    const KvCache *crossCache = nullptr;
    const SequenceId *selfSequences = nullptr, *crossSequences = nullptr;
    CrossAttentionTrace *trace = nullptr; // Step: the last cross layer
    int lastCrossLayer = -1;
    // Prefill into a cache: K/V of cached self layers go to
    // selfSequences[0] of selfCache.
    bool fillCache = false;
    // The head's rows [headRowCount], ascending (null: every row).
    const int32_t *headRows = nullptr;
    int headRowCount = 0;
    // With a head: each logits row's greedy token [rows] (-1: a NaN logit).
    int32_t *greedy = nullptr;
  };

  /// Runs the ops of `stack` (and the output head for the decoder) on
  /// `context`'s buffers, which must be `model`'s. On return `*output`
  /// (when given) is the stack's output [tokens][d], one of the context's
  /// buffers; with a head, `logits` [head rows][vocab] (in.headRows, or
  /// every token).
  static Status run(const Model &model, bool decoderStack, const Inputs &in,
                    ExecutionContext &context, float *logits,
                    Placed<const float> *output);
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_MODELRUNNER_H
