//===- Tokenizer.cpp - tokenizer.json: loading, encoding, decoding --------===//

#include "attn/runtime/Tokenizer.h"
#include "attn/runtime/Gguf.h"

#include "ChatTemplate.h"
#include "TokenizerParts.h"
#include "Utf8.h"

#include <utf8proc.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

namespace attn::runtime {

using tokenizer::json;
using tokenizer::JsonObject;
using tokenizer::TokenizerError;

namespace {

/// An entry of "added_tokens": matched in the text before the model sees it.
struct AddedToken {
  std::string content;
  int32_t id;
  bool special, singleWord, lstrip, rstrip, normalized;
};

/// Leftmost-longest matching of a set of added tokens (tokenizers uses an
/// Aho-Corasick automaton; a few hundred tokens, bucketed by first byte,
/// need nothing more).
class AddedTokenMatcher {
public:
  void add(const AddedToken *token) {
    if (!token->content.empty())
      byFirstByte_[uint8_t(token->content[0])].push_back(token);
  }
  void finish() {
    for (auto &bucket : byFirstByte_)
      std::stable_sort(bucket.begin(), bucket.end(),
                       [](const AddedToken *a, const AddedToken *b) {
                         return a->content.size() > b->content.size();
                       });
  }
  bool empty() const {
    return std::all_of(byFirstByte_.begin(), byFirstByte_.end(),
                       [](const auto &bucket) { return bucket.empty(); });
  }
  /// The text cut into spans: text between tokens, and tokens (with the
  /// whitespace their lstrip / rstrip take).
  struct Span {
    size_t begin, end;
    const AddedToken *token; // null: ordinary text
  };
  std::vector<Span> split(std::string_view text) const;

private:
  std::array<std::vector<const AddedToken *>, 256> byFirstByte_;
};

bool isWhitespace(char32_t c) {
  auto category = utf8proc_category(utf8proc_int32_t(c));
  return (c >= 9 && c <= 13) || c == 0x85 || category == UTF8PROC_CATEGORY_ZS ||
         category == UTF8PROC_CATEGORY_ZL || category == UTF8PROC_CATEGORY_ZP;
}

bool isWordCharacter(char32_t c) {
  auto category = utf8proc_category(utf8proc_int32_t(c));
  return (category >= UTF8PROC_CATEGORY_LU &&
          category <= UTF8PROC_CATEGORY_LO) ||
         (category >= UTF8PROC_CATEGORY_ND && category <= UTF8PROC_CATEGORY_NO);
}

/// The code point that ends text[0, end) (text is valid UTF-8, end > 0).
char32_t previousCharacter(std::string_view text, size_t end) {
  size_t begin = end - 1;
  while (begin > 0 && (uint8_t(text[begin]) & 0xC0) == 0x80)
    begin--;
  return utf8::next(text, begin);
}

std::vector<AddedTokenMatcher::Span>
AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Span> spans;
  size_t done = 0; // end of the last token span
  for (size_t at = 0; at < text.size();) {
    const AddedToken *found = nullptr;
    for (const AddedToken *token : byFirstByte_[uint8_t(text[at])])
      if (text.compare(at, token->content.size(), token->content) == 0) {
        found = token;
        break;
      }
    if (!found) {
      at += utf8::characterLength(text, at);
      continue;
    }
    size_t begin = at, end = at + found->content.size();
    at = end;
    if (found->singleWord &&
        ((begin > 0 && isWordCharacter(previousCharacter(text, begin))) ||
         (end < text.size() && [&] {
           size_t next = end;
           return isWordCharacter(utf8::next(text, next));
         }())))
      continue; // a single-word token inside a word is text
    if (found->lstrip)
      while (begin > done) {
        size_t before = begin - 1;
        while (before > 0 && (uint8_t(text[before]) & 0xC0) == 0x80)
          before--;
        size_t next = before;
        if (!isWhitespace(utf8::next(text, next)))
          break;
        begin = before;
      }
    if (found->rstrip)
      while (end < text.size()) {
        size_t next = end;
        if (!isWhitespace(utf8::next(text, next)))
          break;
        end = next;
      }
    if (begin > done)
      spans.push_back({done, begin, nullptr});
    spans.push_back({begin, end, found});
    done = at = end;
  }
  if (done < text.size())
    spans.push_back({done, text.size(), nullptr});
  return spans;
}

/// Token ids a post-processor puts around the encoded text.
struct Template {
  std::vector<int32_t> before, after;
};

} // namespace

struct Tokenizer::Impl {
  tokenizer::Normalizer normalizer;
  tokenizer::PreTokenizer preTokenizer;
  tokenizer::BpeModel model;
  tokenizer::TokenDecoder decoder;
  std::vector<AddedToken> added;
  AddedTokenMatcher rawMatcher, normalizedMatcher;
  Template post;
  std::vector<std::string> spelling; // by id
  std::vector<bool> special;         // by id
  int32_t bos = -1;
  std::vector<int32_t> eos;
  bool cleanUpSpaces = false;
  /// tokenizer_config.json's chat_template, parsed; or why it cannot be.
  std::shared_ptr<const tokenizer::ChatTemplate> chatTemplate;
  std::string chatTemplateError;
  nlohmann::ordered_json specialTokens; ///< bos_token, ... for templates

  void encodeText(std::string_view text, bool atStart,
                  std::vector<int32_t> &ids) const {
    for (const std::string &word : preTokenizer.split(text, atStart))
      model.encode(word, ids);
  }
  std::string decodeBytes(const std::vector<int32_t> &ids, size_t begin,
                          size_t end, bool skipSpecial) const;
};

namespace {

Template readPostProcessor(const JsonObject &object, const Tokenizer::Impl &t) {
  std::string type = object.string("type");
  Template result;
  if (type == "Sequence") {
    for (const JsonObject &inner : object.objects("processors")) {
      Template next = readPostProcessor(inner, t);
      result.before.insert(result.before.begin(), next.before.begin(),
                           next.before.end());
      result.after.insert(result.after.end(), next.after.begin(),
                          next.after.end());
    }
  } else if (type == "ByteLevel") {
    // Adjusts offsets only; the ids are unchanged.
  } else if (type == "TemplateProcessing") {
    JsonObject specials = object.object("special_tokens");
    bool sequenceSeen = false;
    for (const JsonObject &piece : object.objects("single")) {
      if (piece.has("Sequence")) {
        if (sequenceSeen || piece.object("Sequence").string("id") != "A")
          piece.fail("Sequence", "a single-sequence template has one \"A\"");
        sequenceSeen = true;
        continue;
      }
      std::string name = piece.object("SpecialToken").string("id");
      if (!specials.has(name.c_str()))
        piece.fail("SpecialToken.id",
                   "'" + name + "' is not in special_tokens");
      JsonObject special = specials.object(name.c_str());
      if (!special.has("ids") || !special.value.at("ids").is_array())
        special.fail("ids", "expected an array of ids");
      for (const json &id : special.value.at("ids")) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() >= int64_t(t.spelling.size()))
          special.fail("ids", "expected ids of the vocabulary");
        (sequenceSeen ? result.after : result.before)
            .push_back(int32_t(id.get<int64_t>()));
      }
    }
    if (!sequenceSeen)
      object.fail("single", "the template has no \"A\" sequence");
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    auto tokenId = [&](const char *key) {
      const json &pair = object.value.contains(key) ? object.value.at(key)
                                                    : json();
      if (!pair.is_array() || pair.size() != 2 ||
          !pair[1].is_number_integer() || pair[1].get<int64_t>() < 0 ||
          pair[1].get<int64_t>() >= int64_t(t.spelling.size()))
        object.fail(key, "expected [token, id]");
      return int32_t(pair[1].get<int64_t>());
    };
    result.before.push_back(tokenId("cls"));
    result.after.push_back(tokenId("sep"));
  } else {
    object.unknownType(type, "Sequence, ByteLevel, TemplateProcessing, "
                             "RobertaProcessing, BertProcessing");
  }
  return result;
}

/// "<s>" or {"content": "<s>", ...}: how tokenizer_config.json names a token.
std::string configToken(const json &config, const char *key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null())
    return "";
  if (it->is_string())
    return it->get<std::string>();
  if (it->is_object() && it->contains("content") &&
      it->at("content").is_string())
    return it->at("content").get<std::string>();
  throw TokenizerError(std::string("tokenizer_config.json: ") + key +
                       ": expected a token");
}

/// generation_config.json's "eos_token_id": an id or a list of ids.
std::vector<int32_t> configIds(const json &config, const char *key,
                               int32_t vocabularySize) {
  std::vector<int32_t> ids;
  auto it = config.find(key);
  if (it == config.end() || it->is_null())
    return ids;
  json list = it->is_array() ? *it : json::array({*it});
  for (const json &id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= vocabularySize)
      throw TokenizerError(std::string("generation_config.json: ") + key +
                           ": expected ids below " +
                           std::to_string(vocabularySize));
    ids.push_back(int32_t(id.get<int64_t>()));
  }
  return ids;
}

/// Parses JSON text; a syntax error names `name:line:column`.
json parseJson(std::string_view text, const std::string &name) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error &error) {
    size_t offset = std::min<size_t>(error.byte ? error.byte - 1 : 0,
                                     text.size());
    size_t line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
    size_t lineStart = text.rfind('\n', offset ? offset - 1 : 0);
    size_t column = lineStart == std::string_view::npos || offset == 0
                        ? offset + 1
                        : offset - lineStart;
    std::string what = error.what();
    if (size_t colon = what.rfind(": "); colon != std::string::npos)
      what = what.substr(colon + 2);
    throw TokenizerError(name + ":" + std::to_string(line) + ":" +
                         std::to_string(column) + ": error: " + what);
  }
}

void build(const json &root, const json &config, const json &generation,
           Tokenizer::Impl &t) {
  JsonObject top(root, "");
  for (const char *key : {"truncation", "padding"})
    if (top.has(key))
      top.fail(key, "attnc does not truncate or pad; set it to null");
  t.model = tokenizer::BpeModel::fromJson(top.object("model").value, "model");
  t.normalizer = tokenizer::Normalizer::fromJson(
      root.contains("normalizer") ? root["normalizer"] : json(), "normalizer");
  t.preTokenizer = tokenizer::PreTokenizer::fromJson(
      root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json(),
      "pre_tokenizer");
  t.decoder = tokenizer::TokenDecoder::fromJson(
      root.contains("decoder") ? root["decoder"] : json(), "decoder");

  int32_t size = 0;
  for (const auto &[token, id] : t.model.vocabulary)
    size = std::max(size, id + 1);
  if (top.has("added_tokens"))
    for (const JsonObject &entry : top.objects("added_tokens")) {
      int64_t id = entry.integer("id");
      if (id < 0 || id >= tokenizer::kTokenIdLimit)
        entry.fail("id", "expected an id in [0, 2^24)");
      std::string content = entry.string("content");
      if (content.empty())
        entry.fail("content", "an added token cannot be empty");
      t.added.push_back({content, int32_t(id), entry.boolean("special", false),
                         entry.boolean("single_word", false),
                         entry.boolean("lstrip", false),
                         entry.boolean("rstrip", false),
                         entry.boolean("normalized", false)});
      size = std::max(size, int32_t(id) + 1);
    }
  t.spelling.assign(size_t(size), "");
  t.special.assign(size_t(size), false);
  for (const auto &[token, id] : t.model.vocabulary)
    t.spelling[id] = token;
  for (const AddedToken &token : t.added) {
    t.spelling[token.id] = token.content;
    t.special[token.id] = token.special;
    (token.normalized && !token.special ? t.normalizedMatcher : t.rawMatcher)
        .add(&token);
  }
  t.rawMatcher.finish();
  t.normalizedMatcher.finish();
  if (top.has("post_processor"))
    t.post = readPostProcessor(top.object("post_processor"), t);

  auto idOf = [&](const std::string &token, const char *key) {
    if (token.empty())
      return -1;
    for (const AddedToken &added : t.added)
      if (added.content == token)
        return added.id;
    auto it = t.model.vocabulary.find(token);
    if (it == t.model.vocabulary.end())
      throw TokenizerError(std::string("tokenizer_config.json: ") + key +
                           ": '" + token + "' is not a token");
    return it->second;
  };
  std::vector<int32_t> bos = configIds(generation, "bos_token_id", size);
  t.bos = !bos.empty() ? bos[0] : idOf(configToken(config, "bos_token"),
                                       "bos_token");
  t.eos = configIds(generation, "eos_token_id", size);
  if (t.eos.empty())
    if (int32_t eos = idOf(configToken(config, "eos_token"), "eos_token");
        eos >= 0)
      t.eos.push_back(eos);
  for (const char *key : {"bos_token", "eos_token", "unk_token", "pad_token"})
    if (std::string token = configToken(config, key); !token.empty())
      t.specialTokens[key] = token;
  if (auto it = config.find("chat_template"); it != config.end()) {
    // A string, or a list of named templates of which "default" is used.
    std::string source;
    if (it->is_string())
      source = it->get<std::string>();
    else if (it->is_array())
      for (const json &named : *it)
        if (named.is_object() && named.value("name", "") == "default" &&
            named.contains("template") && named["template"].is_string())
          source = named["template"].get<std::string>();
    if (source.empty())
      t.chatTemplateError = "tokenizer_config.json: chat_template: expected "
                            "a template, or a list with a \"default\" one";
    else
      try {
        t.chatTemplate = std::make_shared<tokenizer::ChatTemplate>(source);
      } catch (const tokenizer::TemplateError &error) {
        t.chatTemplateError =
            std::string("tokenizer_config.json: chat_template: ") +
            error.what();
      }
  } else {
    t.chatTemplateError = "tokenizer_config.json has no chat_template";
  }
  auto cleanUp = config.find("clean_up_tokenization_spaces");
  t.cleanUpSpaces = cleanUp != config.end() && cleanUp->is_boolean() &&
                    cleanUp->get<bool>();
}

/// transformers' clean_up_tokenization: no space before punctuation and
/// English contractions, when tokenizer_config.json asks for it.
std::string cleanUpSpaces(std::string text) {
  static const std::pair<const char *, const char *> kRules[] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},   {" ,", ","},
      {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
      {" 've", "'ve"}, {" 're", "'re"}};
  for (auto [from, to] : kRules) {
    std::string out;
    std::string_view pattern(from);
    size_t done = 0;
    for (size_t at = text.find(pattern); at != std::string::npos;
         at = text.find(pattern, done)) {
      out.append(text, done, at - done);
      out += to;
      done = at + pattern.size();
    }
    out.append(text, done);
    text = std::move(out);
  }
  return text;
}

std::string readFile(const std::string &path, bool required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (required)
      throw TokenizerError(path + ": cannot be read");
    return "";
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

std::string Tokenizer::Impl::decodeBytes(const std::vector<int32_t> &ids,
                                         size_t begin, size_t end,
                                         bool skipSpecial) const {
  std::vector<std::string> tokens;
  for (size_t i = begin; i < end; i++)
    if (!(skipSpecial && special[ids[i]]))
      tokens.push_back(spelling[ids[i]]);
  return decoder.decode(std::move(tokens));
}

Status Tokenizer::parse(std::string_view tokenizerJson, std::string_view config,
                        std::string_view generationConfig,
                        const std::string &name, Tokenizer &tokenizer) {
  try {
    auto impl = std::make_shared<Impl>();
    json root = parseJson(tokenizerJson, name);
    json configRoot = config.empty()
                          ? json::object()
                          : parseJson(config, "tokenizer_config.json");
    json generationRoot =
        generationConfig.empty()
            ? json::object()
            : parseJson(generationConfig, "generation_config.json");
    if (!configRoot.is_object() || !generationRoot.is_object())
      throw TokenizerError("tokenizer_config.json and generation_config.json "
                           "must hold objects");
    build(root, configRoot, generationRoot, *impl);
    tokenizer.impl_ = std::move(impl);
    return Status::ok();
  } catch (const TokenizerError &error) {
    std::string what = error.what();
    bool located = what.rfind(name, 0) == 0 ||
                   what.find(".json") != std::string::npos;
    return Status(StatusCode::InvalidArgument,
                  located ? what : name + ": " + what);
  } catch (const std::exception &error) { // nlohmann type errors, bad_alloc
    return Status(StatusCode::InvalidArgument,
                  name + ": " + error.what());
  }
}

Status Tokenizer::load(const std::string &path, Tokenizer &tokenizer) {
  struct stat info;
  bool folder = ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  std::string dir = folder ? path : path.substr(0, path.rfind('/') + 1);
  if (folder && !dir.empty() && dir.back() != '/')
    dir += '/';
  std::string file = folder ? dir + "tokenizer.json" : path;
  if (!folder) {
    char magic[4] = {};
    std::ifstream in(path, std::ios::binary);
    if (in.read(magic, 4) && GgufFile::hasMagic({magic, 4})) {
      GgufFile gguf;
      if (Status status = GgufFile::open(path, gguf); !status)
        return status;
      return loadGguf(gguf, tokenizer);
    }
  }
  try {
    std::string text = readFile(file, true);
    return parse(text, readFile(dir + "tokenizer_config.json", false),
                 readFile(dir + "generation_config.json", false), file,
                 tokenizer);
  } catch (const TokenizerError &error) {
    return Status(StatusCode::IoError, error.what());
  }
}

Status Tokenizer::encode(std::string_view text, std::vector<int32_t> &ids,
                         bool addSpecialTokens) const {
  if (!impl_)
    return Status(StatusCode::InvalidArgument, "no tokenizer loaded");
  if (size_t bad = utf8::firstInvalidByte(text); bad != std::string::npos)
    return Status(StatusCode::InvalidArgument,
                  "text is not UTF-8 (byte " + std::to_string(bad) + ")");
  const Impl &t = *impl_;
  std::vector<int32_t> out;
  try {
    if (addSpecialTokens)
      out = t.post.before;
    for (const auto &span : t.rawMatcher.split(text)) {
      if (span.token) {
        out.push_back(span.token->id);
        continue;
      }
      bool atStart = span.begin == 0;
      std::string normalized =
          t.normalizer.apply(text.substr(span.begin, span.end - span.begin));
      for (const auto &piece : t.normalizedMatcher.split(normalized)) {
        if (piece.token)
          out.push_back(piece.token->id);
        else
          t.encodeText(std::string_view(normalized)
                           .substr(piece.begin, piece.end - piece.begin),
                       atStart && piece.begin == 0, out);
      }
    }
    if (addSpecialTokens)
      out.insert(out.end(), t.post.after.begin(), t.post.after.end());
  } catch (const TokenizerError &error) {
    return Status(StatusCode::InvalidArgument, error.what());
  } catch (const std::bad_alloc &) {
    return Status(StatusCode::OutOfMemory, "out of memory encoding the text");
  }
  ids = std::move(out);
  return Status::ok();
}

Status Tokenizer::decode(const std::vector<int32_t> &ids, std::string &text,
                         bool skipSpecialTokens) const {
  if (!impl_)
    return Status(StatusCode::InvalidArgument, "no tokenizer loaded");
  for (int32_t id : ids)
    if (id < 0 || id >= vocabularySize())
      return Status(StatusCode::InvalidArgument,
                    "token id " + std::to_string(id) + " is outside [0, " +
                        std::to_string(vocabularySize()) + ")");
  std::string out =
      utf8::lossy(impl_->decodeBytes(ids, 0, ids.size(), skipSpecialTokens));
  text = impl_->cleanUpSpaces ? cleanUpSpaces(std::move(out)) : out;
  return Status::ok();
}

bool Tokenizer::hasChatTemplate() const {
  return impl_ && impl_->chatTemplate;
}

Status Tokenizer::applyChatTemplate(std::string_view messagesJson,
                                    bool addGenerationPrompt,
                                    std::string &prompt,
                                    std::string_view extraJson) const {
  if (!impl_)
    return Status(StatusCode::InvalidArgument, "no tokenizer loaded");
  if (!impl_->chatTemplate)
    return Status(StatusCode::InvalidArgument, impl_->chatTemplateError);
  using ordered = nlohmann::ordered_json;
  ordered messages = ordered::parse(messagesJson, nullptr, false);
  if (!messages.is_array())
    return Status(StatusCode::InvalidArgument,
                  "the messages must be a JSON array");
  ordered variables =
      extraJson.empty() ? ordered::object() : ordered::parse(extraJson, nullptr, false);
  if (!variables.is_object())
    return Status(StatusCode::InvalidArgument,
                  "the template variables must be a JSON object");
  for (const auto &[key, value] : impl_->specialTokens.items())
    if (!variables.contains(key))
      variables[key] = value;
  variables["messages"] = std::move(messages);
  variables["add_generation_prompt"] = addGenerationPrompt;
  try {
    prompt = impl_->chatTemplate->render(variables);
  } catch (const tokenizer::TemplateError &error) {
    return Status(StatusCode::InvalidArgument,
                  std::string("chat template: ") + error.what());
  } catch (const std::exception &error) { // a value of an unexpected type
    return Status(StatusCode::InvalidArgument,
                  std::string("chat template: ") + error.what());
  }
  return Status::ok();
}

int32_t Tokenizer::vocabularySize() const {
  return impl_ ? int32_t(impl_->spelling.size()) : 0;
}

int32_t Tokenizer::tokenId(std::string_view token) const {
  if (!impl_)
    return -1;
  for (const AddedToken &added : impl_->added)
    if (added.content == token)
      return added.id;
  auto it = impl_->model.vocabulary.find(std::string(token));
  return it == impl_->model.vocabulary.end() ? -1 : it->second;
}

const std::string &Tokenizer::tokenText(int32_t id) const {
  static const std::string kNone;
  return impl_ && id >= 0 && id < vocabularySize() ? impl_->spelling[id]
                                                   : kNone;
}

bool Tokenizer::isSpecial(int32_t id) const {
  return impl_ && id >= 0 && id < vocabularySize() && impl_->special[id];
}

int32_t Tokenizer::bosId() const { return impl_ ? impl_->bos : -1; }

const std::vector<int32_t> &Tokenizer::eosIds() const {
  static const std::vector<int32_t> kNone;
  return impl_ ? impl_->eos : kNone;
}

Status TextStream::push(int32_t id, std::string &text) {
  text.clear();
  if (!tokenizer_.impl_)
    return Status(StatusCode::InvalidArgument, "no tokenizer loaded");
  if (id < 0 || id >= tokenizer_.vocabularySize())
    return Status(StatusCode::InvalidArgument,
                  "token id " + std::to_string(id) + " is outside [0, " +
                      std::to_string(tokenizer_.vocabularySize()) + ")");
  const Tokenizer::Impl &t = *tokenizer_.impl_;
  if (skipSpecial_ && t.special[id])
    return Status::ok();
  ids_.push_back(id);
  std::string shown = t.decodeBytes(ids_, prefix_, read_, false);
  std::string now = t.decodeBytes(ids_, prefix_, ids_.size(), false);
  // Hold back an unfinished character, or the U+FFFD byte fallback makes of
  // an unfinished run of bytes.
  static const std::string kReplacement = "\xEF\xBF\xBD";
  if (now.size() <= shown.size() || utf8::incompleteTail(now) ||
      (now.size() >= 3 && now.compare(now.size() - 3, 3, kReplacement) == 0))
    return Status::ok();
  text = utf8::lossy(std::string_view(now).substr(shown.size()));
  prefix_ = read_;
  read_ = ids_.size();
  return Status::ok();
}

std::string TextStream::finish() {
  std::string text;
  if (tokenizer_.impl_ && read_ < ids_.size()) {
    const Tokenizer::Impl &t = *tokenizer_.impl_;
    std::string shown = t.decodeBytes(ids_, prefix_, read_, false);
    std::string now = t.decodeBytes(ids_, prefix_, ids_.size(), false);
    if (now.size() > shown.size())
      text = utf8::lossy(std::string_view(now).substr(shown.size()));
  }
  ids_.clear();
  prefix_ = read_ = 0;
  return text;
}

} // namespace attn::runtime
