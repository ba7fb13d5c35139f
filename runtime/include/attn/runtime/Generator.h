//===- Generator.h - continuous-batching text generation ------*- C++ -*-===//
//
// Drives a decoder-only Model: requests arrive at any time (their prompts
// are prefilled into the cache when submitted), every step() decodes one
// token for all running requests as one batch, and a request leaves the
// batch when it produces a stop token, reaches its token budget, is
// cancelled by its callback, or would overflow its sequence's capacity.
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

struct GenerationRequest {
  std::vector<int32_t> prompt; ///< at least one token
  int maxNewTokens = 16;
  std::vector<int32_t> stopTokens; ///< produced, then generation ends
  SamplingOptions sampling;        ///< greedy by default
  /// Called with each new token; returning false cancels the request.
  std::function<bool(int32_t token)> onToken;
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

  /// Prefills the request's prompt and samples its first token (which may
  /// already finish it). `id` names the request from then on.
  Status submit(GenerationRequest request, int &id);

  /// One token for every running request, as one batch. Finished requests
  /// release their cache pages.
  Status step();

  /// Steps until no request runs.
  Status run();

  int running() const;
  /// Requests submitted so far (ids are 0..requests()-1).
  int requests() const { return int(requests_.size()); }
  FinishReason finishReason(int id) const;
  /// Tokens generated so far (prompt excluded).
  const std::vector<int32_t> &tokens(int id) const;

private:
  struct Request {
    GenerationRequest request;
    Sampler sampler;
    SequenceId sequence = -1;
    std::vector<int32_t> generated;
    FinishReason reason = FinishReason::Running;
  };
  Generator(const Model &model) : model_(model) {}
  /// Records `token` for `r`; ends the request if it should.
  void accept(Request &r, int32_t token);

  const Model &model_;
  KvCache cache_;
  Workspace ws_;
  std::vector<Request> requests_;
  std::vector<float> logits_;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_GENERATOR_H
