//===- FuzzChatTemplate.cpp - chat templates and their variables ----------===//
//
// One input: a chat template, a NUL byte, then JSON variables. The template
// is parsed and, if the JSON is an object, rendered: any source and any
// values must give text or a TemplateError, never a crash, a hang or a read
// out of bounds (nesting is bounded; loops run over finite values). Seeds:
// fuzz/corpus/chat-template/.
//
//===----------------------------------------------------------------------===//

#include "ChatTemplate.h"

#include <cstdint>
#include <string_view>

using attn::runtime::tokenizer::ChatTemplate;
using attn::runtime::tokenizer::TemplateError;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  size_t nul = input.find('\0');
  std::string_view source = input.substr(0, nul);
  std::string_view variables =
      nul == std::string_view::npos ? "{}" : input.substr(nul + 1);
  try {
    ChatTemplate chat(source);
    auto values = nlohmann::ordered_json::parse(variables, nullptr, false);
    if (values.is_object())
      (void)chat.render(values);
  } catch (const TemplateError &) {
  }
  return 0;
}
