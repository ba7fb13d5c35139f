//===- ServingEngine.cpp - one model, many requests, batched --------------===//

#include "ServingEngine.h"

#include "StopText.h"

#include <chrono>
#include <limits>
#include <utility>

namespace attn::apps {

using namespace attn::runtime;

bool CompletionJob::next(std::string &text,
                         std::vector<runtime::TokenLogprob> *logprobs) {
  std::unique_lock<std::mutex> lock(mutex);
  changed.wait(lock, [&] {
    return !pending.empty() || !pendingLogprobs.empty() || finished;
  });
  text.clear();
  text.swap(pending);
  bool any = !text.empty() || !pendingLogprobs.empty();
  if (logprobs) {
    logprobs->clear();
    logprobs->swap(pendingLogprobs);
  }
  pendingLogprobs.clear();
  return any || !finished;
}

void CompletionJob::publish(const std::string &text, bool done,
                            std::vector<runtime::TokenLogprob> logprobs) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    pending += text;
    pendingLogprobs.insert(pendingLogprobs.end(),
                           std::make_move_iterator(logprobs.begin()),
                           std::make_move_iterator(logprobs.end()));
    finished = finished || done;
  }
  changed.notify_all();
}

using Clock = std::chrono::steady_clock;

/// A request the generator runs: its job, and the state that turns its
/// tokens into text.
struct ServingEngine::Running {
  std::shared_ptr<CompletionJob> job;
  int id = -1;
  TextStream stream;
  StopText stopText;
  bool stoppedByText = false;
  bool promptEchoed = false; ///< the prompt's log-probabilities went out
  Clock::time_point arrived, lastToken;
  int tokens = 0;
  Running(std::shared_ptr<CompletionJob> job, const Tokenizer &tokenizer)
      : job(job), stream(tokenizer), stopText(job->stops),
        arrived(Clock::now()) {}
};

Status ServingEngine::create(const Model &model, const Tokenizer &tokenizer,
                             const ServingOptions &options,
                             std::unique_ptr<ServingEngine> &engine) {
  std::unique_ptr<ServingEngine> result(
      new ServingEngine(model, tokenizer, options));
  if (Status s = Generator::create(model, result->generatorOptions(),
                                   result->generator_);
      !s)
    return s;
  result->worker_ = std::thread([raw = result.get()] { raw->loop(); });
  engine = std::move(result);
  return Status::ok();
}

GeneratorOptions ServingEngine::generatorOptions() const {
  GeneratorOptions g;
  g.maxSequences = options_.parallel;
  g.prefillChunk = options_.prefillChunk;
  g.prefixCache = options_.prefixCache;
  return g;
}

ServingEngine::~ServingEngine() { shutdown(); }

void ServingEngine::shutdown() {
  std::call_once(shutdown_, [&] {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    worker_.join();
  });
}

void ServingEngine::submit(std::shared_ptr<CompletionJob> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(job));
      job = nullptr;
    }
  }
  if (job) { // after shutdown()
    job->error = "the server is shutting down";
    job->serverFault = true;
    job->publish("", true);
    return;
  }
  wake_.notify_all();
}

int ServingEngine::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int(queue_.size());
}

bool ServingEngine::onToken(Running &r, int32_t token) {
  CompletionJob &job = *r.job;
  if (job.cancelled)
    return false;
  Clock::time_point now = Clock::now();
  if (ServingMetrics *m = options_.metrics) {
    std::chrono::duration<double> since = now - (r.tokens ? r.lastToken
                                                          : r.arrived);
    (r.tokens ? m->interTokenLatency : m->timeToFirstToken)
        .Observe(since.count());
    if (job.maxTokens > 0)
      m->generatedTokens.Increment();
  }
  r.lastToken = now;
  r.tokens++;
  std::vector<TokenLogprob> logprobs;
  if (job.echo && job.logprobs >= 0 && !r.promptEchoed) {
    TokenLogprob first; // nothing before it to predict it
    first.token = job.prompt[0];
    first.logprob = std::numeric_limits<float>::quiet_NaN();
    logprobs.push_back(first);
    const auto &prompt = generator_->promptLogprobs(r.id);
    logprobs.insert(logprobs.end(), prompt.begin(), prompt.end());
    r.promptEchoed = true;
  }
  if (job.maxTokens == 0) { // echo alone: the token is not part of it
    job.publish("", false, std::move(logprobs));
    return false;
  }
  if (job.logprobs >= 0)
    logprobs.push_back(generator_->logprobs(r.id).back());
  std::string piece;
  if (!r.stream.push(token, piece))
    return false;
  bool stopped = false;
  std::string shown = r.stopText.add(piece, stopped);
  if (!shown.empty() || !logprobs.empty())
    job.publish(shown, false, std::move(logprobs));
  r.stoppedByText = stopped;
  return !stopped;
}

void ServingEngine::admit(const std::shared_ptr<CompletionJob> &job) {
  auto running = std::make_shared<Running>(job, tokenizer_);
  GenerationRequest request;
  request.prompt = job->prompt;
  request.maxNewTokens = std::max(job->maxTokens, 1);
  request.stopTokens = tokenizer_.eosIds();
  request.sampling = job->sampling;
  request.logprobs = job->logprobs;
  request.promptLogprobs = job->echo && job->logprobs >= 0;
  request.onToken = [this, state = running.get()](int32_t token) {
    return onToken(*state, token);
  };
  if (options_.metrics)
    options_.metrics->promptTokens.Increment(double(job->prompt.size()));
  if (job->echo) { // the prompt's text first
    std::string text;
    if (tokenizer_.decode(job->prompt, text, /*skipSpecialTokens=*/true))
      job->publish(text, false);
  }
  // submit() may prefill the prompt and sample the first token, which may
  // already finish the request; retireFinished() sees to that.
  if (Status s = generator_->submit(std::move(request), running->id); !s) {
    job->error = s.message();
    job->serverFault =
        s.code() == StatusCode::KernelFailed || s.code() == StatusCode::IoError;
    job->publish("", true);
    if (options_.metrics)
      options_.metrics->finished("error");
    return;
  }
  running_.push_back(std::move(running));
}

void ServingEngine::record() {
  ServingMetrics *m = options_.metrics;
  if (!m)
    return;
  m->running.Set(double(running_.size()));
  m->queued.Set(double(queued()));
  const KvCache &cache = generator_->cache();
  m->kvPagesUsed.Set(cache.usedPages());
  m->kvPagesFree.Set(cache.freePages());
  PrefixCacheStats stats = generator_->prefixCacheStats();
  // Counters only grow: add what is new since the last step.
  m->prefixHitTokens.Increment(
      std::max(0.0, double(stats.hitTokens) - m->prefixHitTokens.Value()));
  m->prefixMissTokens.Increment(
      std::max(0.0, double(stats.missTokens) - m->prefixMissTokens.Value()));
}

void ServingEngine::retireFinished() {
  // The finished requests' last text, published after the gauges count them
  // out: a client holding its whole answer sees no request of its running.
  std::vector<std::pair<std::shared_ptr<CompletionJob>, std::string>> done;
  for (size_t i = 0; i < running_.size();) {
    Running &r = *running_[i];
    FinishReason reason = generator_->finishReason(r.id);
    if (reason == FinishReason::Running) {
      i++;
      continue;
    }
    std::string tail;
    if (r.job->cancelled)
      cancelled_count_++;
    if (reason != FinishReason::Cancelled) {
      bool stopped = false;
      tail = r.stopText.add(r.stream.finish(), stopped);
      if (!stopped)
        tail += r.stopText.flush();
      r.stoppedByText = r.stoppedByText || stopped;
    }
    r.job->finishReason =
        reason == FinishReason::StopToken || r.stoppedByText ? "stop"
                                                             : "length";
    if (options_.metrics)
      options_.metrics->finished(r.job->cancelled ? "cancelled"
                                                  : r.job->finishReason);
    r.job->completionTokens =
        r.job->maxTokens == 0 ? 0 : int(generator_->tokens(r.id).size());
    done.emplace_back(r.job, std::move(tail));
    running_.erase(running_.begin() + i);
  }
  if (done.empty())
    return;
  running_count_ = int(running_.size());
  record();
  for (auto &[job, tail] : done)
    job->publish(tail, true);
}

void ServingEngine::loop() {
  for (;;) {
    std::vector<std::shared_ptr<CompletionJob>> arriving;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] {
        return stopping_ || !running_.empty() || !queue_.empty();
      });
      if (stopping_)
        break;
      while (!queue_.empty() &&
             int(running_.size() + arriving.size()) < generator_->capacity()) {
        arriving.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      // Counted before the lock goes: a request is always queued or
      // running until it has finished.
      running_count_ = int(running_.size() + arriving.size());
    }
    for (const auto &job : arriving)
      admit(job);
    running_count_ = int(running_.size());
    retireFinished(); // some finish at their first token
    if (generator_->running() > 0) {
      if (Status s = generator_->step(); !s) {
        // A kernel failed: every running request fails with it.
        for (const auto &r : running_) {
          r->job->error = s.message();
          r->job->serverFault = true;
          r->job->publish("", true);
          if (options_.metrics)
            options_.metrics->finished("error");
        }
        running_.clear();
        // Its requests are in an unknown state: start from a new one.
        generator_.reset();
        if (!Generator::create(model_, generatorOptions(), generator_)) {
          std::lock_guard<std::mutex> lock(mutex_);
          stopping_ = true; // nothing can run any more
          break;
        }
      }
    }
    retireFinished();
    running_count_ = int(running_.size());
    record();
    if (running_.empty() && generator_->running() == 0)
      (void)generator_->clear(); // ids start again; bookkeeping stays small
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<CompletionJob>> cut(queue_.begin(), queue_.end());
  for (const auto &r : running_)
    cut.push_back(r->job);
  for (const auto &job : cut) {
    job->error = "the server is shutting down";
    job->serverFault = true;
    job->publish("", true);
    if (options_.metrics)
      options_.metrics->finished("error");
  }
  queue_.clear();
  running_.clear();
  running_count_ = 0;
  if (options_.metrics) { // record() would take mutex_ again
    options_.metrics->running.Set(0);
    options_.metrics->queued.Set(0);
  }
}

} // namespace attn::apps
