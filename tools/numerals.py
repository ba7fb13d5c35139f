"""Chinese numerals and English number words for 0 to 99,999,999.

The conventions are those of examples/translate/README.md:

Chinese (standard Mandarin): 零 for 0; 十五 for 15 but 一百一十 for 110 (a
leading 一十 becomes 十 only at the very start of the numeral); one 零 for each
run of missing places between two non-zero places (一千零五, 一万零一十,
十万零一), except that the zeros ending the 万 group are not read when the
thousands place follows (二千三百四十万五千零六, 一千万一千); 二, never 两;
groups of 万.

English: lowercase words separated by single spaces, no "and", no hyphens,
no commas ("twenty three million four hundred five thousand six").

The held-out split is a property of the number: `is_held_out(n)`. Training
never sees a held-out number; the test sets are drawn only from them.
"""

LIMIT = 100_000_000

DIGITS = "零一二三四五六七八九"
PLACES = ["", "十", "百", "千"]

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven",
        "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen",
        "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy",
        "eighty", "ninety"]

SOURCE_SYMBOLS = list(DIGITS) + ["十", "百", "千", "万"]
TARGET_WORDS = ONES + TENS[2:] + ["hundred", "thousand", "million"]


def to_chinese(n: int) -> str:
    if not 0 <= n < LIMIT:
        raise ValueError(f"{n} is outside 0..{LIMIT - 1}")
    if n == 0:
        return DIGITS[0]
    out = []
    pending_zero = False
    for place in range(7, -1, -1):
        digit = n // 10**place % 10
        if digit == 0:
            pending_zero = pending_zero or bool(out)
        else:
            if pending_zero:
                out.append(DIGITS[0])
                pending_zero = False
            unit = PLACES[place % 4]
            if not (digit == 1 and unit == "十" and not out):
                out.append(DIGITS[digit])
            out.append(unit)
        if place == 4 and n >= 10_000:
            out.append("万")
            pending_zero = False  # the 万 group's own trailing zeros are silent
    return "".join(out)


def _below_thousand(n: int) -> list:
    words = []
    if n >= 100:
        words += [ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(TENS[n // 10])
        n %= 10
        if n:
            words.append(ONES[n])
    elif n:
        words.append(ONES[n])
    return words


def to_english(n: int) -> str:
    if not 0 <= n < LIMIT:
        raise ValueError(f"{n} is outside 0..{LIMIT - 1}")
    if n == 0:
        return "zero"
    words = []
    for value, name in ((1_000_000, "million"), (1_000, "thousand")):
        if n >= value:
            words += _below_thousand(n // value) + [name]
            n %= value
    words += _below_thousand(n)
    return " ".join(words)


def is_held_out(n: int) -> bool:
    """1 in 100 numbers, chosen by a multiplicative hash (Knuth's constant)."""
    return (n * 2654435761) % 2**32 % 100 == 7


def sample_number(rng, held_out: bool) -> int:
    """A number on the requested side of the split. Its digit count is
    uniform over 1..8; half of the time its digits are uniform, half of the
    time each digit after the first is 0 with probability 1/2 -- otherwise
    round numbers (一百万, 三千万零五) and the zero rules they exercise would
    be one in a million."""
    while True:
        digits = rng.randint(1, 8)
        if rng.random() < 0.5:
            low = 0 if digits == 1 else 10 ** (digits - 1)
            n = rng.randrange(low, 10**digits)
        else:
            n = rng.randint(1, 9)
            for _ in range(digits - 1):
                n = n * 10 + (0 if rng.random() < 0.5 else rng.randint(1, 9))
        if is_held_out(n) == held_out:
            return n


def _self_check():
    cases = {
        0: ("零", "zero"), 15: ("十五", "fifteen"), 110: ("一百一十", "one hundred ten"),
        1005: ("一千零五", "one thousand five"),
        3005: ("三千零五", "three thousand five"),
        10010: ("一万零一十", "ten thousand ten"),
        100001: ("十万零一", "one hundred thousand one"),
        150000: ("十五万", "one hundred fifty thousand"),
        1010000: ("一百零一万", "one million ten thousand"),
        10001000: ("一千万一千", "ten million one thousand"),
        12000: ("一万二千", "twelve thousand"),
        20300: ("二万零三百", "twenty thousand three hundred"),
        1000001: ("一百万零一", "one million one"),
        1001000: ("一百万一千", "one million one thousand"),
        23405006: ("二千三百四十万五千零六",
                   "twenty three million four hundred five thousand six"),
        99999999: ("九千九百九十九万九千九百九十九",
                   "ninety nine million nine hundred ninety nine thousand "
                   "nine hundred ninety nine"),
    }
    for n, (chinese, english) in cases.items():
        assert to_chinese(n) == chinese, (n, to_chinese(n), chinese)
        assert to_english(n) == english, (n, to_english(n), english)


_self_check()

if __name__ == "__main__":
    import sys
    for arg in sys.argv[1:]:
        n = int(arg)
        print(n, to_chinese(n), to_english(n), "held-out" if is_held_out(n) else "train")
