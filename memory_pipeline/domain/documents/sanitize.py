"""Text from a document made safe to store and to show: what a reader cannot see never reaches a chunk.

Removed: NUL and other control characters, lone surrogates and non-characters, and invisible
characters that make two texts look alike while they differ (zero-width characters,
bidirectional overrides, soft hyphens, tag characters). Line ends become ``"\\n"`` and the text
is NFC-normalised, so the same words always give the same content hash, chunk ids and lexemes.
"""

from __future__ import annotations

import re
import unicodedata

# Tab and line feed are text; every other C0 control, DEL and the C1 controls are not.
_CONTROL = "\x00-\x08\x0b\x0e-\x1f\x7f-\x9f"
_INVISIBLE = (
    "\u00ad"  # soft hyphen
    "\u180e"  # Mongolian vowel separator (once a space, now invisible)
    "\u200b-\u200f"  # zero-width space, non-joiner, joiner, LRM, RLM
    "\u202a-\u202e"  # bidirectional embeddings and overrides
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u2069"  # bidirectional isolates
    "\ufeff"  # zero-width no-break space (a BOM inside text)
    "\ufff9-\ufffb"  # interlinear annotation controls
)
_SURROGATE = "\ud800-\udfff"
_NONCHARACTER = "\ufdd0-\ufdef\ufffe\uffff"
_REMOVE = re.compile(
    f"[{_CONTROL}{_INVISIBLE}{_SURROGATE}{_NONCHARACTER}\U000e0000-\U000e007f]"
    # the last two code points of every supplementary plane are non-characters too
    "|[\U0001fffe\U0001ffff\U0002fffe\U0002ffff\U0003fffe\U0003ffff\U0004fffe\U0004ffff"
    "\U0005fffe\U0005ffff\U0006fffe\U0006ffff\U0007fffe\U0007ffff\U0008fffe\U0008ffff"
    "\U0009fffe\U0009ffff\U000afffe\U000affff\U000bfffe\U000bffff\U000cfffe\U000cffff"
    "\U000dfffe\U000dffff\U000efffe\U000effff\U000ffffe\U000fffff\U0010fffe\U0010ffff]"
)
# Line and page breaks that are not "\n": CR LF, CR, vertical tab, form feed (a PDF page break),
# NEL, and the Unicode line and paragraph separators.
_LINE_BREAK = re.compile("\r\n|[\r\x0b\x0c\x85\u2028\u2029]")


def sanitize_text(text: str) -> str:
    """``text`` without control, invalid or invisible characters, ``"\\n"`` line ends, NFC."""
    text = _LINE_BREAK.sub("\n", text)
    text = _REMOVE.sub("", text)
    return unicodedata.normalize("NFC", text)


def one_line(text: str) -> str:
    """Sanitized text with every run of whitespace (line ends included) as one space."""
    return " ".join(sanitize_text(text).split())
