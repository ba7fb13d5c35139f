//===- Regex.cpp - PCRE2 for the tokenizer's patterns ---------------------===//
//
// tokenizer.json patterns are written for Oniguruma (what `tokenizers`
// uses): Unicode properties (\p{L}, \p{N}), lookahead, (?i:...). PCRE2 in
// UTF mode with Unicode properties for \s, \w and \d reads them the same.
//
//===----------------------------------------------------------------------===//

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "TokenizerParts.h"
#include "Utf8.h"

namespace attn::runtime::tokenizer {

Regex::Regex(const std::string &pattern, bool literal, const std::string &at) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  uint32_t options =
      PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP); // LITERAL takes no UCP
  pcre2_code *code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                    pattern.size(), options, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw TokenizerError(at + ": pattern does not compile at offset " +
                         std::to_string(offset) + ": " +
                         reinterpret_cast<const char *>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // interpreted if JIT is absent
  code_ = std::shared_ptr<void>(code, [](void *c) {
    pcre2_code_free(static_cast<pcre2_code *>(c));
  });
}

std::vector<std::pair<size_t, size_t>>
Regex::matches(std::string_view text) const {
  auto *code = static_cast<pcre2_code *>(code_.get());
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data *)> data(
      pcre2_match_data_create_from_pattern(code, nullptr),
      pcre2_match_data_free);
  std::vector<std::pair<size_t, size_t>> out;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  for (size_t at = 0; at <= text.size();) {
    // The text was checked as UTF-8 once, on the way in.
    int rc = pcre2_match(code, subject, text.size(), at, PCRE2_NO_UTF_CHECK,
                         data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0) { // a match or depth limit: a pattern that backtracks badly
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw TokenizerError(std::string("a pattern failed on this text: ") +
                           reinterpret_cast<const char *>(message));
    }
    PCRE2_SIZE *range = pcre2_get_ovector_pointer(data.get());
    size_t begin = range[0], end = range[1];
    if (end == begin) { // an empty match splits nothing: step one character
      if (begin >= text.size())
        break;
      at = begin + utf8::characterLength(text, begin);
      continue;
    }
    out.emplace_back(begin, end);
    at = end;
  }
  return out;
}

std::shared_ptr<Regex> readPattern(const JsonObject &object) {
  JsonObject pattern = object.object("pattern");
  if (pattern.has("String"))
    return std::make_shared<Regex>(pattern.string("String"), true,
                                   pattern.at + ".String");
  if (pattern.has("Regex"))
    return std::make_shared<Regex>(pattern.string("Regex"), false,
                                   pattern.at + ".Regex");
  pattern.fail("String", "expected a \"String\" or a \"Regex\" pattern");
}

std::string replaceAll(std::string_view text, const Regex &pattern,
                       std::string_view content) {
  std::string out;
  size_t done = 0;
  for (auto [begin, end] : pattern.matches(text)) {
    out.append(text.substr(done, begin - done));
    out.append(content);
    done = end;
  }
  out.append(text.substr(done));
  return out;
}

} // namespace attn::runtime::tokenizer
