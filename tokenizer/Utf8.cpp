//===- Utf8.cpp - UTF-8 checks and GPT-2's byte-to-character map ----------===//

#include "Utf8.h"

#include <array>

namespace attn::runtime::utf8 {

namespace {

/// Length of the well-formed sequence at text[at] (Unicode table 3-7), or 0.
size_t wellFormedLength(std::string_view text, size_t at) {
  auto byte = [&](size_t i) -> int {
    return at + i < text.size() ? uint8_t(text[at + i]) : -1;
  };
  auto in = [](int b, int lo, int hi) { return b >= lo && b <= hi; };
  int b0 = byte(0);
  if (b0 < 0x80)
    return 1;
  if (in(b0, 0xC2, 0xDF))
    return in(byte(1), 0x80, 0xBF) ? 2 : 0;
  if (in(b0, 0xE0, 0xEF)) {
    int lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in(b0, 0xF0, 0xF4)) {
    int lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) &&
                   in(byte(3), 0x80, 0xBF)
               ? 4
               : 0;
  }
  return 0;
}

/// Bytes a sequence led by `b0` has when well formed (1: not a lead).
size_t leadLength(int b0) {
  return b0 >= 0xC2 && b0 <= 0xDF   ? 2
         : b0 >= 0xE0 && b0 <= 0xEF ? 3
         : b0 >= 0xF0 && b0 <= 0xF4 ? 4
                                    : 1;
}

/// Bytes of the longest prefix of a well-formed sequence at text[at] (at
/// least 1): the "maximal subpart" one U+FFFD replaces.
size_t maximalSubpart(std::string_view text, size_t at) {
  auto in = [](int b, int lo, int hi) { return b >= lo && b <= hi; };
  int b0 = uint8_t(text[at]);
  size_t expected = leadLength(b0);
  size_t n = 1;
  for (; n < expected && at + n < text.size(); n++) {
    int b = uint8_t(text[at + n]);
    int lo = 0x80, hi = 0xBF;
    if (n == 1) {
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    }
    if (!in(b, lo, hi))
      break;
  }
  return n;
}

struct ByteAlphabet {
  std::array<char32_t, 256> character{};
  std::array<int16_t, 324> byte{}; // every character is below U+0144
  ByteAlphabet() {
    byte.fill(-1);
    char32_t shifted = 256;
    for (int b = 0; b < 256; b++) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      character[b] = printable ? char32_t(b) : shifted++;
      byte[character[b]] = int16_t(b);
    }
  }
};

const ByteAlphabet &alphabet() {
  static const ByteAlphabet table;
  return table;
}

} // namespace

size_t firstInvalidByte(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    size_t n = wellFormedLength(text, at);
    if (n == 0)
      return at;
    at += n;
  }
  return std::string_view::npos;
}

size_t characterLength(std::string_view text, size_t at) {
  size_t n = wellFormedLength(text, at);
  return n ? n : 1;
}

size_t incompleteTail(std::string_view bytes) {
  // A character is at most 4 bytes: look at the last 3 for its start.
  for (size_t back = 1; back <= 3 && back <= bytes.size(); back++) {
    size_t at = bytes.size() - back;
    int b = uint8_t(bytes[at]);
    if ((b & 0xC0) == 0x80)
      continue; // a continuation byte: the start is further back
    if (b < 0x80)
      return 0;
    // A lead byte: incomplete if what follows it is the start of a
    // well-formed sequence that needs more bytes.
    return leadLength(b) > back && maximalSubpart(bytes, at) == back ? back
                                                                      : 0;
  }
  return 0;
}

std::string lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    size_t n = wellFormedLength(bytes, at);
    if (n) {
      out.append(bytes.substr(at, n));
      at += n;
    } else {
      out += "\xEF\xBF\xBD";
      at += maximalSubpart(bytes, at);
    }
  }
  return out;
}

void append(std::string &out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

char32_t byteCharacter(uint8_t b) { return alphabet().character[b]; }

int characterByte(char32_t c) {
  return c < alphabet().byte.size() ? alphabet().byte[c] : -1;
}

char32_t next(std::string_view text, size_t &at) {
  size_t n = characterLength(text, at);
  uint8_t b0 = uint8_t(text[at]);
  char32_t c = n == 1 ? b0 : n == 2 ? b0 & 0x1F : n == 3 ? b0 & 0x0F : b0 & 0x07;
  for (size_t i = 1; i < n; i++)
    c = (c << 6) | (uint8_t(text[at + i]) & 0x3F);
  at += n;
  return c;
}

} // namespace attn::runtime::utf8
