"""Pages of a long episode: consecutive whole chunks up to a size budget, numbered from 1.

Reading pages 1 to ``pages`` reads the whole body. A page takes chunks in order while its text
stays within ``PAGE_CHARS``; a chunk is never split, so a search hit lies inside one page or
across two that touch, and the pages are a pure function of the chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# About 4,000 tokens of prose: a page an agent can take in at once, ten chunks and more.
PAGE_CHARS = 16_000


@dataclass(frozen=True)
class PageSpan:
    """One page: its 1-based ``number``, its characters ``start``..``end`` in the body, and the
    indexes ``first``..``last`` (inclusive) of its chunks in the episode's order."""

    number: int
    start: int
    end: int
    first: int
    last: int


class NoSuchPage(ValueError):
    """A page number outside 1..pages; ``pages`` says how many there are."""

    def __init__(self, page: object, pages: int):
        super().__init__(f"page {page!r}: expected 1 to {pages}")
        self.page = page
        self.pages = pages


def paginate(spans: Sequence[tuple[int, int]], budget: int = PAGE_CHARS) -> list[PageSpan]:
    """The pages of an episode whose chunks span ``spans`` ((start, end) in order, contiguous,
    as ``chunking.chunk_body`` cuts them). No chunks (an empty body): one empty page."""
    if budget <= 0:
        raise ValueError(f"page budget must be positive, got {budget}")
    if not spans:
        return [PageSpan(1, 0, 0, 0, -1)]
    pages: list[PageSpan] = []
    first = 0
    for i in range(1, len(spans) + 1):
        if i == len(spans) or spans[i][1] - spans[first][0] > budget:
            pages.append(PageSpan(len(pages) + 1, spans[first][0], spans[i - 1][1], first, i - 1))
            first = i
    return pages


def page(
    spans: Sequence[tuple[int, int]], number: object, budget: int = PAGE_CHARS
) -> tuple[PageSpan, int]:
    """Page ``number`` (1-based) of ``spans`` and the page count; NoSuchPage outside them."""
    pages = paginate(spans, budget)
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(pages):
        raise NoSuchPage(number, len(pages))
    return pages[number - 1], len(pages)
