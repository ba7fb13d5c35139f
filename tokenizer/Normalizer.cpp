//===- Normalizer.cpp - tokenizer.json's "normalizer" ---------------------===//
//
// Unicode normalization forms and case mapping come from utf8proc (Debian
// libutf8proc-dev), not from tables of our own.
//
//===----------------------------------------------------------------------===//

#include "TokenizerParts.h"
#include "Utf8.h"

#include <utf8proc.h>

#include <cstdlib>

namespace attn::runtime::tokenizer {

Normalizer Normalizer::fromJson(const json &value, const std::string &at) {
  Normalizer normalizer;
  if (!value.is_null())
    normalizer.read(JsonObject(value, at));
  return normalizer;
}

void Normalizer::read(const JsonObject &object) {
  std::string type = object.string("type");
  if (type == "Sequence") {
    for (const JsonObject &step : object.objects("normalizers"))
      read(step);
  } else if (type == "Prepend") {
    steps_.push_back({Kind::Prepend, object.string("prepend"), nullptr});
  } else if (type == "Replace") {
    steps_.push_back(
        {Kind::Replace, object.string("content"), readPattern(object)});
  } else if (type == "NFC" || type == "NFKC" || type == "NFD" ||
             type == "NFKD") {
    Kind kind = type == "NFC"    ? Kind::Nfc
                : type == "NFKC" ? Kind::Nfkc
                : type == "NFD"  ? Kind::Nfd
                                 : Kind::Nfkd;
    steps_.push_back({kind, "", nullptr});
  } else if (type == "Lowercase") {
    steps_.push_back({Kind::Lowercase, "", nullptr});
  } else {
    object.unknownType(type, "Sequence, Prepend, Replace, NFC, NFKC, NFD, "
                             "NFKD, Lowercase");
  }
}

namespace {

std::string normalizeForm(std::string_view text, int options) {
  utf8proc_uint8_t *out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
      utf8proc_ssize_t(text.size()), &out, utf8proc_option_t(options));
  if (n < 0) // only on invalid UTF-8, which never gets here
    return std::string(text);
  std::string result(reinterpret_cast<char *>(out), size_t(n));
  std::free(out);
  return result;
}

} // namespace

std::string Normalizer::apply(std::string_view text) const {
  std::string current(text);
  for (const Step &step : steps_) {
    switch (step.kind) {
    case Kind::Prepend:
      if (!current.empty()) // tokenizers prepends to non-empty text only
        current = step.content + current;
      break;
    case Kind::Replace:
      current = replaceAll(current, *step.pattern, step.content);
      break;
    case Kind::Nfc:
      current = normalizeForm(current, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
      break;
    case Kind::Nfkc:
      current = normalizeForm(current, UTF8PROC_STABLE | UTF8PROC_COMPOSE |
                                           UTF8PROC_COMPAT);
      break;
    case Kind::Nfd:
      current = normalizeForm(current, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
      break;
    case Kind::Nfkd:
      current = normalizeForm(current, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE |
                                           UTF8PROC_COMPAT);
      break;
    case Kind::Lowercase: {
      std::string lower;
      for (size_t at = 0; at < current.size();)
        utf8::append(lower, char32_t(utf8proc_tolower(
                                utf8proc_int32_t(utf8::next(current, at)))));
      current = std::move(lower);
      break;
    }
    }
  }
  return current;
}

} // namespace attn::runtime::tokenizer
