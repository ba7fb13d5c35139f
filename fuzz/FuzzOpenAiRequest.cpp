//===- FuzzOpenAiRequest.cpp - attn-serve's request bodies ----------------===//
//
// One input: a first byte choosing the API (even: /v1/completions, odd:
// /v1/chat/completions), then the request body as a client would send it.
// attn-serve's reader (apps/OpenAiRequest.cpp) takes it with a small
// byte-level tokenizer that has a chat template: every body must become a
// job or a 400's message, never a crash. Seeds: fuzz/corpus/openai-request/.
//
//===----------------------------------------------------------------------===//

#include "OpenAiRequest.h"

#include <cstdint>
#include <string_view>

using namespace attn::runtime;

namespace {

const Tokenizer &tokenizer() {
  static const Tokenizer loaded = [] {
    Tokenizer t;
    Status s = Tokenizer::parse(
        R"({"added_tokens": [{"id": 4, "content": "<|end|>", "special": true}],
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},
            "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3},
                      "merges": ["a b"]}})",
        R"({"eos_token": "<|end|>", "chat_template":
            "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}<|end|>{% endfor %}{% if tools %}{{ tools|tojson }}{% endif %}{% if add_generation_prompt %}assistant:{% endif %}"})",
        "", "fuzz", t);
    if (!s)
      __builtin_trap(); // the fuzzer's own tokenizer must load
    return t;
  }();
  return loaded;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  bool chat = data[0] & 1;
  std::string_view body(reinterpret_cast<const char *>(data + 1), size - 1);
  auto json = nlohmann::ordered_json::parse(body, nullptr, false);
  if (json.is_discarded())
    return 0;
  attn::apps::CompletionJob job;
  bool stream = false;
  std::string param;
  (void)attn::apps::readCompletion(json, tokenizer(), chat, job, stream, param);
  return 0;
}
