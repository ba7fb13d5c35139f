//===- Generator.cpp - continuous-batching text generation ----------------===//

#include "attn/runtime/Generator.h"

#include <algorithm>

namespace attn::runtime {

Status Generator::create(const Model &model, int maxSequences,
                         std::unique_ptr<Generator> &generator) {
  KvCacheConfig config, cross;
  if (Status s = model.selfCacheConfig(maxSequences, config); !s)
    return s;
  if (Status s = model.crossCacheConfig(maxSequences, cross); !s)
    return s;
  std::unique_ptr<Generator> result(new Generator(model, maxSequences));
  if (Status s = KvCache::create(config, result->cache_); !s)
    return s;
  if (cross.numLayers > 0)
    if (Status s = KvCache::create(cross, result->crossCache_); !s)
      return s;
  generator = std::move(result);
  return Status::ok();
}

void Generator::finish(Request &r, FinishReason reason) {
  r.reason = reason;
  (void)cache_.removeSequence(r.sequence);
  r.sequence = -1;
  if (r.crossSequence >= 0)
    (void)crossCache_.removeSequence(r.crossSequence);
  r.crossSequence = -1;
}

namespace {
/// Refuses a call made from inside a token callback.
Status reentered(const char *what) {
  return Status(StatusCode::InvalidArgument,
                std::string("Generator::") + what +
                    " from inside a token callback (it would change the "
                    "requests being stepped); call it after the step returns");
}
} // namespace

void Generator::accept(Request &r, int32_t token) {
  r.generated.push_back(token);
  const GenerationRequest &q = r.request;
  bool keep = true;
  if (q.onToken) {
    struct Flag { // cleared however the callback leaves
      bool &flag;
      ~Flag() { flag = false; }
    } inside{inCallback_ = true};
    keep = q.onToken(token);
  }
  if (std::find(q.stopTokens.begin(), q.stopTokens.end(), token) !=
      q.stopTokens.end())
    finish(r, FinishReason::StopToken);
  else if (!keep)
    finish(r, FinishReason::Cancelled);
  else if (int(r.generated.size()) >= q.maxNewTokens)
    finish(r, FinishReason::MaxTokens);
  // The next step would store this token at position length(): past the
  // cache's end, it cannot be decoded.
  else if (cache_.length(r.sequence) >= cache_.config().maxSequenceLength)
    finish(r, FinishReason::CacheFull);
}

Status Generator::submit(GenerationRequest request, int &id) {
  if (inCallback_)
    return reentered("submit");
  if (request.prompt.empty() || request.maxNewTokens < 1)
    return Status(StatusCode::InvalidArgument,
                  "a request needs a prompt and maxNewTokens >= 1");
  if (int(request.prompt.size()) >= cache_.config().maxSequenceLength)
    return Status(StatusCode::CapacityExceeded,
                  "a prompt of " + std::to_string(request.prompt.size()) +
                      " tokens leaves no room in sequences of " +
                      std::to_string(cache_.config().maxSequenceLength));
  if (crossAttends() && request.source.empty())
    return Status(StatusCode::InvalidArgument,
                  "this model has an encoder: a request needs a source");
  if (!crossAttends() && (!request.source.empty() || request.crossAttention))
    return Status(StatusCode::InvalidArgument,
                  "this model is decoder-only: a request takes no source and "
                  "has no cross-attention to record");
  if (int(request.source.size()) > crossCache_.config().maxSequenceLength)
    return Status(StatusCode::CapacityExceeded,
                  "a source of " + std::to_string(request.source.size()) +
                      " tokens is longer than the encoder's " +
                      std::to_string(crossCache_.config().maxSequenceLength));
  Request r;
  r.request = std::move(request);
  if (Status s = Sampler::create(r.request.sampling, r.sampler); !s)
    return s;
  if (Status s = cache_.addSequence(r.sequence); !s)
    return s;
  // Undoes everything on failure: the request never existed.
  auto fail = [&](Status s) {
    finish(r, FinishReason::Cancelled);
    return s;
  };
  const std::vector<int32_t> &prompt = r.request.prompt;
  const std::vector<int32_t> &source = r.request.source;
  if (crossAttends()) {
    if (Status s = crossCache_.addSequence(r.crossSequence); !s)
      return fail(s);
    if (Status s =
            model_.encode(source.data(), int(source.size()), memory_, ws_);
        !s)
      return fail(s);
    if (Status s =
            model_.storeCrossKeyValues(memory_.data(), int(source.size()),
                                       crossCache_, r.crossSequence, ws_);
        !s)
      return fail(s);
    requests_.push_back(std::move(r));
    id = int(requests_.size()) - 1;
    return Status::ok();
  }
  const int vocabulary = model_.targetVocabulary();
  logits_.resize(vocabulary);
  int32_t token = 0, greedy = -1;
  if (Status s = model_.prefill(prompt.data(), int(prompt.size()), cache_,
                                r.sequence, logits_.data(), ws_, &greedy);
      !s)
    return fail(s);
  if (Status s = choose(r, logits_.data(), greedy, token); !s)
    return fail(s);
  r.promptFed = prompt.size();
  requests_.push_back(std::move(r));
  id = int(requests_.size()) - 1;
  accept(requests_.back(), token);
  return Status::ok();
}

Status Generator::step() {
  if (inCallback_)
    return reentered("step");
  std::vector<int> batch;
  std::vector<SequenceId> sequences, crossSequences;
  std::vector<int32_t> tokens;
  bool traced = false;
  for (size_t i = 0; i < requests_.size(); i++) {
    const Request &r = requests_[i];
    if (r.reason != FinishReason::Running)
      continue;
    batch.push_back(int(i));
    sequences.push_back(r.sequence);
    crossSequences.push_back(r.crossSequence);
    tokens.push_back(r.promptFed < r.request.prompt.size()
                         ? r.request.prompt[r.promptFed]
                         : r.generated.back());
    traced |= r.request.crossAttention != nullptr;
  }
  if (batch.empty())
    return Status::ok();
  const int vocabulary = model_.targetVocabulary();
  logits_.resize(batch.size() * size_t(vocabulary));
  greedy_.resize(batch.size());
  CrossAttentionTrace trace;
  if (Status s = model_.decodeStep(
          sequences.data(), crossAttends() ? crossSequences.data() : nullptr,
          tokens.data(), int(batch.size()), cache_,
          crossAttends() ? &crossCache_ : nullptr, logits_.data(), ws_,
          traced ? &trace : nullptr, greedy_.data());
      !s)
    return s;
  for (size_t b = 0; b < batch.size(); b++) {
    Request &r = requests_[batch[b]];
    // Inside the prompt: its tokens are given, nothing to sample yet.
    if (r.promptFed < r.request.prompt.size() &&
        ++r.promptFed < r.request.prompt.size())
      continue;
    int32_t token;
    if (Status s = choose(r, &logits_[b * vocabulary], greedy_[b], token); !s)
      return s;
    if (r.request.crossAttention)
      r.request.crossAttention->push_back(std::move(trace.weights[b]));
    accept(r, token);
  }
  return Status::ok();
}

Status Generator::choose(Request &r, const float *logits, int32_t greedy,
                         int32_t &token) {
  // Greedy requests take the head kernel's argmax; -1 (a NaN logit) goes to
  // the sampler, which names the NaN in its error.
  if (r.request.sampling.temperature == 0.0f && greedy >= 0) {
    token = greedy;
    return Status::ok();
  }
  return r.sampler.sample(logits, model_.targetVocabulary(), token);
}

Status Generator::run() {
  while (running() > 0)
    if (Status s = step(); !s)
      return s;
  return Status::ok();
}

Status Generator::clear() {
  if (inCallback_)
    return reentered("clear");
  if (running() > 0)
    return Status(StatusCode::InvalidArgument,
                  std::to_string(running()) +
                      " requests still run; clear() forgets finished ones");
  requests_.clear();
  return Status::ok();
}

int Generator::running() const {
  return int(
      std::count_if(requests_.begin(), requests_.end(), [](const Request &r) {
        return r.reason == FinishReason::Running;
      }));
}

FinishReason Generator::finishReason(int id) const {
  return requests_.at(id).reason;
}

const std::vector<int32_t> &Generator::tokens(int id) const {
  return requests_.at(id).generated;
}

} // namespace attn::runtime
