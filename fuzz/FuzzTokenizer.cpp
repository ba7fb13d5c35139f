//===- FuzzTokenizer.cpp - tokenizer.json and text to encode --------------===//
//
// One input: a tokenizer.json, a NUL byte, then text. The file is parsed as
// Tokenizer::parse does for a model folder; when it loads, the text is
// encoded, its ids decoded and streamed back, and the text's bytes, read as
// ids, decoded too. Files that lie (ids out of range, patterns that do not
// compile, merges of unknown tokens) and any text must be errors or results,
// never a crash or a read out of bounds. Seeds: fuzz/corpus/tokenizer/.
//
//===----------------------------------------------------------------------===//

#include "attn/runtime/Tokenizer.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace attn::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  size_t nul = input.find('\0');
  if (nul == std::string_view::npos)
    return 0;
  Tokenizer tokenizer;
  if (!Tokenizer::parse(input.substr(0, nul), "", "", "fuzz.json", tokenizer))
    return 0;
  std::string_view text = input.substr(nul + 1);
  std::vector<int32_t> ids;
  std::string decoded, piece;
  if (tokenizer.encode(text, ids)) {
    (void)tokenizer.decode(ids, decoded);
    TextStream stream(tokenizer, /*skipSpecialTokens=*/false);
    for (int32_t id : ids)
      (void)stream.push(id, piece);
    decoded = stream.finish();
  }
  std::vector<int32_t> raw(text.size() / 4);
  if (!raw.empty())
    std::memcpy(raw.data(), text.data(), raw.size() * 4);
  for (int32_t &id : raw) // mostly in range, sometimes not
    id = id % (tokenizer.vocabularySize() + 2);
  (void)tokenizer.decode(raw, decoded, /*skipSpecialTokens=*/true);
  return 0;
}
