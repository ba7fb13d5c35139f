//===- Translator.cpp - Chinese numerals to English words -----------------===//

#include "Translator.h"
#include "Numerals.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace translate {

using namespace attn::runtime;

namespace {
Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

int32_t argmax(const float *logits, int size) {
  return int32_t(std::max_element(logits, logits + size) - logits);
}
} // namespace

Status Translator::load(const std::string &dir, const std::string &planJson,
                        const KernelEntry *table, size_t tableSize,
                        std::unique_ptr<Translator> &translator) {
  auto result = std::make_unique<Translator>();
  std::ifstream file(dir + "/vocab.json");
  if (!file)
    return Status(StatusCode::IoError, "cannot read " + dir + "/vocab.json");
  nlohmann::json vocab =
      nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (vocab.is_discarded() || !vocab.is_object() ||
      !vocab["source"].is_array() || !vocab["target"].is_array() ||
      !vocab["bos"].is_number_integer() || !vocab["eos"].is_number_integer())
    return invalid(dir + "/vocab.json: expected {source: [...], target: "
                         "[...], bos, eos}");
  for (const auto &s : vocab["source"])
    result->source_.push_back(s.is_string() ? s.get<std::string>() : "");
  for (const auto &s : vocab["target"])
    result->target_.push_back(s.is_string() ? s.get<std::string>() : "");
  result->bos_ = vocab["bos"].get<int32_t>();
  result->eos_ = vocab["eos"].get<int32_t>();
  if (Status s = Model::load(planJson, table, tableSize,
                             dir + "/translator.safetensors",
                             WeightNaming::Bart, result->model_);
      !s)
    return s;
  if (int(result->source_.size()) != result->model_->sourceVocabulary() ||
      int(result->target_.size()) != result->model_->targetVocabulary())
    return invalid("vocab.json has " + std::to_string(result->source_.size()) +
                   " source and " + std::to_string(result->target_.size()) +
                   " target entries; the model was compiled for " +
                   std::to_string(result->model_->sourceVocabulary()) +
                   " and " +
                   std::to_string(result->model_->targetVocabulary()));
  KvCacheConfig config;
  if (Status s = result->model_->selfCacheConfig(1, config); !s)
    return s;
  result->maxTarget_ = config.maxSequenceLength;
  translator = std::move(result);
  return Status::ok();
}

Status Translator::sourceTokens(const std::string &numeral,
                                std::vector<int32_t> &tokens) const {
  std::vector<std::string> chars;
  if (!splitCharacters(numeral, chars))
    return invalid("not valid UTF-8");
  tokens.clear();
  for (const std::string &c : chars) {
    auto it = std::find(source_.begin(), source_.end(), c);
    if (it == source_.end())
      return invalid("'" + c + "' is not in the source vocabulary");
    tokens.push_back(int32_t(it - source_.begin()));
  }
  return Status::ok();
}

std::string Translator::words(const std::vector<int32_t> &tokens) const {
  std::string text;
  for (int32_t token : tokens)
    text += (text.empty() ? "" : " ") + target_[token];
  return text;
}

Status
Translator::translate(const std::vector<std::vector<int32_t>> &sources,
                      std::vector<std::vector<int32_t>> &outputs,
                      const WordCallback &onWord,
                      std::vector<std::vector<std::vector<float>>> *attention) {
  const int batch = int(sources.size());
  outputs.assign(batch, {});
  if (attention)
    attention->assign(batch, {});
  if (batch == 0)
    return Status::ok();
  KvCacheConfig selfConfig, crossConfig;
  KvCache selfCache, crossCache;
  if (Status s = model_->selfCacheConfig(batch, selfConfig); !s)
    return s;
  if (Status s = model_->crossCacheConfig(batch, crossConfig); !s)
    return s;
  if (Status s = KvCache::create(selfConfig, selfCache); !s)
    return s;
  if (Status s = KvCache::create(crossConfig, crossCache); !s)
    return s;

  // Encode each input once; its cross-attention K/V live for the decode.
  std::vector<SequenceId> selfIds(batch), crossIds(batch);
  std::vector<float> memory;
  for (int i = 0; i < batch; i++) {
    if (int(sources[i].size()) > crossConfig.maxSequenceLength)
      return invalid("input " + std::to_string(i) + " has " +
                     std::to_string(sources[i].size()) +
                     " characters; the model takes at most " +
                     std::to_string(crossConfig.maxSequenceLength));
    if (Status s = model_->encode(sources[i].data(), int(sources[i].size()),
                                  memory, ws_);
        !s)
      return s;
    if (Status s = crossCache.addSequence(crossIds[i]); !s)
      return s;
    if (Status s =
            model_->storeCrossKeyValues(memory.data(), int(sources[i].size()),
                                        crossCache, crossIds[i], ws_);
        !s)
      return s;
    if (Status s = selfCache.addSequence(selfIds[i]); !s)
      return s;
  }

  // Greedy steps over the active sequences; finished ones leave the batch.
  const int vocabulary = model_->targetVocabulary();
  std::vector<int> active(batch);
  for (int i = 0; i < batch; i++)
    active[i] = i;
  std::vector<int32_t> tokens(batch, bos_);
  std::vector<float> logits;
  for (int step = 0; !active.empty(); step++) {
    std::vector<SequenceId> self, cross;
    std::vector<int32_t> input;
    for (int i : active) {
      self.push_back(selfIds[i]);
      cross.push_back(crossIds[i]);
      input.push_back(tokens[i]);
    }
    logits.resize(active.size() * size_t(vocabulary));
    CrossAttentionTrace trace;
    if (Status s = model_->decodeStep(self.data(), cross.data(), input.data(),
                                      int(active.size()), selfCache,
                                      &crossCache, logits.data(), ws_,
                                      attention ? &trace : nullptr);
        !s)
      return s;
    std::vector<int> stillActive;
    for (size_t b = 0; b < active.size(); b++) {
      int i = active[b];
      int32_t next = argmax(&logits[b * vocabulary], vocabulary);
      tokens[i] = next;
      bool full = selfCache.length(selfIds[i]) >= maxTarget_;
      if (next == eos_ || full)
        continue;
      outputs[i].push_back(next);
      if (attention)
        (*attention)[i].push_back(trace.weights[b]);
      if (onWord)
        onWord(i, target_[next]);
      stillActive.push_back(i);
    }
    active = stillActive;
  }
  return Status::ok();
}

Status Translator::translateWithoutCache(const std::vector<int32_t> &source,
                                         std::vector<int32_t> &output) {
  std::vector<float> memory;
  if (Status s = model_->encode(source.data(), int(source.size()), memory, ws_);
      !s)
    return s;
  const int vocabulary = model_->targetVocabulary();
  std::vector<int32_t> prefix = {bos_};
  std::vector<float> logits;
  output.clear();
  while (int(prefix.size()) < maxTarget_) {
    logits.resize(prefix.size() * size_t(vocabulary));
    if (Status s = model_->decodeWithoutCache(prefix.data(), int(prefix.size()),
                                              memory.data(), int(source.size()),
                                              logits.data(), ws_);
        !s)
      return s;
    int32_t next =
        argmax(&logits[(prefix.size() - 1) * vocabulary], vocabulary);
    if (next == eos_)
      break;
    output.push_back(next);
    prefix.push_back(next);
  }
  return Status::ok();
}

} // namespace translate
