"""Paragraph windows: the finer views of a chunk that the vector channel scores it by.

A 1600-character chunk holds several paragraphs (a chat session's turns, a note's sections). One
vector for all of it averages them, so a question about one turn matches the chunk only weakly.
Each chunk of two or more paragraphs therefore also gets one vector per *window*:

* window 0 is the first paragraph alone;
* window i (i >= 1) runs from the start of paragraph i-1 to the end of paragraph i, so each
  paragraph is seen together with the one before it (the question a reply answers, the heading a
  section follows).

A heading is not a view of its own: a window whose own paragraph is a heading line (a document's
``# Title``, a section's heading, or a paragraph that repeats the episode's title: a body written
as title, blank line, text) is left out, since a heading alone, or a heading after the end of
the section before it, matched a short query by its few words and beat the text the heading is
the title of. The heading is still read by the window after it (heading then first paragraph)
and by the chunk's vector. A chunk left with fewer than two windows has none.

A window is a slice of the chunk's text, separators included, so it reads exactly as written.
``MEMORY_PIPELINE_PARAGRAPH_WINDOWS=off`` skips them at indexing time (``indexing.plan.chunk_views``).
The vector channel scores a chunk by its best window (``vector_store.nearest_chunks``). A chunk
with one paragraph, or none, has no windows: its only view is the chunk itself.

More than ``MAX_WINDOWS`` paragraphs (a list of one-liners) are first grouped into ``MAX_WINDOWS``
consecutive runs of nearly equal count, so a chunk never costs more than ``MAX_WINDOWS + 1``
model inputs.

Measured on LoCoMo (``benchmarks/bench_locomo.py``): scoring chunks by their best window lifts the
vector channel's recall@1 from 0.40 (one vector a chunk) to 0.53; the best single paragraph alone
reaches 0.44, a windows-of-two without the first paragraph 0.53 with a weaker fused result.
"""

from __future__ import annotations

from memory_pipeline.domain.anchors import headings
from memory_pipeline.domain.chunking import split_paragraphs

MAX_WINDOWS = 16


def _groups(spans: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    """``spans`` merged into at most ``limit`` consecutive runs whose counts differ by at most one."""
    n = len(spans)
    if n <= limit:
        return spans
    bounds = [round(i * n / limit) for i in range(limit + 1)]
    return [(spans[a][0], spans[b - 1][1]) for a, b in zip(bounds, bounds[1:])]


def _is_heading(paragraph: str, title: str) -> bool:
    """One line that is a Markdown ATX heading (``domain.anchors.headings``) or the title."""
    line = paragraph.strip()
    if title.strip() and line == title.strip():
        return True
    return line.startswith("#") and "\n" not in line and bool(headings(line))


def _window_spans(text: str, title: str = "") -> list[tuple[int, int, int]]:
    """(start, own paragraph's start, end) of each window; ``[]`` below two windows."""
    spans = _groups(split_paragraphs(text), MAX_WINDOWS)
    if len(spans) < 2:
        return []
    windows = [(spans[0][0], spans[0][0], spans[0][1])]
    windows.extend((prev[0], cur[0], cur[1]) for prev, cur in zip(spans, spans[1:]))
    windows = [w for w in windows if not _is_heading(text[w[1] : w[2]], title)]
    return windows if len(windows) >= 2 else []


def paragraph_windows(text: str, *, title: str = "") -> list[str]:
    """The windows of one chunk's text, in order; ``[]`` when it has fewer than two. ``title``:
    its episode's, so a paragraph repeating it counts as a heading."""
    return [text[start:end] for start, _, end in _window_spans(text, title)]


def window_focus(text: str, index: int | None, *, title: str = "") -> int | None:
    """Where window ``index``'s own paragraph (the later of its two) starts in ``text``.

    Search shows a vector hit's snippet from there: the turn that matched, not the chunk's start.
    None when ``index`` is None or the text has no such window (changed rules, a stale index).
    """
    if index is None:
        return None
    spans = _window_spans(text, title)
    return spans[index][1] if 0 <= index < len(spans) else None
