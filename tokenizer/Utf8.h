//===- Utf8.h - UTF-8 checks and GPT-2's byte-to-character map ---*- C++ -*-===//
//
// Text enters the tokenizer as UTF-8 and leaves it as UTF-8. Byte-level BPE
// vocabularies (GPT-2, Llama 3, Qwen) spell every byte as one printable
// character so that any byte string is a string of vocabulary symbols: bytes
// that are printable Latin-1 stand for themselves, the other 68 are shifted
// to U+0100 upwards, in byte order.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_TOKENIZER_UTF8_H
#define ATTN_RUNTIME_TOKENIZER_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attn::runtime::utf8 {

/// Byte offset of the first byte that is not part of valid UTF-8, or npos.
size_t firstInvalidByte(std::string_view text);

/// Length of the character starting at text[at] (1 for a lone bad byte).
size_t characterLength(std::string_view text, size_t at);

/// How many bytes at the end of `bytes` begin a character they do not
/// finish: what a stream must hold back until the next token comes.
size_t incompleteTail(std::string_view bytes);

/// `bytes` as valid UTF-8: each maximal ill-formed subsequence becomes one
/// U+FFFD (what Rust's String::from_utf8_lossy, and so Hugging Face's
/// decoders, do).
std::string lossy(std::string_view bytes);

/// Appends code point `c` as UTF-8.
void append(std::string &out, char32_t c);

/// The byte-level alphabet: the character that spells byte `b`, and back
/// (-1: the character spells no byte).
char32_t byteCharacter(uint8_t b);
int characterByte(char32_t c);

/// The next code point of valid UTF-8 `text` at `at`, advancing `at`.
char32_t next(std::string_view text, size_t &at);

} // namespace attn::runtime::utf8

#endif // ATTN_RUNTIME_TOKENIZER_UTF8_H
