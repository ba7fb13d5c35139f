//===- OpenAiRequest.cpp - an OpenAI API request, read and checked --------===//

#include "OpenAiRequest.h"

#include <algorithm>
#include <functional>

namespace attn::apps {

using namespace attn::runtime;
using json = nlohmann::ordered_json;

namespace {

using Field = std::function<const json *(const char *)>;

/// /v1/completions' "prompt": text, or token ids.
std::string readTextPrompt(const Field &field, const Tokenizer &tokenizer,
                           CompletionJob &job, std::string &param) {
  param = "prompt";
  const json *prompt = field("prompt");
  if (!prompt)
    return "'prompt' is required";
  const json &p =
      prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()
          ? (*prompt)[0]
          : *prompt;
  if (p.is_string()) {
    if (Status s = tokenizer.encode(p.get<std::string>(), job.prompt); !s)
      return "'prompt': " + s.message();
  } else if (p.is_array() && !p.empty() &&
             std::all_of(p.begin(), p.end(),
                         [](const json &v) { return v.is_number_integer(); })) {
    for (const json &id : p) {
      int64_t value = id.get<int64_t>();
      if (value < 0 || value >= tokenizer.vocabularySize())
        return "'prompt': token id " + std::to_string(value) +
               " is outside the vocabulary";
      job.prompt.push_back(int32_t(value));
    }
  } else {
    return "'prompt' must be a string, or an array of token ids (one prompt "
           "per request)";
  }

  return "";
}

/// /v1/chat/completions' "messages" (and "tools"), through the model's chat
/// template.
std::string readChatPrompt(const Field &field, const Tokenizer &tokenizer,
                           CompletionJob &job, std::string &param) {
  param = "messages";
  const json *messages = field("messages");
  if (!messages || !messages->is_array() || messages->empty() ||
      !std::all_of(messages->begin(), messages->end(), [](const json &m) {
        return m.is_object() && m.contains("role") && m["role"].is_string();
      }))
    return "'messages' must be a non-empty array of objects with a 'role'";
  json extra = json::object();
  if (const json *tools = field("tools"))
    extra["tools"] = *tools;
  std::string prompt;
  if (Status s = tokenizer.applyChatTemplate(
          messages->dump(), /*addGenerationPrompt=*/true, prompt,
          extra.empty() ? "" : extra.dump());
      !s)
    return s.message();
  // The template places BOS and the turn markers itself.
  if (Status s = tokenizer.encode(prompt, job.prompt, false); !s)
    return s.message();
  return "";
}

/// Log-probabilities as each API asks for them: /v1/completions'
/// "logprobs" (0-20 alternatives) and "echo"; /v1/chat/completions'
/// "logprobs" (true/false) and "top_logprobs" (0-20).
std::string readLogprobs(const Field &field, bool chat, CompletionJob &job,
                         std::string &param) {
  const int most = runtime::kMaxLogprobs;
  auto count = [&](const json &value) {
    return value.is_number_integer() && value.get<int64_t>() >= 0 &&
           value.get<int64_t>() <= most;
  };
  const std::string range = "[0, " + std::to_string(most) + "]";
  if (chat) {
    if (const json *echo = field("echo"); echo && *echo != false) {
      param = "echo";
      return "'echo' is for /v1/completions";
    }
    const json *logprobs = field("logprobs");
    const json *top = field("top_logprobs");
    if (logprobs && !logprobs->is_boolean()) {
      param = "logprobs";
      return "'logprobs' must be true or false";
    }
    if (top && (!count(*top) || !logprobs || *logprobs != true)) {
      param = "top_logprobs";
      return "'top_logprobs' must be an integer in " + range +
             ", with 'logprobs': true";
    }
    if (logprobs && *logprobs == true)
      job.logprobs = top ? top->get<int>() : 0;
    return "";
  }
  if (const json *logprobs = field("logprobs")) {
    if (!count(*logprobs)) {
      param = "logprobs";
      return "'logprobs' must be an integer in " + range;
    }
    job.logprobs = logprobs->get<int>();
  }
  if (const json *echo = field("echo")) {
    if (!echo->is_boolean()) {
      param = "echo";
      return "'echo' must be true or false";
    }
    job.echo = echo->get<bool>();
  }
  return "";
}

} // namespace

/// Reads an OpenAI completion or chat request into `job`; on a bad request
/// returns the message and sets `param` to the field at fault.
std::string readCompletion(const nlohmann::ordered_json &body,
                           const Tokenizer &tokenizer, bool chat,
                           CompletionJob &job, bool &stream,
                           std::string &param) {
  if (!body.is_object())
    return "the request body must be a JSON object";
  Field field = [&](const char *key) -> const json * {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  // Options that change what is generated are honoured or refused.
  struct Unsupported {
    const char *key;
    bool (*isDefault)(const json &);
  };
  static const Unsupported kUnsupported[] = {
      {"n", [](const json &v) { return v == 1; }},
      {"best_of", [](const json &v) { return v == 1; }},
      {"suffix", [](const json &v) { return v == ""; }},
      {"presence_penalty", [](const json &v) { return v == 0; }},
      {"frequency_penalty", [](const json &v) { return v == 0; }},
      {"logit_bias", [](const json &v) { return v.empty(); }},
  };
  for (const Unsupported &option : kUnsupported)
    if (const json *value = field(option.key);
        value && !option.isDefault(*value)) {
      param = option.key;
      return std::string("'") + option.key +
             "' is not supported by this "
             "server; leave it out or at its default";
    }

  if (std::string why = chat ? readChatPrompt(field, tokenizer, job, param)
                             : readTextPrompt(field, tokenizer, job, param);
      !why.empty())
    return why;
  if (job.prompt.empty()) // a model needs a token to start from
    job.prompt.push_back(tokenizer.bosId() >= 0 ? tokenizer.bosId() : 0);

  auto number = [&](const char *key, double low, double high, bool lowOpen,
                    double &out) -> std::string {
    const json *value = field(key);
    if (!value)
      return "";
    param = key;
    if (!value->is_number() || value->get<double>() > high ||
        (lowOpen ? value->get<double>() <= low : value->get<double>() < low))
      return std::string("'") + key + "' must be a number in " +
             (lowOpen ? "(" : "[") + std::to_string(low) + ", " +
             std::to_string(high) + "]";
    out = value->get<double>();
    return "";
  };
  if (std::string why = readLogprobs(field, chat, job, param); !why.empty())
    return why;
  double maxTokens = 16, temperature = 1.0, topP = 1.0, topK = 0, seed = 0;
  struct Range {
    const char *key;
    double low, high;
    bool lowOpen;
    double &out;
  };
  // Checked one at a time: the first invalid option is the one `param`
  // names.
  for (const Range &range :
       {Range{"max_tokens", job.echo ? 0.0 : 1.0, 1 << 20, false, maxTokens},
        Range{"max_completion_tokens", 1, 1 << 20, false, maxTokens},
        Range{"temperature", 0, 2, false, temperature},
        Range{"top_p", 0, 1, true, topP},
        Range{"top_k", 0, 1 << 20, false, topK},
        Range{"seed", 0, 9007199254740991.0, false, seed}})
    if (std::string why =
            number(range.key, range.low, range.high, range.lowOpen, range.out);
        !why.empty())
      return why;
  job.maxTokens = int(maxTokens);
  job.sampling.temperature = float(temperature);
  job.sampling.topP = float(topP);
  job.sampling.topK = int(topK);
  job.sampling.seed = uint64_t(seed);

  param = "stop";
  if (const json *stop = field("stop")) {
    json list = stop->is_array() ? *stop : json::array({*stop});
    if (list.size() > 4 ||
        !std::all_of(list.begin(), list.end(),
                     [](const json &v) { return v.is_string(); }))
      return "'stop' must be a string or up to 4 strings";
    for (const json &s : list)
      job.stops.push_back(s.get<std::string>());
  }
  param = "stream";
  stream = false;
  if (const json *value = field("stream")) {
    if (!value->is_boolean())
      return "'stream' must be true or false";
    stream = value->get<bool>();
  }
  param.clear();
  return "";
}

} // namespace attn::apps
