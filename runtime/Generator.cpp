//===- Generator.cpp - continuous-batching text generation ----------------===//

#include "attn/runtime/Generator.h"

#include "PrefixCache.h"

#include <algorithm>
#include <limits>

namespace attn::runtime {

Status Generator::create(const Model &model, int maxSequences,
                         std::unique_ptr<Generator> &generator) {
  GeneratorOptions options;
  options.maxSequences = maxSequences;
  return create(model, options, generator);
}

Status Generator::create(const Model &model, const GeneratorOptions &options,
                         std::unique_ptr<Generator> &generator) {
  KvCacheConfig config, cross;
  if (Status s = model.selfCacheConfig(options.maxSequences, config,
                                       passRows(options));
      !s)
    return s;
  if (Status s = model.crossCacheConfig(options.maxSequences, cross); !s)
    return s;
  if (options.prefillChunk < 0)
    return Status(StatusCode::InvalidArgument,
                  "the prefill chunk must be >= 0 tokens");
  if (cross.numLayers > 0 && (options.prefillChunk > 0 || options.prefixCache))
    return Status(StatusCode::InvalidArgument,
                  "chunked prefill and the prefix cache are for decoder-only "
                  "models; this one cross-attends");
  std::unique_ptr<Generator> result(new Generator(model, options));
  if (Status s = KvCache::create(config, result->cache_); !s)
    return s;
  if (cross.numLayers > 0)
    if (Status s = KvCache::create(cross, result->crossCache_); !s)
      return s;
  // A sliding-window cache keeps no whole prefixes to share.
  if (options.prefixCache && !result->cache_.slidesWindows())
    result->prefixCache_ = std::make_unique<PrefixCache>(result->cache_);
  generator = std::move(result);
  return Status::ok();
}

Generator::Generator(const Model &model, const GeneratorOptions &options)
    : model_(model), capacity_(options.maxSequences), options_(options),
      context_(model) {}

Generator::~Generator() = default;

void Generator::finish(Request &r, FinishReason reason) {
  r.reason = reason;
  if (prefixCache_ && !r.prefilling() && r.sequence >= 0) {
    // Its prompt and the tokens it generated, for a conversation's next turn.
    std::vector<int32_t> tokens = r.request.prompt;
    tokens.insert(tokens.end(), r.generated.begin(), r.generated.end());
    prefixCache_->insert(r.sequence, tokens.data(), int(tokens.size()));
  }
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

Status Generator::accept(Request &r, const float *logits, int32_t token) {
  const GenerationRequest &q = r.request;
  if (q.logprobs >= 0) {
    r.logprobs.emplace_back();
    if (Status s = tokenLogprob(logits, model_.targetVocabulary(), token,
                                std::min(q.logprobs, model_.targetVocabulary()),
                                r.logprobs.back());
        !s)
      return s;
  }
  r.generated.push_back(token);
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
  return Status::ok();
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
  if (request.logprobs < -1 || request.logprobs > kMaxLogprobs)
    return Status(StatusCode::InvalidArgument,
                  "logprobs must be in [0, " + std::to_string(kMaxLogprobs) +
                      "] (or -1: none)");
  if (crossAttends() && request.promptLogprobs)
    return Status(StatusCode::InvalidArgument,
                  "prompt log-probabilities are for decoder-only models");
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
            model_.encode(source.data(), int(source.size()), memory_, context_);
        !s)
      return fail(s);
    if (Status s =
            model_.storeCrossKeyValues(memory_.data(), int(source.size()),
                                       crossCache_, r.crossSequence, context_);
        !s)
      return fail(s);
    requests_.push_back(std::move(r));
    id = int(requests_.size()) - 1;
    return Status::ok();
  }
  if (prefixCache_ && !r.request.promptLogprobs) {
    std::vector<int32_t> pages =
        prefixCache_->lookup(prompt.data(), int(prompt.size()));
    if (Status s = cache_.adoptPages(r.sequence, pages.data(),
                                     int(pages.size()));
        !s)
      return fail(s);
    r.promptFed = r.cachedPrompt = cache_.length(r.sequence);
  }
  requests_.push_back(std::move(r));
  id = int(requests_.size()) - 1;
  if (options_.prefillChunk > 0)
    return Status::ok(); // step() feeds the prompt
  Request &added = requests_.back();
  // The whole prompt now: the prefill kernels over an empty sequence, or
  // rows appended after what the prefix cache gave (with every row's logits
  // for prompt log-probabilities), a bounded chunk at a time.
  Status s;
  if (added.promptFed == 0 && !added.request.promptLogprobs)
    s = prefillWhole(added);
  else
    while (s && added.prefilling() && added.reason == FinishReason::Running)
      s = runRows(promptRows(id, kSubmitChunk));
  if (!s) {
    finish(requests_.back(), FinishReason::Cancelled);
    requests_.pop_back();
  }
  return s;
}

Status Generator::prefillWhole(Request &r) {
  const std::vector<int32_t> &prompt = r.request.prompt;
  makeRoom(pagesFor(int(prompt.size())));
  const int vocabulary = model_.targetVocabulary();
  logits_.resize(vocabulary);
  int32_t token = 0, greedy = -1;
  if (Status s = model_.prefill(prompt.data(), int(prompt.size()), cache_,
                                r.sequence, logits_.data(), context_, &greedy);
      !s)
    return s;
  if (Status s = choose(r, logits_.data(), greedy, token); !s)
    return s;
  r.promptFed = prompt.size();
  promptDone(r);
  return accept(r, logits_.data(), token);
}

void Generator::promptDone(Request &r) {
  if (prefixCache_)
    prefixCache_->insert(r.sequence, r.request.prompt.data(),
                         int(r.request.prompt.size()));
}

int Generator::passRows(const GeneratorOptions &options) {
  return std::max(options.prefillChunk, kSubmitChunk);
}

int Generator::pagesFor(int tokens) const {
  const int pageSize = cache_.config().pageSize;
  return (tokens + pageSize - 1) / pageSize;
}

void Generator::makeRoom(int pages) {
  if (prefixCache_)
    (void)prefixCache_->makeRoom(pages); // else extend() reports the shortage
}

std::vector<Generator::Row> Generator::promptRows(int index, int budget) const {
  const Request &r = requests_[index];
  const std::vector<int32_t> &prompt = r.request.prompt;
  std::vector<Row> rows;
  for (size_t p = r.promptFed; p < prompt.size() && int(rows.size()) < budget;
       p++) {
    const bool last = p + 1 == prompt.size();
    Row row{index, prompt[p], last, last, -1};
    if (r.request.promptLogprobs && !last) {
      row.head = true;
      row.promptNext = prompt[p + 1];
    }
    rows.push_back(row);
  }
  return rows;
}

std::vector<Generator::Row> Generator::nextRows(int budget) const {
  // One prompt's chunk at a time, in arrival order: Model::append attends a
  // leading chunk with the prefill kernels.
  std::vector<Row> rows;
  for (size_t i = 0; i < requests_.size() && budget > 0; i++) {
    const Request &r = requests_[i];
    if (r.reason == FinishReason::Running && r.prefilling()) {
      rows = promptRows(int(i), budget);
      break;
    }
  }
  for (size_t i = 0; i < requests_.size(); i++) {
    const Request &r = requests_[i];
    if (r.reason == FinishReason::Running && !r.prefilling())
      rows.push_back({int(i), r.generated.back(), true, true, -1});
  }
  return rows;
}

Status Generator::runRows(const std::vector<Row> &rows) {
  if (rows.empty())
    return Status::ok();
  std::vector<SequenceId> sequences;
  std::vector<int32_t> tokens, heads;
  std::vector<int> grows(requests_.size(), 0);
  for (size_t i = 0; i < rows.size(); i++) {
    sequences.push_back(requests_[rows[i].request].sequence);
    tokens.push_back(rows[i].token);
    if (rows[i].head)
      heads.push_back(int32_t(i));
    grows[rows[i].request]++;
  }
  int pages = 0; // new pages the rows take
  for (size_t i = 0; i < requests_.size(); i++)
    if (grows[i] > 0) {
      int length = cache_.length(requests_[i].sequence);
      pages += pagesFor(length + grows[i]) - pagesFor(length);
    }
  makeRoom(pages);
  const int vocabulary = model_.targetVocabulary();
  logits_.resize(heads.size() * size_t(vocabulary));
  greedy_.resize(heads.size());
  if (Status s =
          model_.append(sequences.data(), tokens.data(), int(rows.size()),
                        cache_, heads.data(), int(heads.size()), logits_.data(),
                        context_, greedy_.data());
      !s)
    return s;
  for (const Row &row : rows) {
    Request &r = requests_[row.request];
    if (r.prefilling() && ++r.promptFed == r.request.prompt.size())
      promptDone(r);
  }
  for (size_t h = 0; h < heads.size(); h++) {
    const Row &row = rows[heads[h]];
    Request &r = requests_[row.request];
    const float *logits = &logits_[h * vocabulary];
    if (row.promptNext >= 0) {
      r.promptLogprobs.emplace_back();
      if (Status s = tokenLogprob(logits, vocabulary, row.promptNext,
                                  std::max(r.request.logprobs, 0),
                                  r.promptLogprobs.back());
          !s)
        return s;
    }
    if (!row.sample || r.reason != FinishReason::Running)
      continue;
    int32_t token;
    if (Status s = choose(r, logits, greedy_[h], token); !s)
      return s;
    if (Status s = accept(r, logits, token); !s)
      return s;
  }
  return Status::ok();
}

Status Generator::step() {
  if (inCallback_)
    return reentered("step");
  if (crossAttends())
    return stepWithCrossAttention();
  // The chunk bounds how long running streams wait; with none decoding, a
  // prompt goes whole (the prefill kernels' best speed) unless a sliding
  // window's pool is sized for passRows.
  const bool decoding =
      std::any_of(requests_.begin(), requests_.end(), [](const Request &r) {
        return r.reason == FinishReason::Running && !r.prefilling();
      });
  return runRows(nextRows(decoding                 ? options_.prefillChunk
                          : cache_.slidesWindows() ? passRows(options_)
                                 : std::numeric_limits<int>::max()));
}

Status Generator::stepWithCrossAttention() {
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
    tokens.push_back(r.prefilling() ? r.request.prompt[r.promptFed]
                                    : r.generated.back());
    traced |= r.request.crossAttention != nullptr;
  }
  if (batch.empty())
    return Status::ok();
  const int vocabulary = model_.targetVocabulary();
  logits_.resize(batch.size() * size_t(vocabulary));
  greedy_.resize(batch.size());
  CrossAttentionTrace trace;
  if (Status s = model_.decodeStep(sequences.data(), crossSequences.data(),
                                   tokens.data(), int(batch.size()), cache_,
                                   &crossCache_, logits_.data(), context_,
                                   traced ? &trace : nullptr, greedy_.data());
      !s)
    return s;
  for (size_t b = 0; b < batch.size(); b++) {
    Request &r = requests_[batch[b]];
    // Inside the prompt: its tokens are given, nothing to sample yet.
    if (r.prefilling() && ++r.promptFed < r.request.prompt.size())
      continue;
    const float *logits = &logits_[b * vocabulary];
    int32_t token;
    if (Status s = choose(r, logits, greedy_[b], token); !s)
      return s;
    if (r.request.crossAttention)
      r.request.crossAttention->push_back(std::move(trace.weights[b]));
    if (Status s = accept(r, logits, token); !s)
      return s;
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

const std::vector<TokenLogprob> &Generator::logprobs(int id) const {
  return requests_.at(id).logprobs;
}

const std::vector<TokenLogprob> &Generator::promptLogprobs(int id) const {
  return requests_.at(id).promptLogprobs;
}

int Generator::cachedPromptTokens(int id) const {
  return requests_.at(id).cachedPrompt;
}

bool Generator::prefilling(int id) const {
  const Request &r = requests_.at(id);
  return r.reason == FinishReason::Running && r.prefilling();
}

PrefixCacheStats Generator::prefixCacheStats() const {
  PrefixCacheStats stats;
  if (prefixCache_) {
    stats.hitTokens = prefixCache_->hitTokens();
    stats.missTokens = prefixCache_->missTokens();
    stats.evictedPages = prefixCache_->evictedPages();
    stats.pages = prefixCache_->pages();
  }
  return stats;
}

} // namespace attn::runtime
