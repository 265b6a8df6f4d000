"""The one document shape every reader produces (a title, a date, headings and paragraphs), the
limits a reader keeps, and the rejection it raises."""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as dt
import gc
import time
from dataclasses import dataclass, field

DOCUMENT_SUFFIXES = (".html", ".htm", ".pdf", ".docx")
# Checked with stat before a byte is read: a 200 MB "document" is rejected at once.
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
# What extraction may produce and spend; a document beyond them is rejected, not truncated.
MAX_TEXT_CHARS = 2_000_000  # the episode body limit (domain.episodes.MAX_BODY_CHARS)
MAX_SECONDS = 30.0
# Reading a document this large leaves megabytes of freed memory that the C allocator keeps for
# the process (in the arena of the thread that read it) unless asked to return it.
RELEASE_AFTER_BYTES = 1024 * 1024


class DocumentRejected(Exception):
    """A document that cannot become an episode, with the reason a user can act on."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
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


def _libc_function(name: str):
    """A glibc allocator function, or None where the C library has no such function."""
    library = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(library), name, None) if library else None
    except OSError:
        return None


_MALLOC_TRIM = _libc_function("malloc_trim")
_MALLOPT = _libc_function("mallopt")
_M_MMAP_THRESHOLD = -3
# Buffers at least this large (a request body, a document's bytes) get pages of their own.
LARGE_BUFFER_BYTES = 4 * 1024 * 1024


def return_large_buffers() -> None:
    """Have every buffer of ``LARGE_BUFFER_BYTES`` or more mapped on its own, so that freeing it
    returns it to the system at once. glibc otherwise raises its mapping threshold to the size
    of the largest buffer freed so far (up to 32 MiB): after one large upload a long-running
    server would keep every later upload's memory in its heap. Called once by the servers."""
    if _MALLOPT is not None:
        _MALLOPT(_M_MMAP_THRESHOLD, LARGE_BUFFER_BYTES)


def release_memory() -> None:
    """Give the memory a large document's reading freed back to the system: collect the cycles
    its parser left (lxml keeps a callback's exception with its frames), then ask glibc to return
    free pages of every arena (``malloc_trim``; a no-op where there is none)."""
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
