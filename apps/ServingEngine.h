//===- ServingEngine.h - one model, many requests, batched --------*- C++ -*-===//
//
// attn-serve's core, free of HTTP: requests from any thread join one
// Generator that a single worker thread drives (a Generator belongs to one
// thread). Between decode steps the worker admits queued requests (their
// prompts prefilled, up to `parallel` at once) and retires finished ones,
// so requests are batched continuously: each step decodes one token for
// every running request. Text reaches each request's CompletionJob as its
// tokens complete characters, cut at its stop strings.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_APPS_SERVINGENGINE_H
#define ATTN_APPS_SERVINGENGINE_H

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
  int maxTokens = 16;
  runtime::SamplingOptions sampling;
  std::vector<std::string> stops;

  /// The asker's side: blocks until there is new text or the job has
  /// finished, and moves the new text into `text`. False once the job has
  /// finished and all its text was taken.
  bool next(std::string &text);
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
  void publish(const std::string &text, bool done);
  std::mutex mutex;
  std::condition_variable changed;
  std::string pending;
  bool finished = false;
  std::atomic<bool> cancelled{false};
};

class ServingEngine {
public:
  /// Serves `model` with room for `parallel` requests at once; the model
  /// and tokenizer must outlive the engine.
  static runtime::Status create(const runtime::Model &model,
                                const runtime::Tokenizer &tokenizer,
                                int parallel,
                                std::unique_ptr<ServingEngine> &engine);
  /// Finishes running requests with an error and stops the worker.
  ~ServingEngine();

  /// Queues `job`; its text and end arrive through job->next().
  void submit(std::shared_ptr<CompletionJob> job);
  /// Requests decoding now, and waiting for room (from any thread).
  int running() const { return running_count_; }
  int queued() const;
  /// Requests whose clients went away before they finished, so far.
  long cancelled() const { return cancelled_count_; }

private:
  struct Running;
  ServingEngine(const runtime::Model &model,
                const runtime::Tokenizer &tokenizer)
      : model_(model), tokenizer_(tokenizer) {}
  void loop();
  void admit(const std::shared_ptr<CompletionJob> &job);
  void retireFinished();

  const runtime::Model &model_;
  const runtime::Tokenizer &tokenizer_;
  std::unique_ptr<runtime::Generator> generator_;
  std::vector<std::shared_ptr<Running>> running_; ///< worker thread only
  std::atomic<int> running_count_{0};               ///< running_.size()
  std::atomic<long> cancelled_count_{0};

  mutable std::mutex mutex_; ///< guards queue_ and stopping_
  std::condition_variable wake_;
  std::deque<std::shared_ptr<CompletionJob>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace attn::apps

#endif // ATTN_APPS_SERVINGENGINE_H
