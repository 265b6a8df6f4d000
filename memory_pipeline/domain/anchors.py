"""Heading anchors: the headings a chunk sits under, as "Title > Section > Subsection".

A chunk deep in a long document often holds no word of what it is about; its anchor gives that
back to the model (``model_text``), the keyword index and the result, without changing the
chunk's text, ids or offsets. ATX headings outside fenced code form a stack; a chunk's anchor is
the stack at its first paragraph that is not a heading. A body without headings gets no anchors.
Identical chunk texts of one episode share a vector, embedded with the first one's anchor.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import accumulate

from memory_pipeline.domain.chunking import Chunk, split_paragraphs

SEPARATOR = " > "
MAX_ANCHOR_CHARS = 300  # a runaway heading must not crowd out the chunk in the model's input

_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_CODE_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def outside_fences(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """``(index, line)`` of each line outside fenced code, the fence lines left out too: a fence
    opens at three or more backticks or tildes and closes at a line of nothing but at least as
    many of the same."""
    fence: str | None = None
    for index, line in enumerate(lines):
        fence_match = _CODE_FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip(" `~\t"):
                fence = None
        elif fence is None:
            yield index, line


def headings(body: str) -> list[tuple[int, int, str]]:
    """``(offset, level, text)`` of every non-empty ATX heading line outside fenced code."""
    found: list[tuple[int, int, str]] = []
    if "#" not in body:  # most notes and chats: no line to look at
        return found
    lines = body.split("\n")
    offsets = list(accumulate((len(line) + 1 for line in lines), initial=0))
    for index, content in outside_fences(line.rstrip("\r") for line in lines):
        match = _ATX_HEADING.fullmatch(content)
        if match and (match.group(2) or "").strip():
            found.append((offsets[index], len(match.group(1)), match.group(2).strip()))
    return found


def chunk_anchors(body: str, chunks: Sequence[Chunk]) -> list[str]:
    """One anchor per chunk ("" for every chunk of a body without headings)."""
    marks = headings(body)
    if not marks:
        return [""] * len(chunks)
    heading_at = {offset: (level, text) for offset, level, text in marks}
    # Where each chunk's content starts: its first paragraph that is not a heading line.
    paragraphs = split_paragraphs(body)
    anchors = []
    for chunk in chunks:
        point = chunk.end
        for start, _ in paragraphs:
            if chunk.start <= start < chunk.end and start not in heading_at:
                point = start
                break
        stack: list[tuple[int, str]] = []
        for offset, level, text in marks:
            if offset >= point:
                break
            stack = [item for item in stack if item[0] < level] + [(level, text)]
        anchor = SEPARATOR.join(text for _, text in stack)
        anchors.append(
            anchor[: MAX_ANCHOR_CHARS - 1] + "…" if len(anchor) > MAX_ANCHOR_CHARS else anchor
        )
    return anchors


def anchored(body: str, chunks: Sequence[Chunk]) -> list[Chunk]:
    """The chunks with their ``anchor`` set (text, offsets and ids unchanged)."""
    anchors = chunk_anchors(body, chunks)
    if not any(anchors):
        return list(chunks)  # Chunk.anchor is already ""
    return [replace(chunk, anchor=anchor) for chunk, anchor in zip(chunks, anchors)]


def model_text(anchor: str, text: str) -> str:
    """What the embedding model reads for a chunk: its anchor on a line of its own, then the text."""
    return f"{anchor}\n\n{text}" if anchor else text
