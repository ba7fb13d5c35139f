//===- PreTokenizer.cpp - tokenizer.json's "pre_tokenizer" ----------------===//

#include "TokenizerParts.h"
#include "Utf8.h"

#include <algorithm>

namespace attn::runtime::tokenizer {

namespace {

/// GPT-2's word pattern: ByteLevel's split when "use_regex" is true.
const char *kByteLevelPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Segment {
  size_t begin, end;
  bool isMatch;
};

/// The text cut at the matches: matches and the gaps between them.
std::vector<Segment> segments(std::string_view text, const Regex &regex) {
  std::vector<Segment> out;
  size_t done = 0;
  for (auto [begin, end] : regex.matches(text)) {
    if (begin > done)
      out.push_back({done, begin, false});
    out.push_back({begin, end, true});
    done = end;
  }
  if (done < text.size())
    out.push_back({done, text.size(), false});
  return out;
}

} // namespace

PreTokenizer PreTokenizer::fromJson(const json &value, const std::string &at) {
  PreTokenizer preTokenizer;
  if (!value.is_null())
    preTokenizer.read(JsonObject(value, at));
  return preTokenizer;
}

void PreTokenizer::read(const JsonObject &object) {
  std::string type = object.string("type");
  Step step{};
  if (type == "Sequence") {
    for (const JsonObject &inner : object.objects("pretokenizers"))
      read(inner);
    return;
  }
  if (type == "Split") {
    step.kind = Kind::Split;
    step.regex = readPattern(object);
    std::string behavior = object.string("behavior");
    if (behavior == "Removed")
      step.behavior = Behavior::Removed;
    else if (behavior == "Isolated")
      step.behavior = Behavior::Isolated;
    else if (behavior == "MergedWithPrevious")
      step.behavior = Behavior::MergedWithPrevious;
    else if (behavior == "MergedWithNext")
      step.behavior = Behavior::MergedWithNext;
    else if (behavior == "Contiguous")
      step.behavior = Behavior::Contiguous;
    else
      object.fail("behavior", "'" + behavior + "' is not a split behavior");
    step.invert = object.boolean("invert", false);
  } else if (type == "ByteLevel") {
    step.kind = Kind::ByteLevel;
    step.addPrefixSpace = object.boolean("add_prefix_space", true);
    if (object.boolean("use_regex", true))
      step.regex =
          std::make_shared<Regex>(kByteLevelPattern, false, object.at);
  } else if (type == "Metaspace") {
    step.kind = Kind::Metaspace;
    step.replacement = object.string("replacement", "\u2581");
    if (utf8::firstInvalidByte(step.replacement) != std::string::npos ||
        step.replacement.empty() ||
        utf8::characterLength(step.replacement, 0) != step.replacement.size())
      object.fail("replacement", "expected one character");
    std::string scheme = object.string(
        "prepend_scheme",
        object.boolean("add_prefix_space", true) ? "always" : "never");
    if (scheme == "always")
      step.prepend = Step::Always;
    else if (scheme == "first")
      step.prepend = Step::First;
    else if (scheme == "never")
      step.prepend = Step::Never;
    else
      object.fail("prepend_scheme", "'" + scheme + "' is not a scheme");
    step.splitWords = object.boolean("split", true);
  } else {
    object.unknownType(type, "Sequence, Split, ByteLevel, Metaspace");
  }
  steps_.push_back(std::move(step));
}

void PreTokenizer::cut(const Piece &piece, const Step &step,
                       std::vector<Piece> &out) {
  // Emits text[begin, end) of `source`; only the first piece of a span that
  // begins the text keeps atStart.
  auto emitAll = [&](const std::string &source,
                     const std::vector<Segment> &parts) {
    for (const Segment &part : parts)
      if (part.end > part.begin)
        out.push_back({source.substr(part.begin, part.end - part.begin),
                       piece.atStart && part.begin == 0});
  };
  switch (step.kind) {
  case Kind::Split: {
    std::vector<Segment> parts = segments(piece.text, *step.regex);
    // Inverted (GPT-4o's "Removed" split keeps the pattern's matches): the
    // behavior applies to the gaps between matches instead.
    if (step.invert)
      for (Segment &part : parts)
        part.isMatch = !part.isMatch;
    std::vector<Segment> merged;
    // As tokenizers' SplitDelimiterBehavior: a match joins the piece before
    // (or after) it unless that piece is itself a match.
    bool previousMatch = false;
    switch (step.behavior) {
    case Behavior::Isolated:
      merged = parts;
      break;
    case Behavior::Removed:
      for (const Segment &part : parts)
        if (!part.isMatch)
          merged.push_back(part);
      break;
    case Behavior::MergedWithPrevious:
      for (const Segment &part : parts) {
        if (part.isMatch && !previousMatch && !merged.empty())
          merged.back().end = part.end;
        else
          merged.push_back(part);
        previousMatch = part.isMatch;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->isMatch && !previousMatch && !merged.empty())
          merged.back().begin = it->begin;
        else
          merged.push_back(*it);
        previousMatch = it->isMatch;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    case Behavior::Contiguous:
      for (const Segment &part : parts) {
        if (part.isMatch == previousMatch && !merged.empty())
          merged.back().end = part.end;
        else
          merged.push_back(part);
        previousMatch = part.isMatch;
      }
      break;
    }
    emitAll(piece.text, merged);
    return;
  }
  case Kind::ByteLevel: {
    std::string text = piece.text;
    if (step.addPrefixSpace && text.rfind(' ', 0) != 0)
      text.insert(0, " ");
    std::vector<Segment> parts =
        step.regex ? segments(text, *step.regex)
                   : std::vector<Segment>{{0, text.size(), true}};
    size_t first = out.size();
    emitAll(text, parts);
    for (size_t i = first; i < out.size(); i++) {
      std::string spelled;
      for (unsigned char byte : out[i].text)
        utf8::append(spelled, utf8::byteCharacter(byte));
      out[i].text = std::move(spelled);
    }
    return;
  }
  case Kind::Metaspace: {
    std::string text;
    for (char c : piece.text)
      c == ' ' ? text += step.replacement : text += c;
    bool prepend = step.prepend == Step::Always ||
                   (step.prepend == Step::First && piece.atStart);
    if (prepend && text.rfind(step.replacement, 0) != 0)
      text.insert(0, step.replacement);
    if (!step.splitWords) {
      out.push_back({text, piece.atStart});
      return;
    }
    // Each replacement character starts a word (MergedWithNext).
    std::vector<Segment> words;
    size_t begin = 0;
    for (size_t at = text.find(step.replacement, 1); at != std::string::npos;
         at = text.find(step.replacement, at + step.replacement.size())) {
      words.push_back({begin, at, false});
      begin = at;
    }
    words.push_back({begin, text.size(), false});
    emitAll(text, words);
    return;
  }
  }
}

std::vector<std::string> PreTokenizer::split(std::string_view text,
                                             bool atStart) const {
  std::vector<Piece> pieces{{std::string(text), atStart}}, next;
  for (const Step &step : steps_) {
    next.clear();
    for (const Piece &piece : pieces)
      cut(piece, step, next);
    pieces.swap(next);
  }
  std::vector<std::string> words;
  words.reserve(pieces.size());
  for (Piece &piece : pieces)
    words.push_back(std::move(piece.text));
  return words;
}

} // namespace attn::runtime::tokenizer
