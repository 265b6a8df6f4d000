"""Heading anchors: the headings a chunk sits under, as "Title > Section > Subsection".

Chunks are cut by the paragraph rule alone (``domain.chunking``), so a chunk deep in a long
document often holds paragraphs with no word of what they are about: "The second stage takes
about ten minutes" means little without "Bread > Proofing". The anchor gives it back: it is
given to the model with the chunk's text when the chunk is embedded (``model_text``), added to
the chunk's keyword index, and shown with the result. The chunk's text, ids and offsets do not
change.

The rule: ATX headings (``#`` to ``######``) outside fenced code form a stack (a heading of
level n replaces the stack from level n down). A chunk's anchor is the stack in effect at the
chunk's first paragraph that is not a heading (a chunk that opens with its section's heading is
under that heading), joined with " > ". A document's body opens with its title as a ``#``
heading (``domain.sources``), so its anchors read "Title > Section > Subsection". A body
without any heading gets no anchors at all: a note or a chat keeps exactly the model input and
keyword index it had before.

Identical chunk texts inside one episode share a chunk id and so one vector; if they sit under
different headings, the vector is embedded with the first one's anchor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from memory_pipeline.domain.chunking import Chunk, split_paragraphs

SEPARATOR = " > "
MAX_ANCHOR_CHARS = 300  # a runaway heading must not crowd out the chunk in the model's input

_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_CODE_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def headings(body: str) -> list[tuple[int, int, str]]:
    """``(offset, level, text)`` of every non-empty ATX heading line outside fenced code."""
    found: list[tuple[int, int, str]] = []
    if "#" not in body:  # most notes and chats: no line to look at
        return found
    fence: str | None = None
    offset = 0
    for line in body.split("\n"):
        content = line.rstrip("\r")
        fence_match = _CODE_FENCE.match(content)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not content.strip(" `~\t"):
                fence = None
        elif fence is None:
            match = _ATX_HEADING.fullmatch(content)
            if match and (match.group(2) or "").strip():
                found.append((offset, len(match.group(1)), match.group(2).strip()))
        offset += len(line) + 1
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
