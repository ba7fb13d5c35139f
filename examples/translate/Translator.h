//===- Translator.h - Chinese numerals to English words ---------*- C++ -*-===//
//
// The application around the attnc-generated model: vocabularies, the
// encoder-decoder flow (encode once, cross-attention K/V stored once per
// input, then greedy decoding over the KV cache), batches of inputs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_EXAMPLES_TRANSLATE_TRANSLATOR_H
#define ATTN_EXAMPLES_TRANSLATE_TRANSLATOR_H

#include "attn/runtime/Generator.h"
#include "attn/runtime/Model.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace translate {

using attn::runtime::Status;

class Translator {
public:
  /// Loads `dir`/vocab.json and `dir`/translator.safetensors for the
  /// generated model (its plan and kernel table).
  static Status load(const std::string &dir, const std::string &planJson,
                     const attn::runtime::KernelEntry *table, size_t tableSize,
                     std::unique_ptr<Translator> &translator);

  /// Source token ids of a numeral (after parseChinese accepted it).
  Status sourceTokens(const std::string &numeral,
                      std::vector<int32_t> &tokens) const;

  /// Called with (input index, word) as each word is decoded.
  using WordCallback = std::function<void(int, const std::string &)>;

  /// Greedy decoding of a batch of source token lists, all in one batch of
  /// decoder steps over the KV cache; `outputs[i]` gets the target token
  /// ids (without <bos>/<eos>).
  /// With `attention`, `(*attention)[i][k]` gets the last cross-attention
  /// layer's weights over input i's characters when word k was decoded.
  Status
  translate(const std::vector<std::vector<int32_t>> &sources,
            std::vector<std::vector<int32_t>> &outputs,
            const WordCallback &onWord = nullptr,
            std::vector<std::vector<std::vector<float>>> *attention = nullptr);

  /// The same without any KV cache: the whole prefix through the decoder
  /// every step (the reference the cache must reproduce).
  Status translateWithoutCache(const std::vector<int32_t> &source,
                               std::vector<int32_t> &output);

  std::string words(const std::vector<int32_t> &tokens) const;
  const std::string &word(int32_t token) const { return target_[token]; }
  int maxTargetLength() const { return maxTarget_; }

private:
  std::unique_ptr<attn::runtime::Model> model_;
  std::vector<std::string> source_, target_;
  int32_t bos_ = 1, eos_ = 2;
  int maxTarget_ = 24;
  /// The buffers of translateWithoutCache's passes (made with the model).
  std::unique_ptr<attn::runtime::ExecutionContext> context_;
  /// Kept between calls (its caches and scratch buffers with it); replaced
  /// by a larger one when a batch does not fit.
  std::unique_ptr<attn::runtime::Generator> generator_;
};

} // namespace translate

#endif // ATTN_EXAMPLES_TRANSLATE_TRANSLATOR_H
