//===- ServingEngine.cpp - one model, many requests, batched --------------===//

#include "ServingEngine.h"

#include "StopText.h"

namespace attn::apps {

using namespace attn::runtime;

bool CompletionJob::next(std::string &text) {
  std::unique_lock<std::mutex> lock(mutex);
  changed.wait(lock, [&] { return !pending.empty() || finished; });
  text.clear();
  text.swap(pending);
  return !text.empty() || !finished;
}

void CompletionJob::publish(const std::string &text, bool done) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    pending += text;
    finished = finished || done;
  }
  changed.notify_all();
}

/// A request the generator runs: its job, and the state that turns its
/// tokens into text.
struct ServingEngine::Running {
  std::shared_ptr<CompletionJob> job;
  int id = -1;
  TextStream stream;
  StopText stopText;
  bool stoppedByText = false;
  Running(std::shared_ptr<CompletionJob> job, const Tokenizer &tokenizer)
      : job(job), stream(tokenizer), stopText(job->stops) {}
};

Status ServingEngine::create(const Model &model, const Tokenizer &tokenizer,
                             int parallel,
                             std::unique_ptr<ServingEngine> &engine) {
  std::unique_ptr<ServingEngine> result(new ServingEngine(model, tokenizer));
  if (Status s = Generator::create(model, parallel, result->generator_); !s)
    return s;
  result->worker_ = std::thread([raw = result.get()] { raw->loop(); });
  engine = std::move(result);
  return Status::ok();
}

ServingEngine::~ServingEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

void ServingEngine::submit(std::shared_ptr<CompletionJob> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(job));
  }
  wake_.notify_all();
}

int ServingEngine::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int(queue_.size());
}

void ServingEngine::admit(const std::shared_ptr<CompletionJob> &job) {
  auto running = std::make_shared<Running>(job, tokenizer_);
  GenerationRequest request;
  request.prompt = job->prompt;
  request.maxNewTokens = job->maxTokens;
  request.stopTokens = tokenizer_.eosIds();
  request.sampling = job->sampling;
  request.onToken = [state = running.get()](int32_t token) {
    if (state->job->cancelled)
      return false;
    std::string piece;
    if (!state->stream.push(token, piece))
      return false;
    bool stopped = false;
    std::string shown = state->stopText.add(piece, stopped);
    if (!shown.empty())
      state->job->publish(shown, false);
    state->stoppedByText = stopped;
    return !stopped;
  };
  // submit() prefills the prompt and samples the first token, which may
  // already finish the request; retireFinished() sees to that.
  if (Status s = generator_->submit(std::move(request), running->id); !s) {
    job->error = s.message();
    job->serverFault =
        s.code() == StatusCode::KernelFailed || s.code() == StatusCode::IoError;
    job->publish("", true);
    return;
  }
  running_.push_back(std::move(running));
}

void ServingEngine::retireFinished() {
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
    r.job->completionTokens = int(generator_->tokens(r.id).size());
    r.job->publish(tail, true);
    running_.erase(running_.begin() + i);
  }
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
        }
        running_.clear();
        // Its requests are in an unknown state: start from a new one.
        int capacity = generator_->capacity();
        generator_.reset();
        if (!Generator::create(model_, capacity, generator_)) {
          std::lock_guard<std::mutex> lock(mutex_);
          stopping_ = true; // nothing can run any more
          break;
        }
      }
    }
    retireFinished();
    running_count_ = int(running_.size());
    if (running_.empty() && generator_->running() == 0)
      (void)generator_->clear(); // ids start again; bookkeeping stays small
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &r : running_) {
    r->job->error = "the server is shutting down";
    r->job->serverFault = true;
    r->job->publish("", true);
  }
  for (const auto &job : queue_) {
    job->error = "the server is shutting down";
    job->serverFault = true;
    job->publish("", true);
  }
}

} // namespace attn::apps
