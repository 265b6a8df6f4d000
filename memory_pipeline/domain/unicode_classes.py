"""Unicode character classes for regular expressions that Python's ``re`` lacks: combining
marks, and any code points a test selects, as ``[...]`` ranges."""

from __future__ import annotations

import functools
import sys
import unicodedata
from collections.abc import Callable, Iterable


def char_ranges(test: Callable[[str], bool]) -> list[tuple[int, int]]:
    """The code points for which ``test`` holds, as (first, last) ranges."""
    ranges: list[tuple[int, int]] = []
    for code in range(sys.maxunicode + 1):
        if test(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return ranges


def class_ranges(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)


@functools.cache
def marks(*, bmp: bool | None = None) -> str:
    """Every combining mark, as character-class ranges (``bmp``: only those up to U+FFFF, or
    only those above it).

    ``\\w`` does not cover marks, yet in NFD text or in scripts such as Devanagari a mark
    continues the word before it: "राम" must not be found inside "रामा".
    """
    ranges = _mark_ranges()
    if bmp is True:
        ranges = [(low, min(high, 0xFFFF)) for low, high in ranges if low <= 0xFFFF]
    elif bmp is False:
        ranges = [(max(low, 0x10000), high) for low, high in ranges if high > 0xFFFF]
    return class_ranges(ranges)


def is_astral_mark(char: str) -> bool:
    return ord(char) > 0xFFFF and unicodedata.category(char).startswith("M")


@functools.cache
def _mark_ranges() -> list[tuple[int, int]]:
    return char_ranges(lambda char: unicodedata.category(char).startswith("M"))
