"""Paragraph windows: the finer views of a chunk that the vector channel scores it by.

One vector for a chunk of several paragraphs averages them, so a question about one turn
matches it weakly. A chunk of two or more paragraphs also gets a vector per window: window 0 is
its first paragraph, window i its paragraphs i-1 and i (a reply with its question), each a slice
of the chunk's text. A window whose own paragraph is a heading (``# Title``, a section heading,
or a paragraph repeating the episode's title) is left out: a heading alone matched short queries
by its few words and beat the text it names; the next window still reads it. A chunk left with
fewer than two windows has none. The vector channel scores a chunk by its best window. More than
``MAX_WINDOWS`` paragraphs are grouped first, so a chunk costs at most ``MAX_WINDOWS + 1`` model
inputs. ``MEMORY_PIPELINE_PARAGRAPH_WINDOWS=off`` skips them (``indexing.plan.chunk_views``).
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
