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
  result->context_ = std::make_unique<ExecutionContext>(*result->model_);
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
  if (!generator_ || generator_->capacity() < batch)
    if (Status s = Generator::create(*model_, batch, generator_); !s)
      return s;
  Generator *generator = generator_.get();
  if (Status s = generator->clear(); !s)
    return s;
  // Every input joins at once; the Generator encodes each, then decodes
  // them greedily as one batch until each says <eos> (not an output word)
  // or fills the target's max length (<bos> included).
  for (int i = 0; i < batch; i++) {
    GenerationRequest request;
    request.source = sources[i];
    request.prompt = {bos_};
    request.maxNewTokens = maxTarget_ - 1;
    request.stopTokens = {eos_};
    if (onWord)
      request.onToken = [this, i, &onWord](int32_t token) {
        if (token != eos_)
          onWord(i, target_[token]);
        return true;
      };
    if (attention)
      request.crossAttention = &(*attention)[i];
    int id;
    if (Status s = generator->submit(std::move(request), id); !s) {
      generator_.reset(); // with the inputs before this one still running
      return Status(s.code(),
                    "input " + std::to_string(i) + ": " + s.message());
    }
  }
  if (Status s = generator->run(); !s) {
    generator_.reset();
    return s;
  }
  for (int i = 0; i < batch; i++) {
    outputs[i] = generator->tokens(i);
    if (!outputs[i].empty() && outputs[i].back() == eos_) {
      outputs[i].pop_back();
      if (attention)
        (*attention)[i].pop_back();
    }
  }
  return Status::ok();
}

Status Translator::translateWithoutCache(const std::vector<int32_t> &source,
                                         std::vector<int32_t> &output) {
  std::vector<float> memory;
  if (Status s =
          model_->encode(source.data(), int(source.size()), memory, *context_);
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
                                              logits.data(), *context_);
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
