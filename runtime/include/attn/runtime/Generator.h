//===- Generator.h - continuous-batching text generation ------*- C++ -*-===//
//
// Drives a Model's decoder: requests arrive at any time, every step()
// decodes one token for all running requests as one batch, and a request
// leaves the batch when it produces a stop token, reaches its token budget,
// is cancelled by its callback, or would overflow its sequence's capacity.
//
// Decoder-only models: a request's prompt is prefilled into the cache when
// it is submitted (the prefill kernels), and its first token sampled.
// Encoder-decoder models: a request carries a source; submit() encodes it
// once and stores every cross-attention layer's K/V of it in a cross cache
// that lives until the request ends. Its prompt (the decoder's start
// tokens, usually just <bos>) then enters the self-attention cache one
// token per step, batched with the other requests' steps; the first token
// is sampled after the prompt's last one.
//
// Not thread-safe: one Generator per thread.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_GENERATOR_H
#define ATTN_RUNTIME_GENERATOR_H

#include "attn/runtime/Model.h"
#include "attn/runtime/Sampler.h"

#include <functional>
#include <vector>

namespace attn::runtime {

/// Per generated token, the last cross-attention layer's weights over the
/// source tokens (averaged over heads; see CrossAttentionTrace).
using CrossAttentionRows = std::vector<std::vector<float>>;

struct GenerationRequest {
  /// Encoder input: required by encoder-decoder models, refused otherwise.
  std::vector<int32_t> source;
  std::vector<int32_t> prompt; ///< at least one token
  int maxNewTokens = 16;
  std::vector<int32_t> stopTokens; ///< produced, then generation ends
  SamplingOptions sampling;        ///< greedy by default
  /// Called with each new token; returning false cancels the request.
  std::function<bool(int32_t token)> onToken;
  /// Encoder-decoder models: if set, gets one row per generated token (the
  /// stop token included). For pictures: computed in plain C++.
  CrossAttentionRows *crossAttention = nullptr;
};

enum class FinishReason {
  Running,
  StopToken,
  MaxTokens,
  Cancelled,
  CacheFull, ///< the sequence reached the cache's max length
};

class Generator {
public:
  /// A generator for `model` with room for `maxSequences` requests at once.
  static Status create(const Model &model, int maxSequences,
                       std::unique_ptr<Generator> &generator);

  /// Decoder-only: prefills the request's prompt and samples its first
  /// token (which may already finish it). Encoder-decoder: encodes the
  /// source and stores its cross-attention K/V; the prompt follows in
  /// step(). `id` names the request from then on. On failure nothing is
  /// kept.
  Status submit(GenerationRequest request, int &id);

  /// One token for every running request, as one batch. Finished requests
  /// release their cache pages.
  Status step();

  /// Steps until no request runs.
  Status run();

  /// Forgets every finished request (ids start again at 0), keeping the
  /// caches and scratch buffers for the next ones: a long-lived generator
  /// calls this between batches so its bookkeeping does not grow.
  /// InvalidArgument while a request still runs.
  Status clear();

  /// Room for this many requests at once.
  int capacity() const { return capacity_; }

  int running() const;
  /// Requests submitted so far (ids are 0..requests()-1).
  int requests() const { return int(requests_.size()); }
  FinishReason finishReason(int id) const;
  /// Tokens generated so far (prompt excluded).
  const std::vector<int32_t> &tokens(int id) const;
  /// Whether a token callback is running. From inside one, submit(),
  /// step(), run() and clear() are refused (InvalidArgument): they would
  /// change the requests the generator is iterating. Reading results and
  /// cancelling (the callback's return value) are fine.
  bool inCallback() const { return inCallback_; }

private:
  struct Request {
    GenerationRequest request;
    Sampler sampler;
    SequenceId sequence = -1;      ///< in cache_
    SequenceId crossSequence = -1; ///< in crossCache_ (encoder-decoder)
    size_t promptFed = 0;          ///< prompt tokens already in cache_
    std::vector<int32_t> generated;
    FinishReason reason = FinishReason::Running;
  };
  Generator(const Model &model, int capacity)
      : model_(model), capacity_(capacity) {}
  /// The next token of `r` from its `logits` [vocabulary], whose greedy
  /// choice (the head's argmax, -1 for a NaN logit) is `greedy`.
  Status choose(Request &r, const float *logits, int32_t greedy,
                int32_t &token);
  /// Records `token` for `r`; ends the request if it should.
  void accept(Request &r, int32_t token);
  /// Ends `r` for `reason`, releasing its cache sequences.
  void finish(Request &r, FinishReason reason);
  bool crossAttends() const { return crossCache_.config().numLayers > 0; }

  const Model &model_;
  int capacity_;
  KvCache cache_;      ///< the decoder's self-attention K/V
  KvCache crossCache_; ///< cross-attention K/V of each source; or empty
  Workspace ws_;
  std::vector<Request> requests_;
  std::vector<float> logits_;
  std::vector<int32_t> greedy_; ///< [batch]: each row's argmax
  std::vector<float> memory_;   ///< encoder output [source tokens][dModel]
  bool inCallback_ = false;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_GENERATOR_H
