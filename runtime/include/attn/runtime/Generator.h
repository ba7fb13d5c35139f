//===- Generator.h - continuous-batching text generation ------*- C++ -*-===//
//
// Drives a Model's decoder: requests arrive at any time, every step()
// decodes one token for all running requests as one batch, and a request
// leaves the batch when it produces a stop token, reaches its token budget,
// is cancelled by its callback, or would overflow its sequence's capacity.
//
// Decoder-only models: a request's prompt is prefilled into the cache when
// it is submitted (the prefill kernels), and its first token sampled. With
// GeneratorOptions::prefillChunk, prompts are instead fed in chunks inside
// step(): each step decodes one token for every running request and spends
// at most that many prompt tokens on requests still prefilling, all as one
// batch, so a long prompt no longer stalls the running streams. With
// GeneratorOptions::prefixCache, a prompt that starts with pages of tokens
// an earlier request computed reuses their K/V (PrefixCache.h).
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
  /// >= 0: each generated token's log-probability and its `logprobs` most
  /// likely alternatives (tokenLogprob); decoder-only models.
  int logprobs = -1; ///< at most kMaxLogprobs
  /// And every prompt token's after the first (the whole prompt computed
  /// with its logits, none of it from the prefix cache).
  bool promptLogprobs = false;
};

/// The most alternatives GenerationRequest::logprobs asks for (OpenAI's).
constexpr int kMaxLogprobs = 20;

struct GeneratorOptions {
  int maxSequences = 1; ///< requests at once
  /// > 0: prompt tokens one step spends on requests still prefilling while
  /// others decode (with none decoding, a prompt goes whole); 0: submit()
  /// prefills a whole prompt. Decoder-only models.
  int prefillChunk = 0;
  /// Reuse the K/V pages of prompt prefixes other requests computed;
  /// decoder-only models.
  bool prefixCache = false;
};

/// What the prefix cache did so far.
struct PrefixCacheStats {
  int64_t hitTokens = 0;  ///< prompt tokens whose K/V were reused
  int64_t missTokens = 0; ///< prompt tokens computed
  int64_t evictedPages = 0; ///< pages given back to the pool for room
  int pages = 0;            ///< pages it holds now
};

class PrefixCache;

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
  static Status create(const Model &model, const GeneratorOptions &options,
                       std::unique_ptr<Generator> &generator);
  ~Generator();

  /// Decoder-only: prefills the request's prompt (what the prefix cache
  /// holds of it reused) and samples its first token (which may already
  /// finish it); with a prefill chunk, the prompt follows in step().
  /// Encoder-decoder: encodes the
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
  /// The self-attention cache (for its page accounting).
  const KvCache &cache() const { return cache_; }

  int running() const;
  /// Requests submitted so far (ids are 0..requests()-1).
  int requests() const { return int(requests_.size()); }
  FinishReason finishReason(int id) const;
  /// Tokens generated so far (prompt excluded).
  const std::vector<int32_t> &tokens(int id) const;
  /// With request.logprobs >= 0: one per generated token so far.
  const std::vector<TokenLogprob> &logprobs(int id) const;
  /// With request.promptLogprobs: one per prompt token after the first.
  const std::vector<TokenLogprob> &promptLogprobs(int id) const;
  /// Prompt tokens of request `id` whose K/V came from the prefix cache.
  int cachedPromptTokens(int id) const;
  PrefixCacheStats prefixCacheStats() const;
  /// Whether prompts reuse cached prefixes: asked for, and the cache keeps
  /// whole prefixes (not a sliding-window cache).
  bool prefixCaching() const { return prefixCache_ != nullptr; }
  /// Whether request `id` still feeds its prompt (chunked prefill).
  bool prefilling(int id) const;
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
    int cachedPrompt = 0;          ///< of them, from the prefix cache
    std::vector<int32_t> generated;
    std::vector<TokenLogprob> logprobs, promptLogprobs;
    FinishReason reason = FinishReason::Running;
    bool prefilling() const { return promptFed < request.prompt.size(); }
  };
  /// One row of a decoder-only batch (Model::append): a prompt token of a
  /// request still prefilling or the newest token of a decoding one.
  struct Row {
    int request;
    int32_t token;
    bool head;              ///< its logits are wanted
    bool sample;            ///< they choose the request's next token
    int32_t promptNext;     ///< >= 0: the prompt token they give a logprob
  };
  /// submit() without a prefill chunk feeds rows of this many tokens.
  static constexpr int kSubmitChunk = 512;
  /// The most rows of one sequence a step appends.
  static int passRows(const GeneratorOptions &options);
  /// Rows of request `index`'s prompt still to feed, at most `budget`.
  std::vector<Row> promptRows(int index, int budget) const;
  /// The prefill kernels over request `r`'s whole prompt (an empty
  /// sequence), then its first token.
  Status prefillWhole(Request &r);
  /// `r`'s prompt is in the cache: the prefix cache learns its pages.
  void promptDone(Request &r);
  int pagesFor(int tokens) const;
  Generator(const Model &model, const GeneratorOptions &options);
  /// Decoder-only: the rows of the next step (chunks of prompts first,
  /// within the prefill budget `budget`, then one per decoding request).
  std::vector<Row> nextRows(int budget) const;
  /// Runs `rows` as one batch and acts on their logits.
  Status runRows(const std::vector<Row> &rows);
  /// The cross-attending models' step: one token per request.
  Status stepWithCrossAttention();
  /// Ensures `pages` free pages, evicting prefix-cache pages if need be.
  void makeRoom(int pages);
  /// The next token of `r` from its `logits` [vocabulary], whose greedy
  /// choice (the head's argmax, -1 for a NaN logit) is `greedy`.
  Status choose(Request &r, const float *logits, int32_t greedy,
                int32_t &token);
  /// Records `token`, chosen from `logits` [vocabulary], for `r`; ends the
  /// request if it should.
  Status accept(Request &r, const float *logits, int32_t token);
  /// Ends `r` for `reason`, releasing its cache sequences.
  void finish(Request &r, FinishReason reason);
  bool crossAttends() const { return crossCache_.config().numLayers > 0; }

  const Model &model_;
  int capacity_;
  GeneratorOptions options_;
  KvCache cache_;      ///< the decoder's self-attention K/V
  std::unique_ptr<PrefixCache> prefixCache_; ///< of cache_; or null
  KvCache crossCache_; ///< cross-attention K/V of each source; or empty
  ExecutionContext context_; ///< the buffers of the model's forward passes
  std::vector<Request> requests_;
  std::vector<float> logits_;
  std::vector<int32_t> greedy_; ///< [head rows]: each row's argmax
  std::vector<float> memory_;   ///< encoder output [source tokens][dModel]
  bool inCallback_ = false;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_GENERATOR_H
