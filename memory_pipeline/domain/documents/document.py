"""The one document shape every reader produces (a title, a date, headings and paragraphs), the
limits a reader keeps, and the rejection it raises."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

DOCUMENT_SUFFIXES = (".html", ".htm", ".pdf", ".docx")
# Checked with stat before a byte is read: a 200 MB "document" is rejected at once.
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
# What extraction may produce and spend; a document beyond them is rejected, not truncated.
MAX_TEXT_CHARS = 2_000_000  # the episode body limit (domain.episodes.MAX_BODY_CHARS)
MAX_SECONDS = 30.0


class DocumentRejected(Exception):
    """A document that cannot become an episode, with the reason a user can act on."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Block:
    """A heading (``level`` 1-6) or a paragraph (``level`` 0) of sanitized, non-empty text."""

    level: int
    text: str


@dataclass
class Document:
    title: str | None  # from the document's metadata or its first heading; None: use the file name
    occurred_at: dt.datetime | None  # from the document's metadata; None: use the file time
    blocks: list[Block] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)

    @property
    def body(self) -> str:
        """Headings as ``#`` lines and paragraphs, separated by blank lines."""
        return (
            "\n\n".join(("#" * b.level + " " if b.level else "") + b.text for b in self.blocks)
            + "\n"
        )


class Budget:
    """The time and text a document's extraction may still spend."""

    def __init__(self, seconds: float = MAX_SECONDS, chars: int = MAX_TEXT_CHARS):
        self.deadline = time.monotonic() + seconds
        self.seconds = seconds
        self.chars = chars
        self.used = 0

    def spend(self, text: str, *, where: str = "") -> None:
        self.used += len(text)
        if self.used > self.chars:
            raise DocumentRejected(
                f"more than {self.chars:,} characters of text{where}; split the document"
            )
        self.check_time(where)

    def check_time(self, where: str = "") -> None:
        if time.monotonic() > self.deadline:
            raise DocumentRejected(f"reading took longer than {self.seconds:.0f} s{where}; stopped")
