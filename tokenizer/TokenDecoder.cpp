//===- TokenDecoder.cpp - tokenizer.json's "decoder" ----------------------===//
//
// Each stage maps the list of token strings to a new list, as the
// `tokenizers` decoders do; the result is their concatenation.
//
//===----------------------------------------------------------------------===//

#include "TokenizerParts.h"
#include "Utf8.h"

namespace attn::runtime::tokenizer {

TokenDecoder TokenDecoder::fromJson(const json &value, const std::string &at) {
  TokenDecoder decoder;
  if (!value.is_null()) {
    decoder.any_ = true;
    decoder.read(JsonObject(value, at));
  }
  return decoder;
}

void TokenDecoder::read(const JsonObject &object) {
  std::string type = object.string("type");
  Step step{};
  if (type == "Sequence") {
    for (const JsonObject &inner : object.objects("decoders"))
      read(inner);
    return;
  }
  if (type == "ByteLevel") {
    step.kind = Kind::ByteLevel;
  } else if (type == "Replace") {
    step.kind = Kind::Replace;
    step.pattern = readPattern(object);
    step.content = object.string("content");
  } else if (type == "ByteFallback") {
    step.kind = Kind::ByteFallback;
  } else if (type == "Fuse") {
    step.kind = Kind::Fuse;
  } else if (type == "Strip") {
    step.kind = Kind::Strip;
    step.content = object.string("content");
    if (utf8::characterLength(step.content, 0) != step.content.size())
      object.fail("content", "expected one character");
    step.start = int(object.integer("start"));
    step.stop = int(object.integer("stop"));
    if (step.start < 0 || step.stop < 0)
      object.fail("start", "expected counts >= 0");
  } else if (type == "Metaspace") {
    step.kind = Kind::Metaspace;
    step.content = object.string("replacement", "\u2581");
    std::string scheme = object.string(
        "prepend_scheme",
        object.boolean("add_prefix_space", true) ? "always" : "never");
    step.stripFirstSpace = scheme != "never";
  } else {
    object.unknownType(type, "Sequence, ByteLevel, Replace, ByteFallback, "
                             "Fuse, Strip, Metaspace");
  }
  steps_.push_back(std::move(step));
}

namespace {

/// The byte a "<0xAB>" token stands for, or -1.
int fallbackByte(const std::string &token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
    return -1;
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  int high = hex(token[3]), low = hex(token[4]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

} // namespace

std::string TokenDecoder::decode(std::vector<std::string> tokens) const {
  if (!any_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); i++)
      joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  for (const Step &step : steps_) {
    std::vector<std::string> out;
    switch (step.kind) {
    case Kind::ByteLevel: {
      std::string bytes;
      for (const std::string &token : tokens) {
        // A token with a character outside the byte alphabet (an added
        // token) stands for its own UTF-8.
        std::string spelled;
        bool all = true;
        for (size_t at = 0; at < token.size() && all;) {
          int byte = utf8::characterByte(utf8::next(token, at));
          all = byte >= 0;
          spelled += char(byte);
        }
        bytes += all ? spelled : token;
      }
      out.push_back(std::move(bytes));
      break;
    }
    case Kind::Replace:
      for (const std::string &token : tokens)
        out.push_back(replaceAll(token, *step.pattern, step.content));
      break;
    case Kind::ByteFallback: {
      // A run of byte tokens becomes its text when that is valid UTF-8, or
      // one U+FFFD per byte.
      std::string run;
      size_t runTokens = 0;
      auto flush = [&] {
        if (!runTokens)
          return;
        if (utf8::firstInvalidByte(run) == std::string::npos)
          out.push_back(run);
        else
          for (size_t i = 0; i < runTokens; i++)
            out.push_back("\xEF\xBF\xBD");
        run.clear();
        runTokens = 0;
      };
      for (const std::string &token : tokens) {
        int byte = fallbackByte(token);
        if (byte >= 0) {
          run += char(byte);
          runTokens++;
        } else {
          flush();
          out.push_back(token);
        }
      }
      flush();
      break;
    }
    case Kind::Fuse: {
      std::string fused;
      for (const std::string &token : tokens)
        fused += token;
      out.push_back(std::move(fused));
      break;
    }
    case Kind::Strip:
      for (const std::string &token : tokens) {
        size_t n = step.content.size(), begin = 0, end = token.size();
        for (int i = 0; i < step.start && token.compare(begin, n, step.content) == 0; i++)
          begin += n;
        for (int i = 0; i < step.stop && end >= begin + n &&
                        token.compare(end - n, n, step.content) == 0;
             i++)
          end -= n;
        out.push_back(token.substr(begin, end - begin));
      }
      break;
    case Kind::Metaspace:
      for (size_t i = 0; i < tokens.size(); i++) {
        std::string text;
        const std::string &token = tokens[i];
        for (size_t at = 0; at < token.size();) {
          if (token.compare(at, step.content.size(), step.content) == 0) {
            text += ' ';
            at += step.content.size();
          } else {
            text += token[at++];
          }
        }
        if (i == 0 && step.stripFirstSpace && !text.empty() && text[0] == ' ')
          text.erase(0, 1);
        out.push_back(std::move(text));
      }
      break;
    }
    tokens = std::move(out);
  }
  std::string text;
  for (const std::string &token : tokens)
    text += token;
  return text;
}

} // namespace attn::runtime::tokenizer
