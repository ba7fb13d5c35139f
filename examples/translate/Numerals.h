//===- Numerals.h - Chinese numerals, as the translator's input -*- C++ -*-===//
//
// The conventions of tools/numerals.py (README.md here): standard Mandarin
// numerals for 0 to 99,999,999. Parsing checks an input is one of them, so
// the model is only ever asked what it was trained for.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_EXAMPLES_TRANSLATE_NUMERALS_H
#define ATTN_EXAMPLES_TRANSLATE_NUMERALS_H

#include <cstdint>
#include <string>
#include <vector>

namespace translate {

constexpr int64_t kLimit = 100'000'000;

/// Splits UTF-8 text into characters (each a UTF-8 string); false when the
/// text is not valid UTF-8.
bool splitCharacters(const std::string &text, std::vector<std::string> &out);

/// The standard numeral of 0 <= n < kLimit.
std::string toChinese(int64_t n);

/// Reads a numeral. On failure returns false with a message saying why
/// (unknown character, out of range, not the standard way of writing it).
bool parseChinese(const std::string &text, int64_t &value, std::string &error);

} // namespace translate

#endif // ATTN_EXAMPLES_TRANSLATE_NUMERALS_H
