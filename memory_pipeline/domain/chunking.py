"""Cutting an episode body into disjoint, content-addressed chunks of at most 1600 characters.

Paragraphs (runs of non-blank lines) each own the blank lines after them; these pieces are packed
into a chunk while it stays within ``MAX_CHUNK_CHARS``, and a longer piece is cut every
``MAX_CHUNK_CHARS`` characters. So for every ``str``: chunks are non-empty, contiguous and never
overlap, ``"".join(c.text for c in chunks) == body``, and none is longer than the maximum
(lengths in code points, so a hard cut may split a ``"\\r\\n"`` pair; the bound stays exact).
Chunk ids are ``sha256(content_hash, NUL, text)``: an unchanged episode keeps its ids across
runs, and identical texts within one episode share an id on purpose.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

MAX_CHUNK_CHARS = 1600

# A stray "\r" (a doubled CR, a CRLF cut off at the end of the body) shows nothing, so it no
# more makes a line non-blank than a space does.
_BLANK_LINE = re.compile(r"[ \t\r]*")


def _utf8(text: str) -> bytes:
    # surrogatepass keeps hashing total: any str (even one with lone surrogates from a
    # surrogateescape decode) gets an id, and valid text encodes exactly as plain UTF-8.
    return text.encode("utf-8", errors="surrogatepass")


def content_hash(body: str) -> str:
    """sha256 of the body's UTF-8 bytes, hex (the episode's content hash)."""
    return hashlib.sha256(_utf8(body)).hexdigest()


def chunk_id(content_hash: str, text: str) -> str:
    """sha256 over (content_hash UTF-8, a NUL byte, text UTF-8), hex."""
    # The NUL keeps ("ab", "c") and ("a", "bc") apart; hex hashes never contain one.
    return hashlib.sha256(_utf8(content_hash) + b"\x00" + _utf8(text)).hexdigest()


@dataclass(frozen=True)
class Chunk:
    """One slice of an episode body: ``body[start:end] == text``."""

    ordinal: int  # 0-based position in the episode
    start: int  # character offset in the body (inclusive)
    end: int  # character offset in the body (exclusive)
    text: str
    chunk_id: str  # 64 hex chars: chunk_id(episode content hash, text)
    anchor: str = ""  # the headings above it (``domain.anchors``); not part of the text or the id

    @property
    def token_estimate(self) -> int:
        """About four characters a token; at least 1 for any non-empty text."""
        if not self.text:
            return 0
        return max(1, len(self.text) // 4)


def split_paragraphs(body: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of each paragraph, without the line end of its last line.

    A paragraph starts at the start of its first line (indentation included) and ends where
    the content of its last non-blank line ends; everything between paragraphs is separator.
    """
    spans: list[tuple[int, int]] = []
    para_start: int | None = None
    para_end = 0
    pos = 0
    n = len(body)
    while pos < n:
        newline = body.find("\n", pos)
        if newline == -1:
            content_end, next_pos = n, n
        else:
            content_end, next_pos = newline, newline + 1
            if content_end > pos and body[content_end - 1] == "\r":
                content_end -= 1
        if _BLANK_LINE.fullmatch(body, pos, content_end):
            if para_start is not None:
                spans.append((para_start, para_end))
                para_start = None
        else:
            if para_start is None:
                para_start = pos
            para_end = content_end
        pos = next_pos
    if para_start is not None:
        spans.append((para_start, para_end))
    return spans


def _pieces(body: str) -> list[tuple[int, int]]:
    """Each paragraph with the separator after it; the first and last reach the body's ends."""
    if not body:
        return []
    bounds = [0] + [start for start, _ in split_paragraphs(body)[1:]] + [len(body)]
    return list(zip(bounds, bounds[1:]))


def _chunk_spans(body: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    chunk_start = 0
    chunk_end = 0  # == chunk_start while the open chunk is empty
    for _, piece_end in _pieces(body):
        if chunk_end > chunk_start and piece_end - chunk_start > MAX_CHUNK_CHARS:
            spans.append((chunk_start, chunk_end))
            chunk_start = chunk_end
        while piece_end - chunk_start > MAX_CHUNK_CHARS:
            spans.append((chunk_start, chunk_start + MAX_CHUNK_CHARS))
            chunk_start += MAX_CHUNK_CHARS
        chunk_end = piece_end
    if chunk_end > chunk_start:
        spans.append((chunk_start, chunk_end))
    return spans


def chunk_body(body: str, content_hash: str | None = None) -> list[Chunk]:
    """Chunks of ``body`` by the rule in this module's docstring; ``[]`` for an empty body.

    ``content_hash`` defaults to ``content_hash(body)``; pass the stored one to avoid rehashing.
    """
    episode_hash = content_hash if content_hash is not None else _body_hash(body)
    chunks = []
    for ordinal, (start, end) in enumerate(_chunk_spans(body)):
        text = body[start:end]
        chunks.append(Chunk(ordinal, start, end, text, chunk_id(episode_hash, text)))
    return chunks


# The parameter of chunk_body shadows the function of the same name.
_body_hash = content_hash
