//===- ServingEngine.h - one model, many requests, batched --------*- C++ -*-===//
//
// attn-serve's core, free of HTTP: requests from any thread join one
// Generator that a single worker thread drives (a Generator belongs to one
// thread). Between steps the worker admits queued requests (up to
// `parallel` at once) and retires finished ones, so requests are batched
// continuously: each step decodes one token for every running request and
// feeds a bounded chunk of the prompts still prefilling (chunked prefill),
// prompts reusing the K/V pages of prefixes already computed (the prefix
// cache). Text reaches each request's CompletionJob as its tokens complete
// characters, cut at its stop strings; with log-probabilities asked for,
// each token's arrives beside it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_APPS_SERVINGENGINE_H
#define ATTN_APPS_SERVINGENGINE_H

#include "ServingMetrics.h"

#include "attn/runtime/Generator.h"
#include "attn/runtime/Tokenizer.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace attn::apps {

/// One completion request, shared by the thread that asked for it and the
/// engine's worker.
struct CompletionJob {
  // Set before submit():
  std::vector<int32_t> prompt;
  int maxTokens = 16; ///< 0 only with echo: the prompt's log-probabilities
  runtime::SamplingOptions sampling;
  std::vector<std::string> stops;
  /// >= 0: each token's log-probability and this many alternatives.
  int logprobs = -1;
  /// The prompt's text and, with logprobs, its tokens' log-probabilities
  /// come first (OpenAI's `echo`).
  bool echo = false;

  /// The asker's side: blocks until there is new text or the job has
  /// finished, and moves the new text into `text` and the new tokens'
  /// log-probabilities (echoed prompt tokens first, the first of them
  /// without one: logprob NaN) into `logprobs`. False once the job has
  /// finished and all its text was taken.
  bool next(std::string &text,
            std::vector<runtime::TokenLogprob> *logprobs = nullptr);
  /// The client went away: the engine drops the request at its next token.
  void cancel() { cancelled = true; }

  // Written by the worker under `mutex`; read by the asker after next()
  // returned false:
  std::string finishReason; ///< "stop" or "length", as OpenAI says
  std::string error;        ///< non-empty: the request failed
  /// The failure is the server's (a kernel failed, it is shutting down),
  /// not the request's (a prompt over the cache, a token out of range).
  bool serverFault = false;
  int completionTokens = 0;

private:
  friend class ServingEngine;
  void publish(const std::string &text, bool done,
               std::vector<runtime::TokenLogprob> logprobs = {});
  std::mutex mutex;
  std::condition_variable changed;
  std::string pending;
  std::vector<runtime::TokenLogprob> pendingLogprobs;
  bool finished = false;
  std::atomic<bool> cancelled{false};
};

struct ServingOptions {
  int parallel = 4; ///< requests at once
  /// Prompt tokens one step spends on a request still prefilling while
  /// others decode (0: whole prompts between steps). 64: on TinyLlama-sized
  /// models a step then takes at most ~2.2x a decode step (bench/README.md).
  int prefillChunk = 64;
  bool prefixCache = true;
  /// Optional: where the engine records what it does.
  ServingMetrics *metrics = nullptr;
};

class ServingEngine {
public:
  /// Serves `model` as `options` say; the model, tokenizer and metrics must
  /// outlive the engine.
  static runtime::Status create(const runtime::Model &model,
                                const runtime::Tokenizer &tokenizer,
                                const ServingOptions &options,
                                std::unique_ptr<ServingEngine> &engine);
  /// shutdown().
  ~ServingEngine();
  /// Finishes running and queued requests with an error and stops the
  /// worker; later submissions fail at once. Idempotent.
  void shutdown();

  /// Queues `job`; its text and end arrive through job->next().
  void submit(std::shared_ptr<CompletionJob> job);
  /// Requests decoding now, and waiting for room (from any thread).
  int running() const { return running_count_; }
  int queued() const;
  /// Requests whose clients went away before they finished, so far.
  long cancelled() const { return cancelled_count_; }
  /// Whether prompts reuse cached prefixes (Generator::prefixCaching).
  bool prefixCaching() const { return generator_->prefixCaching(); }

private:
  struct Running;
  ServingEngine(const runtime::Model &model,
                const runtime::Tokenizer &tokenizer,
                const ServingOptions &options)
      : model_(model), tokenizer_(tokenizer), options_(options) {}
  void loop();
  void admit(const std::shared_ptr<CompletionJob> &job);
  /// The callback of a running request's tokens: publishes their text.
  bool onToken(Running &r, int32_t token);
  void retireFinished();
  /// Gauges and counters after a step.
  void record();
  runtime::GeneratorOptions generatorOptions() const;

  const runtime::Model &model_;
  const runtime::Tokenizer &tokenizer_;
  ServingOptions options_;
  std::unique_ptr<runtime::Generator> generator_;
  std::vector<std::shared_ptr<Running>> running_; ///< worker thread only
  std::atomic<int> running_count_{0};               ///< running_.size()
  std::atomic<long> cancelled_count_{0};

  mutable std::mutex mutex_; ///< guards queue_ and stopping_
  std::condition_variable wake_;
  std::deque<std::shared_ptr<CompletionJob>> queue_;
  bool stopping_ = false;
  std::thread worker_;
  std::once_flag shutdown_;
};

} // namespace attn::apps

#endif // ATTN_APPS_SERVINGENGINE_H
