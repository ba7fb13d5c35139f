//===- Tokenizer.h - Hugging Face tokenizer.json, text to ids and back -*- C++ -*-===//
//
// Reads a model folder's tokenizer.json (with tokenizer_config.json and
// generation_config.json beside it when present) and encodes and decodes as
// the `tokenizers` library does: byte-level BPE (GPT-2, Llama 3, Qwen) and
// SentencePiece-style BPE with byte fallback (Llama 2, Mistral, TinyLlama).
// Pre-tokenizer patterns run on PCRE2, Unicode normalization on utf8proc. A
// stage or option the file uses that attnc does not implement is an error
// naming its JSON path, never skipped; docs/tokenizers.md lists what is read.
//
// A loaded Tokenizer is immutable: copies share it, and any number of threads
// may encode and decode with it at once.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_TOKENIZER_H
#define ATTN_RUNTIME_TOKENIZER_H

#include "attn/runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn::runtime {

class GgufFile;

class Tokenizer {
public:
  /// `path`: a model folder, or its tokenizer.json, or a GGUF file
  /// (loadGguf). On failure `tokenizer` is unchanged and the status names
  /// the file, and the line and column or the JSON path of what is wrong.
  static Status load(const std::string &path, Tokenizer &tokenizer);
  /// The tokenizer a GGUF file's metadata holds (tokenizer.ggml.*,
  /// tokenizer.chat_template), read as the tokenizer.json,
  /// tokenizer_config.json and generation_config.json it stands for
  /// (GgufVocabulary.cpp); a key attnc cannot read is an error naming it.
  static Status loadGguf(const GgufFile &file, Tokenizer &tokenizer);
  /// The same from the files' text (`config` and `generationConfig` may be
  /// empty); `name` stands for the file in messages.
  static Status parse(std::string_view tokenizerJson, std::string_view config,
                      std::string_view generationConfig,
                      const std::string &name, Tokenizer &tokenizer);

  bool loaded() const { return impl_ != nullptr; }

  /// `text` must be UTF-8. `addSpecialTokens`: the post-processor's BOS/EOS.
  Status encode(std::string_view text, std::vector<int32_t> &ids,
                bool addSpecialTokens = true) const;
  /// Text of `ids` (each in [0, vocabularySize())), valid UTF-8.
  Status decode(const std::vector<int32_t> &ids, std::string &text,
                bool skipSpecialTokens = false) const;

  /// Whether tokenizer_config.json has a chat template attnc can render.
  bool hasChatTemplate() const;
  /// The prompt text of a conversation, as transformers'
  /// apply_chat_template(tokenize=False) makes it: the model's Jinja chat
  /// template (tokenizer/ChatTemplate.h says which Jinja) over
  /// `messagesJson`, a JSON array of {"role", "content", ...}, with
  /// add_generation_prompt, the config's bos/eos/unk/pad tokens and the
  /// variables of `extraJson` (a JSON object: "tools", "enable_thinking",
  /// ...). Encode the result without special tokens: the template places
  /// them. Errors: no template, one attnc cannot read (its line named), the
  /// template's own raise_exception(), malformed JSON.
  Status applyChatTemplate(std::string_view messagesJson,
                           bool addGenerationPrompt, std::string &prompt,
                           std::string_view extraJson = "") const;

  /// One past the largest id of the vocabulary and the added tokens.
  int32_t vocabularySize() const;
  /// The id of a token spelled `token` (as in the vocabulary), or -1.
  int32_t tokenId(std::string_view token) const;
  /// The vocabulary's spelling of `id` ("" for an id no token has).
  const std::string &tokenText(int32_t id) const;
  /// An added token marked "special" (BOS, EOS, chat markers...).
  bool isSpecial(int32_t id) const;
  /// From generation_config.json, else tokenizer_config.json; -1 / empty
  /// when neither names one.
  int32_t bosId() const;
  const std::vector<int32_t> &eosIds() const;

  struct Impl;

private:
  friend class TextStream;
  std::shared_ptr<const Impl> impl_;
};

/// Turns ids into text as they are generated. It never splits a character:
/// bytes of an unfinished character (a byte-level token, or byte-fallback
/// tokens, carry part of one) are held back until the token that finishes it.
/// What it emits, concatenated, is what Tokenizer::decode gives for all ids.
class TextStream {
public:
  explicit TextStream(const Tokenizer &tokenizer,
                      bool skipSpecialTokens = true)
      : tokenizer_(tokenizer), skipSpecial_(skipSpecialTokens) {}

  /// Adds one id; `text` receives the text it completes (often "").
  Status push(int32_t id, std::string &text);
  /// Whatever is still held back, as valid UTF-8; the stream starts over.
  std::string finish();

private:
  Tokenizer tokenizer_;
  bool skipSpecial_;
  std::vector<int32_t> ids_;
  // As text-generation-inference: ids_[prefix_, read_) were decoded and
  // shown; a new id's text is decode(ids_[prefix_..]) minus that.
  size_t prefix_ = 0, read_ = 0;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_TOKENIZER_H
