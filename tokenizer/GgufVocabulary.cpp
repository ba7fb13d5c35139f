//===- GgufVocabulary.cpp - a GGUF file's tokenizer as tokenizer.json -----===//
//
// A GGUF file carries its tokenizer in metadata (ggml's docs/gguf.md):
//   tokenizer.ggml.model        "llama" (SentencePiece: tokens, scores) or
//                               "gpt2" (byte-level BPE: tokens, merges);
//   tokenizer.ggml.tokens       [string], the vocabulary by id;
//   tokenizer.ggml.scores       [float32], llama: a merge's priority is the
//                               score of the token it makes;
//   tokenizer.ggml.token_type   [int32]: 1 normal, 2 unknown, 3 control,
//                               4 user-defined, 5 unused, 6 byte;
//   tokenizer.ggml.merges       [string] "a b", gpt2, in rank order;
//   tokenizer.ggml.pre          gpt2: which pre-tokenizer (a name llama.cpp
//                               gives each model family's split pattern);
//   tokenizer.ggml.{bos,eos,eot,unknown,padding}_token_id, add_bos_token,
//   add_eos_token, add_space_prefix, and tokenizer.chat_template.
// Tokenizer::load reads it as the tokenizer.json, tokenizer_config.json and
// generation_config.json it stands for, through the same code as a model
// folder's (so what the files' tokenizers do is stated once): the
// SentencePiece vocabulary as BPE with byte fallback, its merges every
// split of a token into two tokens, ordered by the made token's score (as
// transformers converts SentencePiece models); the gpt2 one as byte-level
// BPE with its family's split pattern. A key or value attnc cannot read is
// an error naming it.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Gguf.h"
#include "attn/runtime/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace attn::runtime {

namespace {

using json = nlohmann::json;

/// llama.cpp's names of byte-level BPE split patterns (tokenizer.ggml.pre)
/// and the patterns, as the models' tokenizer.json files state them.
struct PreTokenizer {
  const char *name;
  const char *pattern; // null: GPT-2's own (ByteLevel's use_regex)
  bool nfc;            // the family's tokenizer.json normalizes to NFC
  bool ignoreMerges;   // a word in the vocabulary is one token (Llama 3)
};
constexpr const char *kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char *kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char *kGpt4oPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
/// ("default", llama.cpp's fallback, splits punctuation and digits by
/// patterns of its own that no tokenizer.json states: not read.)
constexpr PreTokenizer kPreTokenizers[] = {
    {"gpt-2", nullptr, false, false},
    {"llama-bpe", kLlama3Pattern, false, true},
    {"qwen2", kQwen2Pattern, true, false},
    {"gpt-4o", kGpt4oPattern, false, false},
};

enum TokenType { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4,
                 Unused = 5, Byte = 6 };

struct Failure {
  std::string message;
};

/// The metadata the tokenizer reads, with typed access that throws a
/// Failure naming the key.
struct Metadata {
  const GgufFile &file;
  void check(const Status &status) const {
    if (!status)
      throw Failure{status.message()};
  }
  bool has(const std::string &key) const { return file.find(key) != nullptr; }
  std::string string(const std::string &key) const {
    std::string value;
    check(file.getString(key, value));
    return value;
  }
  const std::vector<GgufValue> &array(const std::string &key,
                                      GgufValueType element) const {
    const std::vector<GgufValue> *items = nullptr;
    check(file.getArray(key, element, items));
    return *items;
  }
  std::optional<int64_t> id(const std::string &key, size_t vocabulary) const {
    if (!has(key))
      return std::nullopt;
    int64_t value;
    check(file.getInteger(key, value));
    if (value < 0 || size_t(value) >= vocabulary)
      throw Failure{file.path() + ": metadata '" + key + "' is " +
                    std::to_string(value) + ", outside the vocabulary of " +
                    std::to_string(vocabulary)};
    return value;
  }
  std::optional<bool> flag(const std::string &key) const {
    if (!has(key))
      return std::nullopt;
    bool value;
    check(file.getBool(key, value));
    return value;
  }
};

/// A SentencePiece vocabulary's merges: every split of each token into two
/// tokens, tokens by descending score (stable: by id among equal scores),
/// a token's splits by the ids of their halves.
json sentencePieceMerges(const std::vector<std::string> &tokens,
                         const std::vector<float> &scores) {
  std::unordered_map<std::string_view, int32_t> id;
  for (size_t i = 0; i < tokens.size(); i++)
    id.emplace(tokens[i], int32_t(i));
  std::vector<int32_t> order(tokens.size());
  for (size_t i = 0; i < order.size(); i++)
    order[i] = int32_t(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return scores[size_t(a)] > scores[size_t(b)];
  });
  json merges = json::array();
  std::vector<std::pair<int32_t, int32_t>> splits;
  for (int32_t token : order) {
    const std::string_view text = tokens[size_t(token)];
    splits.clear();
    for (size_t at = 1; at < text.size(); at++) {
      auto left = id.find(text.substr(0, at)), right = id.find(text.substr(at));
      if (left != id.end() && right != id.end())
        splits.emplace_back(left->second, right->second);
    }
    std::sort(splits.begin(), splits.end());
    for (auto [left, right] : splits)
      merges.push_back(
          json::array({tokens[size_t(left)], tokens[size_t(right)]}));
  }
  return merges;
}

struct Files {
  json tokenizer, config, generation;
};

Files describe(const GgufFile &file) {
  const Metadata m{file};
  const std::string model = m.string("tokenizer.ggml.model");
  if (model != "llama" && model != "gpt2")
    throw Failure{file.path() + ": tokenizer.ggml.model '" + model +
                  "' is not read (llama or gpt2)"};
  const bool sentencePiece = model == "llama";
  std::vector<std::string> tokens;
  for (const GgufValue &token :
       m.array("tokenizer.ggml.tokens", GgufValueType::String))
    tokens.push_back(token.string);
  const size_t n = tokens.size();
  if (n == 0)
    throw Failure{file.path() + ": tokenizer.ggml.tokens is empty"};
  std::vector<int> types(n, Normal);
  if (m.has("tokenizer.ggml.token_type")) {
    const auto &items =
        m.array("tokenizer.ggml.token_type", GgufValueType::I32);
    if (items.size() != n)
      throw Failure{file.path() + ": tokenizer.ggml.token_type has " +
                    std::to_string(items.size()) + " entries for " +
                    std::to_string(n) + " tokens"};
    for (size_t i = 0; i < n; i++) {
      if (items[i].integer < Normal || items[i].integer > Byte)
        throw Failure{file.path() + ": tokenizer.ggml.token_type[" +
                      std::to_string(i) + "] is " +
                      std::to_string(items[i].integer) + " (1 to 6)"};
      types[i] = int(items[i].integer);
    }
  }

  json vocab = json::object(), added = json::array();
  for (size_t i = 0; i < n; i++) {
    if (!vocab.contains(tokens[i])) // a repeated spelling keeps its first id
      vocab[tokens[i]] = i;
    if (types[i] == Control || types[i] == UserDefined)
      added.push_back({{"id", i},
                       {"content", tokens[i]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", types[i] == UserDefined},
                       {"special", types[i] == Control}});
  }
  Files out;
  json &t = out.tokenizer;
  t["version"] = "1.0";
  t["added_tokens"] = added;
  json bpe = {{"type", "BPE"}, {"vocab", vocab}, {"fuse_unk", sentencePiece},
              {"byte_fallback", sentencePiece}};
  const std::optional<int64_t> unknown =
      m.id("tokenizer.ggml.unknown_token_id", n);
  const std::optional<bool> spacePrefix =
      m.flag("tokenizer.ggml.add_space_prefix");
  if (sentencePiece) {
    std::vector<float> scores(n, 0.0f);
    if (m.has("tokenizer.ggml.scores")) {
      const auto &items = m.array("tokenizer.ggml.scores", GgufValueType::F32);
      if (items.size() != n)
        throw Failure{file.path() + ": tokenizer.ggml.scores has " +
                      std::to_string(items.size()) + " entries for " +
                      std::to_string(n) + " tokens"};
      for (size_t i = 0; i < n; i++)
        scores[i] = float(items[i].real);
    }
    bpe["merges"] = sentencePieceMerges(tokens, scores);
    if (unknown)
      bpe["unk_token"] = tokens[size_t(*unknown)];
    // llama.cpp's SentencePiece models: a space before the text and after
    // each special token (add_space_prefix, default true), spaces as "▁".
    json replace = {{"type", "Replace"},
                    {"pattern", {{"String", " "}}},
                    {"content", "\u2581"}};
    const bool prefix = spacePrefix.value_or(true);
    t["normalizer"] =
        prefix ? json{{"type", "Sequence"},
                      {"normalizers",
                       json::array({{{"type", "Prepend"}, {"prepend", "\u2581"}},
                                    replace})}}
               : replace;
    t["pre_tokenizer"] = nullptr;
    json decoders = json::array(
        {{{"type", "Replace"},
          {"pattern", {{"String", "\u2581"}}},
          {"content", " "}},
         {{"type", "ByteFallback"}},
         {{"type", "Fuse"}}});
    if (prefix)
      decoders.push_back(
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    t["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
  } else {
    if (spacePrefix.value_or(false))
      throw Failure{file.path() + ": tokenizer.ggml.add_space_prefix of a "
                                  "gpt2 vocabulary is not read"};
    json merges = json::array();
    for (const GgufValue &merge :
         m.array("tokenizer.ggml.merges", GgufValueType::String))
      merges.push_back(merge.string);
    bpe["merges"] = merges;
    const std::string pre = m.has("tokenizer.ggml.pre")
                                ? m.string("tokenizer.ggml.pre")
                                : std::string("default");
    // (Absent, llama.cpp reads "default" too.)
    const PreTokenizer *found = nullptr;
    std::string known;
    for (const PreTokenizer &candidate : kPreTokenizers) {
      known += std::string(known.empty() ? "" : ", ") + candidate.name;
      if (pre == candidate.name)
        found = &candidate;
    }
    if (!found)
      throw Failure{file.path() + ": tokenizer.ggml.pre '" + pre +
                    "' is not read (attnc reads " + known + ")"};
    bpe["ignore_merges"] = found->ignoreMerges;
    json byteLevel = {{"type", "ByteLevel"},
                      {"add_prefix_space", false},
                      {"trim_offsets", false},
                      {"use_regex", found->pattern == nullptr}};
    t["normalizer"] = found->nfc ? json{{"type", "NFC"}} : json(nullptr);
    t["pre_tokenizer"] =
        found->pattern
            ? json{{"type", "Sequence"},
                   {"pretokenizers",
                    json::array({{{"type", "Split"},
                                  {"pattern", {{"Regex", found->pattern}}},
                                  {"behavior", "Isolated"},
                                  {"invert", false}},
                                 byteLevel})}}
            : byteLevel;
    t["decoder"] = byteLevel;
  }
  t["model"] = bpe;

  // Special tokens: BOS before the text and EOS after it where the file
  // asks (a SentencePiece vocabulary adds BOS unless it says not to).
  const std::optional<int64_t> bos = m.id("tokenizer.ggml.bos_token_id", n),
                               eos = m.id("tokenizer.ggml.eos_token_id", n),
                               eot = m.id("tokenizer.ggml.eot_token_id", n);
  const bool addBos =
      m.flag("tokenizer.ggml.add_bos_token").value_or(sentencePiece) && bos;
  const bool addEos =
      m.flag("tokenizer.ggml.add_eos_token").value_or(false) && eos;
  if (addBos || addEos) {
    json single = json::array(), special = json::object();
    auto add = [&](int64_t id) {
      const std::string &text = tokens[size_t(id)];
      single.push_back({{"SpecialToken", {{"id", text}, {"type_id", 0}}}});
      special[text] = {{"id", text}, {"ids", {id}}, {"tokens", {text}}};
    };
    if (addBos)
      add(*bos);
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (addEos)
      add(*eos);
    t["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", single},
                           {"pair", single},
                           {"special_tokens", special}};
  } else {
    t["post_processor"] = nullptr;
  }

  json &config = out.config;
  config["clean_up_tokenization_spaces"] = false;
  if (bos)
    config["bos_token"] = tokens[size_t(*bos)];
  if (eos)
    config["eos_token"] = tokens[size_t(*eos)];
  if (unknown)
    config["unk_token"] = tokens[size_t(*unknown)];
  if (const std::optional<int64_t> pad =
          m.id("tokenizer.ggml.padding_token_id", n))
    config["pad_token"] = tokens[size_t(*pad)];
  if (m.has("tokenizer.chat_template"))
    config["chat_template"] = m.string("tokenizer.chat_template");
  // Generation ends at EOS, and at end-of-turn where the file names one.
  json &generation = out.generation;
  if (bos)
    generation["bos_token_id"] = *bos;
  json ends = json::array();
  if (eos)
    ends.push_back(*eos);
  if (eot && eot != eos)
    ends.push_back(*eot);
  if (!ends.empty())
    generation["eos_token_id"] = ends;
  return out;
}

} // namespace

Status Tokenizer::loadGguf(const GgufFile &file, Tokenizer &tokenizer) {
  std::string tokenizerJson, config, generation;
  try {
    Files files = describe(file);
    tokenizerJson = files.tokenizer.dump();
    config = files.config.dump();
    generation = files.generation.dump();
  } catch (const Failure &failure) {
    return Status(StatusCode::InvalidArgument, failure.message);
  } catch (const json::exception &) { // dump(): a string not UTF-8
    return Status(StatusCode::InvalidArgument,
                  file.path() + ": a token or the chat template is not UTF-8");
  }
  return parse(tokenizerJson, config, generation,
               file.path() + " (its tokenizer)", tokenizer);
}

} // namespace attn::runtime
