//===- Numerals.cpp - Chinese numerals, as the translator's input ---------===//

#include "Numerals.h"

namespace translate {

namespace {
const char *const kDigits[] = {"零", "一", "二", "三", "四",
                               "五", "六", "七", "八", "九"};
const char *const kUnits[] = {"", "十", "百", "千"};

int digitValue(const std::string &c) {
  for (int i = 0; i < 10; i++)
    if (c == kDigits[i])
      return i;
  return -1;
}
} // namespace

bool splitCharacters(const std::string &text, std::vector<std::string> &out) {
  out.clear();
  for (size_t i = 0; i < text.size();) {
    unsigned char lead = text[i];
    size_t length = lead < 0x80           ? 1
                    : (lead >> 5) == 0x6  ? 2
                    : (lead >> 4) == 0xE  ? 3
                    : (lead >> 3) == 0x1E ? 4
                                          : 0;
    if (length == 0 || i + length > text.size())
      return false;
    for (size_t k = 1; k < length; k++)
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2)
        return false;
    out.push_back(text.substr(i, length));
    i += length;
  }
  return true;
}

std::string toChinese(int64_t n) {
  if (n == 0)
    return kDigits[0];
  std::string out;
  bool pendingZero = false;
  for (int place = 7; place >= 0; place--) {
    int64_t power = 1;
    for (int p = 0; p < place; p++)
      power *= 10;
    int digit = int(n / power % 10);
    if (digit == 0) {
      pendingZero = pendingZero || !out.empty();
    } else {
      if (pendingZero)
        out += kDigits[0];
      pendingZero = false;
      const char *unit = kUnits[place % 4];
      // 十五, not 一十五, but only at the very start: 一百一十.
      if (!(digit == 1 && place % 4 == 1 && out.empty()))
        out += kDigits[digit];
      out += unit;
    }
    if (place == 4 && n >= 10'000) {
      out += "万";
      pendingZero = false; // the 万 group's trailing zeros are silent
    }
  }
  return out;
}

bool parseChinese(const std::string &text, int64_t &value, std::string &error) {
  std::vector<std::string> chars;
  if (!splitCharacters(text, chars) || chars.empty()) {
    error = chars.empty() && !text.empty() ? "not valid UTF-8" : "empty input";
    return false;
  }
  int64_t total = 0, section = 0, digit = 0;
  for (const std::string &c : chars) {
    if (c == "亿") {
      error = "'" + text +
              "' is out of range: this model translates 0 to "
              "99,999,999 (九千九百九十九万九千九百九十九)";
      return false;
    }
    int d = digitValue(c);
    if (d >= 0) {
      digit = d;
    } else if (c == "十" || c == "百" || c == "千") {
      int64_t unit = c == "十" ? 10 : c == "百" ? 100 : 1000;
      section += (digit == 0 ? 1 : digit) * unit;
      digit = 0;
    } else if (c == "万") {
      total += (section + digit) * 10'000;
      section = digit = 0;
    } else {
      error = "'" + c + "' is not a Chinese numeral character (expected " +
              "零一二三四五六七八九十百千万)";
      return false;
    }
  }
  value = total + section + digit;
  if (value >= kLimit) {
    error = "'" + text +
            "' is out of range: this model translates 0 to "
            "99,999,999";
    return false;
  }
  std::string standard = toChinese(value);
  if (standard != text) {
    error = "'" + text + "' is not written the standard way (" + standard +
            " is " + std::to_string(value) + ")";
    return false;
  }
  return true;
}

} // namespace translate
