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

import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import yaml

from memory_pipeline.domain.documents import (
    DOCUMENT_SUFFIXES,
    MAX_DOCUMENT_BYTES,
    Block,
    DocumentRejected,
    read_document,
)
from memory_pipeline.domain.documents.sanitize import one_line
from memory_pipeline.domain.episodes import (
    MAX_TITLE_CHARS,
    EpisodeDraft,
    InvalidEpisode,
    make_episode,
    validate_kind,
    validate_memory_name,
)
from memory_pipeline.domain.jsonl import (
    LineRejected,
    given,
    iter_lines,
    json_type,
    parse_object_line,
    reject_unknown_fields,
)
from memory_pipeline.progress import Progress, ProgressCallback

SUPPORTED_SUFFIXES = (".jsonl", ".md", ".markdown", ".txt", *DOCUMENT_SUFFIXES)
DEFAULT_KIND = "note"  # for .md/.txt, which are notes unless they say otherwise
DOCUMENT_KIND = "doc"

JSONL_REQUIRED_FIELDS = ("memory", "kind", "title", "occurred_at", "body")
JSONL_OPTIONAL_FIELDS = ("salience", "source", "metadata", "id")
# Unknown fields are rejected rather than kept: a typo ("titel", "occured_at") must not be stored
# silently as metadata while the real field goes missing or falls back to a default.
_JSONL_FIELDS = JSONL_REQUIRED_FIELDS + JSONL_OPTIONAL_FIELDS

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_FRONT_MATTER_FENCE = "---"
_FRONT_MATTER_KEYS = frozenset({"title", "occurred_at", "date", "kind", "memory", "salience"})
_ATX_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_CODE_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# YAML aliases repeat a value wherever they are used: nine lines of nine aliases each stand for
# 9**9 values ("billion laughs"). Front matter is a handful of keys; this bounds what one file
# may expand to before anything is built from it.
MAX_FRONT_MATTER_VALUES = 10_000


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
            return
        # One line ending for all: the same note saved on Windows and on Unix is the same body
        # (and the same content hash), and front matter fences compare equal.
        text = text.replace("\r\n", "\n")
        # Split on "\n" only: str.splitlines also breaks at \v, \f, U+2028..., which editors do
        # not count as lines, and every line number below must match the editor's.
        lines = text.split("\n")

        front: _FrontMatter | None = None
        body, body_index, body_line = text, 0, 1
        if markdown and lines[0].rstrip() == _FRONT_MATTER_FENCE:
            close = next(
                (i for i in range(1, len(lines)) if lines[i].rstrip() == _FRONT_MATTER_FENCE), None
            )
            if close is None:
                self.reject(
                    display, 1, "front matter opened on line 1 is never closed by a '---' line"
                )
                return
            nul_line = _nul_line(lines[: close + 1])
            if nul_line:
                self.reject(display, nul_line, "NUL character in front matter")
                return
            try:
                front = _FrontMatter.parse("\n".join(lines[1:close]), first_line=2)
            except _FrontMatterRejected as rejected:
                self.reject(display, rejected.line, rejected.reason)
                return
            body_index = close + 1
            body = "\n".join(lines[body_index:])
            # An empty body is reported at the closing fence when nothing follows it.
            body_line = min(body_index + 1, len(lines) - (1 if text.endswith("\n") else 0))

        nul_line = _nul_line(lines)
        if nul_line:
            self.reject(
                display, nul_line, "NUL character in 'body' (PostgreSQL text cannot hold it)"
            )
            return

        stem = title_from_name(os.path.basename(shown_path(display)))
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
            heading = _first_heading(lines[body_index:]) if markdown else None
            if heading is not None:
                offset, title = heading
                value_lines["title"] = body_index + offset + 1
            else:
                title = stem
            # A title the file did not state is a guess; a long one is shortened, not fatal.
            if len(title) > MAX_TITLE_CHARS:
                title = title[: MAX_TITLE_CHARS - 1] + "…"
            values["title"] = title

        values.setdefault("memory", self.memory)
        if values["memory"] is None:
            where = " or set 'memory' in front matter" if markdown else ""
            self.reject(display, 1, f"no memory: pass --memory{where}")
            return
        values.setdefault("kind", self.kind or DEFAULT_KIND)
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

    def _modified_at(self, mtime: float) -> datetime:
        try:
            modified = datetime.fromtimestamp(mtime, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return self.now
        return min(modified, self.now)


@dataclass
class _FrontMatter:
    values: dict[str, Any]  # the recognised keys that were set (null means not set)
    lines: dict[str, int]  # file line of each top-level key
    metadata: dict[str, Any]  # every other key, made JSON-serialisable

    @classmethod
    def parse(cls, source: str, *, first_line: int) -> _FrontMatter:
        loader = node = None
        try:
            loader = yaml.SafeLoader(source)
            node = loader.get_single_node()
            if node is not None:
                _check_expansion(node, first_line)
            data = loader.construct_document(node) if node is not None else None
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            line = first_line + mark.line if mark is not None else first_line
            problem = error.problem or error.context or "invalid YAML"
            raise _FrontMatterRejected(f"malformed front matter: {problem}", line) from None
        except (yaml.YAMLError, ValueError, TypeError, RecursionError) as error:
            # e.g. "date: 2024-13-45" looks like a timestamp to YAML and fails to construct.
            line = _failing_key_line(node, first_line) if node is not None else first_line
            raise _FrontMatterRejected(f"malformed front matter: {error}", line) from None
        finally:
            if loader is not None:
                loader.dispose()

        if data is None:
            return cls({}, {}, {})
        if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
            raise _FrontMatterRejected(
                f"front matter must be keys and values, got {json_type(data)}", first_line
            )

        lines: dict[str, int] = {}
        raw: dict[str, Any] = {}
        plain_numbers: dict[str, str] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = first_line + key_node.start_mark.line
            if key in lines:
                # YAML keeps the last value, but the raw scalars above would keep another one:
                # refuse rather than guess which the writer meant (JSONL lines refuse it too).
                raise _FrontMatterRejected(
                    f"front matter key '{key}' repeated (first on line {lines[key]})", line
                )
            lines[key] = line
            # Names and titles are text as written: YAML would read `title: 1984` as a number
            # and `memory: yes` as true.
            if (
                isinstance(value_node, yaml.ScalarNode)
                and value_node.tag != "tag:yaml.org,2002:null"
            ):
                raw[key] = value_node.value
                if (
                    key == "salience"
                    and value_node.style is None
                    and value_node.tag.endswith(":str")
                ):
                    plain_numbers[key] = value_node.value

        if "occurred_at" in data and "date" in data:
            raise _FrontMatterRejected(
                "set 'occurred_at' or 'date' in front matter, not both",
                max(lines.get("occurred_at", first_line), lines.get("date", first_line)),
            )

        values: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        for key, value in data.items():
            name = str(key)
            if name in _FRONT_MATTER_KEYS:
                if value is None:
                    continue
                target = "occurred_at" if name == "date" else name
                if target in ("title", "memory", "kind") and name in raw:
                    value = raw[name]
                elif name in plain_numbers:
                    # YAML 1.1 reads an unquoted 1e-3 (no dot) as text; it is written as a number.
                    value = _plain_number(plain_numbers[name])
                values[target] = value
                if target != name:
                    lines[target] = lines.get(name, first_line)
            else:
                try:
                    metadata[name] = _jsonable(value)
                except _NotJson as error:
                    raise _FrontMatterRejected(
                        f"front matter '{name}' holds {error.what}, which metadata cannot store",
                        lines.get(name, first_line),
                    ) from None
        return cls(values, lines, metadata)


def _failing_key_line(node: yaml.Node, first_line: int) -> int:
    """The line of the top-level key whose value YAML cannot build (the document failed as a
    whole, which does not say where); the first line when no single value fails alone."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            try:
                yaml.constructor.SafeConstructor().construct_document(value_node)
            except (yaml.YAMLError, ValueError, TypeError, RecursionError):
                return first_line + key_node.start_mark.line
    return first_line


def _plain_number(text: str) -> Any:
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def title_from_name(name: str) -> str:
    """A file's name as a title: without its extension, and without what a reader cannot see
    (bidirectional overrides and isolates that make ``txt.exe`` read as ``exe.txt``, zero-width
    and control characters: ``sanitize.one_line``). The whole name when that leaves nothing."""
    return one_line(os.path.splitext(name)[0]) or one_line(name) or "untitled"


def shown_path(path: str) -> str:
    """``path`` as printable, storable text: bytes of a file name that are not UTF-8 (which
    Python carries as lone surrogates) are shown as ``\\xff`` escapes."""
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that no file system byte produced
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def _check_expansion(node: yaml.Node, first_line: int) -> None:
    """Reject front matter that refers to itself or expands past MAX_FRONT_MATTER_VALUES
    through aliases, at the line of the top-level key where that happens."""
    sizes: dict[int, int] = {}
    pairs = node.value if isinstance(node, yaml.MappingNode) else [(node, node)]
    total = 0
    for key_node, value_node in pairs:
        line = first_line + key_node.start_mark.line
        try:
            total += _expanded_size(key_node, sizes, set()) + _expanded_size(
                value_node, sizes, set()
            )
        except _SelfReference:
            raise _FrontMatterRejected(
                "front matter refers to itself through a YAML alias", line
            ) from None
        except RecursionError:
            raise _FrontMatterRejected("malformed front matter: nested too deeply", line) from None
        if total > MAX_FRONT_MATTER_VALUES:
            # Each node is walked once (``sizes`` holds those walked): a total beyond their
            # number is values repeated by aliases; otherwise the file itself holds that many.
            if total > len(sizes):
                reason = f"front matter expands to more than {MAX_FRONT_MATTER_VALUES} values through YAML aliases"
            else:
                reason = (
                    f"front matter holds more than {MAX_FRONT_MATTER_VALUES} keys and values "
                    "(it is for a few fields; put long data in the body)"
                )
            raise _FrontMatterRejected(reason, line)


class _SelfReference(Exception):
    pass


def _expanded_size(node: yaml.Node, sizes: dict[int, int], active: set[int]) -> int:
    # An alias is the same node object met again: memoised by identity, the walk is linear in
    # the file's size while the count is that of the expanded document.
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in active:
        raise _SelfReference
    active.add(key)
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [item for pair in node.value for item in pair]
    else:
        children = []
    total = 1
    for child in children:
        total += _expanded_size(child, sizes, active)
        if total > MAX_FRONT_MATTER_VALUES:
            break
    active.discard(key)
    sizes[key] = total
    return total


def _first_heading(lines: list[str]) -> tuple[int, str] | None:
    """(index, text) of the first non-empty ATX heading outside fenced code, if any."""
    fence: str | None = None
    for index, line in enumerate(lines):
        fence_match = _CODE_FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip(" `~\t"):
                fence = None
            continue
        if fence is not None:
            continue
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


def episode_from_document(
    data: bytes,
    suffix: str,
    name: str,
    *,
    source: str,
    memory: str | None,
    kind: str | None = None,
    modified_at: datetime,
    file_key: str | None = None,
) -> EpisodeDraft:
    """One ``doc`` episode from the bytes of an HTML, PDF or DOCX file called ``name``, or
    ``DocumentRejected`` with the reason. The title is the document's own (metadata, else its
    first heading), else the file name; the time is the document's own, else ``modified_at``.
    The body starts with the title as a ``#`` heading unless the document opens with a heading
    of its own, so every chunk's anchor (``domain.anchors``) names the document it is from."""
    if memory is None:
        raise DocumentRejected("no memory: pass --memory")
    document = read_document(data, suffix)
    title = document.title or title_from_name(name)
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1] + "…"
    if not document.blocks[0].level:
        document.blocks.insert(0, Block(1, title))
    try:
        return make_episode(
            memory=memory,
            kind=kind or DOCUMENT_KIND,
            title=title,
            occurred_at=document.occurred_at or modified_at,
            body=document.body,
            source=source,
            metadata={"format": suffix.lower().lstrip("."), **document.metadata},
            file_key=file_key,
        )
    except InvalidEpisode as error:
        raise DocumentRejected(str(error)) from None


def episode_from_object(
    value: object,
    location: str,
    *,
    memory: str | None = None,
    kind: str | None = None,
    memory_hint: str = "",
) -> EpisodeDraft:
    """One JSONL-shaped object (a parsed line, or an item the Python/HTTP API was given) as a
    draft, or ``LineRejected`` with the reason; ``memory``/``kind`` fill fields it leaves out and
    ``location`` is the default ``source``. Every way in validates episodes by this one rule."""
    if not isinstance(value, dict):
        raise LineRejected(f"expected a JSON object, got {json_type(value)}")
    reject_unknown_fields(value, _JSONL_FIELDS)
    # null means "not given" (``given``), so an exported "salience": null gets the default.
    fields = {name: item for name, item in value.items() if item is not None}
    for name, default in (("memory", memory), ("kind", kind)):
        if given(value, name, default) is not None:
            fields[name] = given(value, name, default)
    missing = [name for name in JSONL_REQUIRED_FIELDS if name not in fields]
    if missing:
        hint = memory_hint if "memory" in missing else ""
        raise LineRejected(_plural("missing field", missing) + hint)
    try:
        return make_episode(
            memory=fields["memory"],
            kind=fields["kind"],
            title=fields["title"],
            occurred_at=fields["occurred_at"],
            body=fields["body"],
            salience=fields.get("salience"),
            source=fields.get("source", location),
            metadata=fields.get("metadata"),
            external_id=fields.get("id"),
        )
    except InvalidEpisode as error:
        raise LineRejected(str(error)) from None


class _NotJson(Exception):
    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


def _jsonable(value: Any) -> Any:
    """A YAML value as plain JSON: dates become ISO 8601 strings, sets become lists."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        # A set has no order of its own; sorting keeps the stored metadata stable run to run.
        try:
            items = sorted(value)
        except TypeError:
            items = sorted(value, key=repr)
        return [_jsonable(item) for item in items]
    if isinstance(value, (bytes, bytearray)):
        raise _NotJson("binary data")
    return value


class _FrontMatterRejected(Exception):
    def __init__(self, reason: str, line: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.line = line


def _plural(what: str, names: list[str]) -> str:
    quoted = ", ".join(f"'{name}'" for name in names)
    return f"{what}{'s' if len(names) > 1 else ''} {quoted}"
