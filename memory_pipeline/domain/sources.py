"""Episode source files (.jsonl, .md/.markdown, .txt, and documents: .html/.htm, .pdf, .docx)
parsed into drafts and located rejections.

Every problem is reported as ``FILE:LINE: reason`` and never stops the rest: a bad line rejects
that line, a bad file that file. Line numbers are 1-based. A whole-file problem of a file that
was read (no memory, an empty body, UTF-16 text) is reported at line 1, or at the front matter
line that caused it; line 0 means the file could not be read at all (missing, unreadable,
unsupported type), so there is no line to point at. A document (``domain.documents``) has no
lines: its rejection is located at the file alone, ``FILE: reason``.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory_pipeline.domain.anchors import outside_fences
from memory_pipeline.domain.documents import DOCUMENT_SUFFIXES, MAX_DOCUMENT_BYTES, DocumentRejected
from memory_pipeline.domain.episodes import (
    MAX_TITLE_CHARS,
    EpisodeDraft,
    InvalidEpisode,
    make_episode,
    validate_kind,
    validate_memory_name,
)
from memory_pipeline.domain.front_matter import FENCE, FrontMatter, FrontMatterRejected
from memory_pipeline.domain.jsonl import LineRejected, iter_lines, parse_object_line
from memory_pipeline.domain.source_episodes import (
    episode_from_document,
    episode_from_object,
    title_from_name,
)
from memory_pipeline.progress import Progress, ProgressCallback

SUPPORTED_SUFFIXES = (".jsonl", ".md", ".markdown", ".txt", *DOCUMENT_SUFFIXES)
DEFAULT_KIND = "note"  # for .md/.txt, which are notes unless they say otherwise

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")


@dataclass(frozen=True)
class Rejection:
    """One input that was not turned into an episode, and why."""

    location: str  # "FILE:LINE", FILE as the user gave it (or joined under a folder they gave)
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"


@dataclass
class ParseResult:
    episodes: list[EpisodeDraft] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    files_read: int = 0  # files opened and read, whether or not they yielded episodes


def parse_paths(
    paths: Iterable[str | os.PathLike] | str | os.PathLike,
    *,
    memory: str | None = None,
    kind: str | None = None,
    now: datetime | None = None,
    sink: Callable[[EpisodeDraft], None] | None = None,
    on_progress: ProgressCallback | None = None,
) -> ParseResult:
    """Parse files and folders (walked recursively, in sorted order) into episode drafts.

    ``memory`` and ``kind`` are defaults for entries that do not name their own. ``now`` (default:
    the current time) caps dates taken from file modification times, so a file copied from a
    clock that runs ahead is not dated in the future. Invalid defaults raise ValueError at once,
    since they would otherwise reject every file the same way. With ``sink``, each draft is
    handed to it as soon as it is parsed instead of collected in ``ParseResult.episodes`` (a
    million-line file then never holds a million drafts at once). ``on_progress`` gets stage
    "ingest" after each file, counted in files of those found (the folders are listed first).
    """
    if memory is not None:
        validate_memory_name(memory)
    if kind is not None:
        validate_kind(kind)
    if now is None:
        now = datetime.now(UTC)
    elif now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    else:
        now = now.astimezone(UTC)
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]

    parser = _Parser(memory=memory, kind=kind, now=now, sink=sink)
    if on_progress is None:
        for path in paths:
            parser.parse_given(os.fspath(path))
        return parser.result
    files = [f for path in paths for f in parser.files_given(os.fspath(path))]
    for done, file in enumerate(files, 1):
        parser.parse_file(file)
        on_progress(Progress("ingest", done, len(files), "files", finished=done == len(files)))
    return parser.result


class _Parser:
    def __init__(
        self,
        *,
        memory: str | None,
        kind: str | None,
        now: datetime,
        sink: Callable[[EpisodeDraft], None] | None = None,
    ):
        self.memory = memory
        self.kind = kind
        self.now = now
        self.result = ParseResult()
        self.keep = sink or self.result.episodes.append
        # A file named twice (explicitly and inside a folder, or through a link) is read once.
        self._seen: set[tuple[int, int]] = set()
        # display path -> its source identity (``file_key``), for the files found in folders.
        self._keys: dict[str, str] = {}

    def file_key(self, display: str) -> str:
        """A file's source identity: its path within the folder it was found in, starting with
        that folder's name (``notes/sub/a.md`` whether the folder was given as ``notes``,
        ``./notes`` or an absolute path); a file given alone: its name."""
        return shown_path(self._keys.get(display) or os.path.basename(display))

    def reject(self, display: str, line: int, reason: str) -> None:
        self.result.rejections.append(Rejection(f"{shown_path(display)}:{line}", reason))

    def reject_document(self, display: str, reason: str) -> None:
        self.result.rejections.append(Rejection(display, reason))

    def parse_given(self, display: str) -> None:
        for file in self.files_given(display):
            self.parse_file(file)

    def files_given(self, display: str) -> Iterator[str]:
        """The files a given path names (a folder's, walked), rejecting what is none."""
        if os.path.isdir(display):
            top = os.path.basename(os.path.abspath(display))
            for child in self._walk(display):
                inside = os.path.relpath(child, display).replace(os.sep, "/")
                self._keys[child] = f"{top}/{inside}" if top else inside
                yield child
        elif not os.path.exists(display):
            self.reject(display, 0, "no such file or folder")
        else:
            suffix = os.path.splitext(display)[1]
            if suffix.lower() not in SUPPORTED_SUFFIXES:
                expected = ", ".join(SUPPORTED_SUFFIXES)
                what = f"'{suffix}' (expected" if suffix else "(no suffix; expected"
                self.reject(display, 0, f"unsupported file type {what} {expected})")
            else:
                yield display

    def _walk(self, folder: str) -> Iterator[str]:
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            self.reject(folder, 0, f"cannot read folder: {error.strerror or error}")
            return
        for entry in entries:
            # Hidden files and folders (.git, .obsidian, editor swap files) are tooling, not notes.
            if entry.name.startswith("."):
                continue
            child = os.path.join(folder, entry.name)
            try:
                # Linked folders are not followed: a link to a parent would walk forever.
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_folder = False
            if is_folder:
                yield from self._walk(child)
            elif os.path.splitext(entry.name)[1].lower() in SUPPORTED_SUFFIXES:
                yield child

    def parse_file(self, display: str) -> None:
        try:
            info = os.stat(display)
            # Checked before opening: opening a FIFO would block until something writes to it.
            if not stat.S_ISREG(info.st_mode):
                self.reject(display, 0, "not a regular file")
                return
            if (info.st_dev, info.st_ino) in self._seen:
                return
            suffix = os.path.splitext(display)[1].lower()
            # Checked before a byte is read: a huge file costs a stat, not its size in memory.
            if suffix in DOCUMENT_SUFFIXES and info.st_size > MAX_DOCUMENT_BYTES:
                self._seen.add((info.st_dev, info.st_ino))
                self.reject_document(
                    display,
                    f"{info.st_size / 2**20:,.0f} MiB is larger than the {MAX_DOCUMENT_BYTES // 2**20} MiB "
                    "a document may be; split it or extract its text first",
                )
                return
            with open(display, "rb") as handle:
                if suffix == ".jsonl":  # read a line at a time: a JSONL file can be any size
                    self._seen.add((info.st_dev, info.st_ino))
                    self.result.files_read += 1
                    self._parse_jsonl_file(display, handle)
                    return
                data = handle.read()
        except OSError as error:
            self.reject(display, 0, f"cannot read: {error.strerror or error}")
            return
        self._seen.add((info.st_dev, info.st_ino))
        self.result.files_read += 1

        if suffix in DOCUMENT_SUFFIXES:
            self._parse_document(display, data, info.st_mtime, suffix)
            return
        if data.startswith(_UTF8_BOM):
            data = data[len(_UTF8_BOM) :]
        elif data.startswith(_UTF16_BOMS):
            self.reject(display, 1, "the file is UTF-16 text; save it as UTF-8")
            return

        self._parse_text_file(display, data, info.st_mtime, markdown=suffix != ".txt")

    # -- JSONL -----------------------------------------------------------------------------------

    def _parse_jsonl_file(self, display: str, handle) -> None:
        head = handle.read(len(_UTF8_BOM))
        if head.startswith(_UTF16_BOMS):
            self.reject(display, 1, "the file is UTF-16 text; save it as UTF-8")
            return
        if head != _UTF8_BOM:
            handle.seek(0)
        for number, raw in iter_lines(handle):
            try:
                episode = self._jsonl_episode(f"{shown_path(display)}:{number}", raw)
            except LineRejected as rejected:
                self.reject(display, number, rejected.reason)
            else:
                self.keep(episode)

    def _jsonl_episode(self, location: str, raw: bytes) -> EpisodeDraft:
        return episode_from_object(
            parse_object_line(raw),
            location,
            memory=self.memory,
            kind=self.kind,
            memory_hint=" (or pass --memory)",
        )

    # -- Documents (HTML, PDF, DOCX) -------------------------------------------------------------

    def _parse_document(self, display: str, data: bytes, mtime: float, suffix: str) -> None:
        try:
            episode = episode_from_document(
                data,
                suffix,
                os.path.basename(display),
                source=display,
                memory=self.memory,
                kind=self.kind,
                modified_at=self._modified_at(mtime),
                file_key=self.file_key(display),
            )
        except DocumentRejected as rejected:
            self.reject_document(display, rejected.reason)
        else:
            self.keep(episode)

    # -- Markdown and plain text -----------------------------------------------------------------

    def _parse_text_file(self, display: str, data: bytes, mtime: float, *, markdown: bool) -> None:
        text = self._decoded(display, data)
        if text is None:
            return
        # Split on "\n" only: str.splitlines also breaks at \v, \f, U+2028..., which editors do
        # not count as lines, and every line number below must match the editor's.
        lines = text.split("\n")
        front: FrontMatter | None = None
        body, body_index, body_line = text, 0, 1
        if markdown and lines[0].rstrip() == FENCE:
            split = self._front_matter(display, text, lines)
            if split is None:
                return
            front, body_index, body_line = split
            body = "\n".join(lines[body_index:])

        nul_line = _nul_line(lines)
        if nul_line:
            self.reject(
                display, nul_line, "NUL character in 'body' (PostgreSQL text cannot hold it)"
            )
            return
        values, value_lines, metadata = self._text_values(
            display, front, lines[body_index:] if markdown else None, body_index, body_line
        )
        if values["memory"] is None:
            where = " or set 'memory' in front matter" if markdown else ""
            self.reject(display, 1, f"no memory: pass --memory{where}")
            return
        if "occurred_at" not in values:
            values["occurred_at"] = self._modified_at(mtime)

        try:
            episode = make_episode(
                memory=values["memory"],
                kind=values["kind"],
                title=values["title"],
                occurred_at=values["occurred_at"],
                body=body,
                salience=values.get("salience"),
                source=shown_path(display),
                metadata=metadata,
                file_key=self.file_key(display),
            )
        except InvalidEpisode as error:
            if error.field == "metadata" and front is not None:
                line = front.lines.get(error.metadata_key or "", 1)
            else:
                line = value_lines.get(error.field, 1)
            self.reject(display, line, str(error))
            return
        self.keep(episode)

    def _decoded(self, display: str, data: bytes) -> str | None:
        """The file's text with one line ending, or None when it is not UTF-8 (rejected)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            line_start = data.rfind(b"\n", 0, error.start) + 1
            self.reject(
                display,
                data.count(b"\n", 0, error.start) + 1,
                f"invalid UTF-8 at byte {error.start - line_start + 1} of the line "
                f"(0x{data[error.start]:02x})",
            )
            return None
        # One line ending for all: the same note saved on Windows and on Unix is the same body
        # (and the same content hash), and front matter fences compare equal.
        return text.replace("\r\n", "\n")

    def _front_matter(
        self, display: str, text: str, lines: list[str]
    ) -> tuple[FrontMatter, int, int] | None:
        """(front matter, index of the body's first line, line to report an empty body at) of a
        file that opens with a fence, or None when it is rejected."""
        close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == FENCE), None)
        if close is None:
            self.reject(display, 1, "front matter opened on line 1 is never closed by a '---' line")
            return None
        nul_line = _nul_line(lines[: close + 1])
        if nul_line:
            self.reject(display, nul_line, "NUL character in front matter")
            return None
        try:
            front = FrontMatter.parse("\n".join(lines[1:close]), first_line=2)
        except FrontMatterRejected as rejected:
            self.reject(display, rejected.line, rejected.reason)
            return None
        body_index = close + 1
        # An empty body is reported at the closing fence when nothing follows it.
        body_line = min(body_index + 1, len(lines) - (1 if text.endswith("\n") else 0))
        return front, body_index, body_line

    def _text_values(
        self,
        display: str,
        front: FrontMatter | None,
        markdown_body: list[str] | None,
        body_index: int,
        body_line: int,
    ) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]]:
        """(fields, the line of each, metadata) of a text file: front matter first, then the
        first heading of a Markdown body, the file name, and the parser's defaults."""
        values: dict[str, Any] = {}
        value_lines: dict[str, int] = {"body": body_line}
        metadata: dict[str, Any] = {}
        if front is not None:
            for name in ("title", "memory", "kind", "salience", "occurred_at"):
                if name in front.values:
                    values[name] = front.values[name]
                    value_lines[name] = front.lines[name]
            metadata = front.metadata

        if "title" not in values:
            heading = _first_heading(markdown_body) if markdown_body is not None else None
            if heading is not None:
                offset, title = heading
                value_lines["title"] = body_index + offset + 1
            else:
                title = title_from_name(os.path.basename(shown_path(display)))
            # A title the file did not state is a guess; a long one is shortened, not fatal.
            if len(title) > MAX_TITLE_CHARS:
                title = title[: MAX_TITLE_CHARS - 1] + "…"
            values["title"] = title
        values.setdefault("memory", self.memory)
        values.setdefault("kind", self.kind or DEFAULT_KIND)
        return values, value_lines, metadata

    def _modified_at(self, mtime: float) -> datetime:
        try:
            modified = datetime.fromtimestamp(mtime, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return self.now
        return min(modified, self.now)


def shown_path(path: str) -> str:
    """``path`` as printable, storable text: bytes of a file name that are not UTF-8 (which
    Python carries as lone surrogates) are shown as ``\\xff`` escapes."""
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that no file system byte produced
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def _first_heading(lines: list[str]) -> tuple[int, str] | None:
    """(index, text) of the first non-empty ATX heading outside fenced code, if any."""
    for index, line in outside_fences(lines):
        match = _ATX_HEADING.fullmatch(line)
        if match:
            title = _ATX_CLOSING.sub("", (match.group(2) or "")).strip()
            if title:
                return index, title
    return None


def _nul_line(lines: list[str]) -> int:
    for number, line in enumerate(lines, start=1):
        if "\x00" in line:
            return number
    return 0
