//===- TokenizerParts.h - the stages of a tokenizer.json --------*- C++ -*-===//
//
// A Hugging Face tokenizer.json describes a pipeline; each stage here is one
// of its objects, read from that object and doing what the `tokenizers`
// library does with it:
//
//   text -> added tokens split out -> Normalizer -> PreTokenizer (words)
//        -> BpeModel (ids per word) -> post-processor (BOS, EOS) -> ids
//   ids  -> token strings -> TokenDecoder -> text
//
// Reading a stage throws TokenizerError naming the JSON path of what it
// does not accept; Tokenizer::load turns that into a Status, so nothing
// throws out of the runtime. A stage or option attnc does not implement is
// refused by name, never skipped.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_TOKENIZER_PARTS_H
#define ATTN_RUNTIME_TOKENIZER_PARTS_H

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attn::runtime::tokenizer {

using json = nlohmann::json;

/// Token ids index dense tables (id -> spelling): ids up to 2^24 - 1, far
/// above any published vocabulary (~256K), keep a hostile file from asking
/// for gigabytes.
constexpr int64_t kTokenIdLimit = int64_t(1) << 24;

/// What a tokenizer file holds that attnc cannot use; `what()` starts with
/// the JSON path ("pre_tokenizer.pretokenizers[1].type: ...").
struct TokenizerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Checked access to one JSON object: `at` is its path, for messages.
struct JsonObject {
  const json &value;
  std::string at;

  JsonObject(const json &value, std::string at);
  bool has(const char *key) const; ///< present and not null
  JsonObject object(const char *key) const;
  std::vector<JsonObject> objects(const char *key) const; ///< an array
  std::string string(const char *key) const;
  std::string string(const char *key, const std::string &otherwise) const;
  bool boolean(const char *key, bool otherwise) const;
  int64_t integer(const char *key) const;
  [[noreturn]] void fail(const std::string &key, const std::string &why) const;
  /// Refuses a stage `type` this object names that is not in `known`.
  [[noreturn]] void unknownType(const std::string &type,
                                const char *known) const;
};

/// A compiled regular expression (PCRE2, UTF-8 with Unicode properties).
class Regex {
public:
  Regex(const std::string &pattern, bool literal, const std::string &at);
  /// Byte ranges [begin, end) of the non-overlapping matches, in order;
  /// throws TokenizerError when PCRE2 gives up (its match limits).
  std::vector<std::pair<size_t, size_t>> matches(std::string_view text) const;

private:
  std::shared_ptr<void> code_; // pcre2_code_8
};

/// A Replace stage's "pattern": {"String": ...} or {"Regex": ...}.
std::shared_ptr<Regex> readPattern(const JsonObject &object);
/// `text` with every match of `pattern` replaced by `content`.
std::string replaceAll(std::string_view text, const Regex &pattern,
                       std::string_view content);

/// The "normalizer": rewrites each span of text between added tokens.
class Normalizer {
public:
  static Normalizer fromJson(const json &value, const std::string &at);
  std::string apply(std::string_view text) const;

private:
  enum class Kind { Prepend, Replace, Nfc, Nfkc, Nfd, Nfkd, Lowercase };
  struct Step {
    Kind kind;
    std::string content;           // Prepend, Replace
    std::shared_ptr<Regex> pattern; // Replace
  };
  void read(const JsonObject &object);
  std::vector<Step> steps_;
};

/// The "pre_tokenizer": cuts a normalized span into words, each of which
/// the model encodes alone.
class PreTokenizer {
public:
  static PreTokenizer fromJson(const json &value, const std::string &at);
  /// `atStart`: the span begins the text (Metaspace's "first" scheme).
  std::vector<std::string> split(std::string_view text, bool atStart) const;

private:
  enum class Kind { Split, ByteLevel, Metaspace };
  enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext,
                        Contiguous };
  struct Step {
    Kind kind;
    std::shared_ptr<Regex> regex;   // Split; ByteLevel with use_regex
    Behavior behavior = Behavior::Isolated;
    bool invert = false;            // Split: the gaps are the delimiters
    bool addPrefixSpace = false;    // ByteLevel
    std::string replacement;        // Metaspace
    enum { Always, First, Never } prepend = Always; // Metaspace
    bool splitWords = true;         // Metaspace
  };
  struct Piece {
    std::string text;
    bool atStart; // begins the whole text
  };
  void read(const JsonObject &object);
  static void cut(const Piece &piece, const Step &step,
                  std::vector<Piece> &out);
  std::vector<Step> steps_;
};

/// The "model" of type BPE: vocabulary, ranked merges, unknown and byte
/// fallback handling.
class BpeModel {
public:
  static BpeModel fromJson(const json &value, const std::string &at);
  /// Appends the ids of one pre-tokenized word.
  void encode(std::string_view word, std::vector<int32_t> &ids) const;

  std::unordered_map<std::string, int32_t> vocabulary;

private:
  void symbolsOf(std::string_view word, std::vector<int32_t> &symbols) const;
  struct Merge {
    int32_t rank, merged;
  };
  static uint64_t pairKey(int32_t left, int32_t right) {
    return uint64_t(uint32_t(left)) << 32 | uint32_t(right);
  }
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t unknown_ = -1;
  bool fuseUnknown_ = false, byteFallback_ = false, ignoreMerges_ = false;
  std::string prefix_, suffix_; // continuing_subword_prefix, end_of_word_suffix
  std::array<int32_t, 256> byteTokens_; // "<0x41>" ids, -1 where absent
};

/// The "decoder": token strings back to text.
class TokenDecoder {
public:
  static TokenDecoder fromJson(const json &value, const std::string &at);
  /// Raw bytes, possibly ending inside a character (TextStream holds those
  /// back); Tokenizer::decode makes them valid UTF-8.
  std::string decode(std::vector<std::string> tokens) const;

private:
  enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace };
  struct Step {
    Kind kind;
    std::string content;            // Replace, Strip, Metaspace
    std::shared_ptr<Regex> pattern; // Replace
    int start = 0, stop = 0;      // Strip
    bool stripFirstSpace = true;  // Metaspace
  };
  void read(const JsonObject &object);
  std::vector<Step> steps_;
  bool any_ = false; // no decoder: tokens joined by spaces
};

} // namespace attn::runtime::tokenizer

#endif // ATTN_RUNTIME_TOKENIZER_PARTS_H
