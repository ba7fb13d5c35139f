//===- Generator.cpp - continuous-batching text generation ----------------===//

#include "attn/runtime/Generator.h"

#include <algorithm>

namespace attn::runtime {

Status Generator::create(const Model &model, int maxSequences,
                         std::unique_ptr<Generator> &generator) {
  KvCacheConfig cross;
  if (Status s = model.crossCacheConfig(1, cross); !s)
    return s;
  if (cross.numLayers > 0)
    return Status(StatusCode::InvalidArgument,
                  "Generator drives decoder-only models; this one "
                  "cross-attends (encode, then Model::decodeStep)");
  KvCacheConfig config;
  if (Status s = model.selfCacheConfig(maxSequences, config); !s)
    return s;
  std::unique_ptr<Generator> result(new Generator(model));
  if (Status s = KvCache::create(config, result->cache_); !s)
    return s;
  generator = std::move(result);
  return Status::ok();
}

void Generator::accept(Request &r, int32_t token) {
  r.generated.push_back(token);
  const GenerationRequest &q = r.request;
  bool keep = !q.onToken || q.onToken(token);
  if (std::find(q.stopTokens.begin(), q.stopTokens.end(), token) !=
      q.stopTokens.end())
    r.reason = FinishReason::StopToken;
  else if (!keep)
    r.reason = FinishReason::Cancelled;
  else if (int(r.generated.size()) >= q.maxNewTokens)
    r.reason = FinishReason::MaxTokens;
  // The next step would store this token at position length(): past the
  // cache's end, it cannot be decoded.
  else if (cache_.length(r.sequence) >= cache_.config().maxSequenceLength)
    r.reason = FinishReason::CacheFull;
  if (r.reason != FinishReason::Running) {
    (void)cache_.removeSequence(r.sequence);
    r.sequence = -1;
  }
}

Status Generator::submit(GenerationRequest request, int &id) {
  if (request.prompt.empty() || request.maxNewTokens < 1)
    return Status(StatusCode::InvalidArgument,
                  "a request needs a prompt and maxNewTokens >= 1");
  if (int(request.prompt.size()) >= cache_.config().maxSequenceLength)
    return Status(StatusCode::CapacityExceeded,
                  "a prompt of " + std::to_string(request.prompt.size()) +
                      " tokens leaves no room in sequences of " +
                      std::to_string(cache_.config().maxSequenceLength));
  Request r;
  r.request = std::move(request);
  if (Status s = Sampler::create(r.request.sampling, r.sampler); !s)
    return s;
  if (Status s = cache_.addSequence(r.sequence); !s)
    return s;
  const int vocabulary = model_.targetVocabulary();
  logits_.resize(vocabulary);
  Status s =
      model_.prefill(r.request.prompt.data(), int(r.request.prompt.size()),
                     cache_, r.sequence, logits_.data(), ws_);
  int32_t token = 0;
  if (s)
    s = r.sampler.sample(logits_.data(), vocabulary, token);
  if (!s) {
    (void)cache_.removeSequence(r.sequence);
    return s;
  }
  requests_.push_back(std::move(r));
  id = int(requests_.size()) - 1;
  accept(requests_.back(), token);
  return Status::ok();
}

Status Generator::step() {
  std::vector<int> batch;
  std::vector<SequenceId> sequences;
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < requests_.size(); i++)
    if (requests_[i].reason == FinishReason::Running) {
      batch.push_back(int(i));
      sequences.push_back(requests_[i].sequence);
      tokens.push_back(requests_[i].generated.back());
    }
  if (batch.empty())
    return Status::ok();
  const int vocabulary = model_.targetVocabulary();
  logits_.resize(batch.size() * size_t(vocabulary));
  if (Status s = model_.decodeStep(sequences.data(), nullptr, tokens.data(),
                                   int(batch.size()), cache_, nullptr,
                                   logits_.data(), ws_);
      !s)
    return s;
  for (size_t b = 0; b < batch.size(); b++) {
    Request &r = requests_[batch[b]];
    int32_t token;
    if (Status s =
            r.sampler.sample(&logits_[b * vocabulary], vocabulary, token);
        !s)
      return s;
    accept(r, token);
  }
  return Status::ok();
}

Status Generator::run() {
  while (running() > 0)
    if (Status s = step(); !s)
      return s;
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
