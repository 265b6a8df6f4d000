"""Episode drafts and the rules every episode must pass before it is stored."""

from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from memory_pipeline.domain.chunking import content_hash as _content_hash
from memory_pipeline.domain.field_errors import InvalidField
from memory_pipeline.domain.jsonl import json_type

MEMORY_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$")
KIND_RE = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
MAX_BODY_CHARS = 2_000_000
MAX_TITLE_CHARS = 500
# Where an episode came from is a path or a name with a line number, never a document; metadata
# is a few fields about the episode (its text belongs in the body). Both are bounded so that a
# 20 MB value is refused at its line instead of stored and carried in every result.
MAX_SOURCE_CHARS = 8_192
MAX_METADATA_BYTES = 65_536  # as compact UTF-8 JSON
# Deeper metadata is almost certainly a mistake, and a bound keeps the recursive check far from
# Python's recursion limit whatever the caller's stack depth.
MAX_METADATA_DEPTH = 64
DEFAULT_SALIENCE = 0.5
_SMALLEST_REAL = 1.1754943508222875e-38  # the smallest normal float4

# PostgreSQL's text and jsonb cannot hold NUL, and UTF-8 cannot encode a lone surrogate (JSON's
# "\ud800" escape produces one); either would fail the insert long after parsing, unlocated.
_UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")


class InvalidEpisode(InvalidField):
    """An episode field breaks a rule: ``field`` is "body", "title", "metadata", "id", ... and
    ``metadata_key`` the top-level metadata key involved, so a parser can point at the line
    that supplied it.
    """

    def __init__(self, field: str, reason: str, *, metadata_key: str | None = None):
        super().__init__(field, reason)
        self.metadata_key = metadata_key


@dataclass(frozen=True)
class EpisodeDraft:
    """A validated episode not yet stored. Build it with ``make_episode``, which checks the rules."""

    memory: str
    kind: str
    title: str
    occurred_at: datetime  # timezone-aware, UTC
    body: str
    salience: float = DEFAULT_SALIENCE
    source: str = ""  # where it came from, e.g. "notes/a.md" or "inbox.jsonl:12"
    # hash=False: a dict cannot be hashed, and drafts are still hashable by their other fields.
    metadata: dict = field(default_factory=dict, hash=False)  # JSON-serialisable
    external_id: str | None = None  # the optional "id" of a JSONL line
    # The source identity (DESIGN.md: revision): "id:<id>" or "file:<path>"; None: its own.
    source_key: str | None = None

    @property
    def content_hash(self) -> str:
        """sha256 hex of the body's UTF-8 bytes: the key that makes ingest idempotent."""
        return _content_hash(self.body)


def _show(value: Any, limit: int = 60) -> str:
    """A short JSON-looking rendering of a bad value, for messages people read."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _printable(text: str) -> str:
    # A reason is printed on one line and may be logged or stored: no raw newlines or NULs in it.
    return "".join(
        char
        if char.isprintable()
        else char.encode("unicode_escape", "backslashreplace").decode("ascii")
        for char in text
    )


def _quoted(text: str, limit: int = 60) -> str:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return "'" + _printable(shown) + "'"


def _check_storable(field_name: str, text: str, *, metadata_key: str | None = None) -> None:
    bad = _UNSTORABLE_RE.search(text)
    if bad is None:
        return
    if bad.group() == "\x00":
        reason = f"NUL character in {_quoted(field_name)} (PostgreSQL text cannot hold it)"
    else:
        reason = f"lone surrogate character in {_quoted(field_name)} (not valid Unicode text)"
    raise InvalidEpisode(field_name.split(".")[0].split("[")[0], reason, metadata_key=metadata_key)


def _require_text(field_name: str, value: Any) -> str:
    if value is None:
        raise InvalidEpisode(field_name, f"missing {field_name}")
    if not isinstance(value, str):
        raise InvalidEpisode(field_name, f"'{field_name}' must be a string, got {json_type(value)}")
    _check_storable(field_name, value)
    return value


def _require_match(field_name: str, value: Any, pattern: re.Pattern, what: str, rule: str) -> str:
    """``value`` if it is text that ``pattern`` matches whole; else the error names ``what`` and
    the ``rule`` it breaks."""
    value = _require_text(field_name, value)
    if not pattern.fullmatch(value):
        raise InvalidEpisode(field_name, f"invalid {what} {_quoted(value)}: {rule}")
    return value


def validate_memory_name(name: Any) -> str:
    """Return ``name`` if it is a valid memory name, else raise ValueError with the reason."""
    return _require_match(
        "memory",
        name,
        MEMORY_NAME_RE,
        "memory name",
        "use 1 to 128 letters, digits, '.', '_', '@' or '-', starting with a letter or digit",
    )


def validate_kind(kind: Any) -> str:
    """Return ``kind`` if it is a valid episode kind (note, journal, chat, ...), else raise ValueError."""
    return _require_match(
        "kind",
        kind,
        KIND_RE,
        "kind",
        "use 1 to 40 lowercase letters, digits, '_' or '-', starting with a letter",
    )


def parse_timestamp(value: Any) -> datetime:
    """An ISO 8601 date or date-time (or a date/datetime object) as an aware UTC datetime.

    A date alone means midnight UTC; a 'Z' suffix means UTC; a time without an offset is taken
    as UTC, because the pipeline has no other timezone to assume.
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        # Python 3.11 reads an upper-case 'Z' itself but not the lower-case one ISO 8601 allows.
        if text[-1:] in ("z", "Z"):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidEpisode("occurred_at", f"unparseable date: {_quoted(value)}") from None
    else:
        raise InvalidEpisode("occurred_at", f"unparseable date: {_show(value)}")
    if parsed.tzinfo is None or parsed.tzinfo.utcoffset(parsed) is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+03:00 lies before year 1 in UTC
        raise InvalidEpisode("occurred_at", f"unparseable date: {_quoted(str(value))}") from None


def _check_salience(salience: Any) -> float:
    if salience is None:
        return DEFAULT_SALIENCE
    # bool is an int subclass; "salience": true is a mistake, not 1.0.
    if isinstance(salience, bool) or not isinstance(salience, numbers.Real):
        raise InvalidEpisode(
            "salience", f"salience must be a number in [0, 1], got {_show(salience)}"
        )
    # Compared before float(): an integer too large for a float (1 and 400 zeros) is simply out
    # of range, not an OverflowError that would cost the rest of the file.
    # (numbers.Real declares < and <= only: the comparisons are written with those.)
    if salience < 0 or not salience <= 1:
        raise InvalidEpisode("salience", f"salience outside [0, 1]: {_show(salience)}")
    value = float(salience)
    if 0.0 < value < _SMALLEST_REAL:
        # Stored as PostgreSQL real, which refuses a magnitude it would round to zero (and with
        # it the whole insert); as a weight such a salience is zero.
        value = 0.0
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidEpisode("salience", f"salience outside [0, 1]: {_show(salience)}")
    return value


def _clean_metadata(value: Any, path: str, top_key: str | None, depth: int) -> Any:
    """A plain-JSON deep copy of ``value``, or InvalidEpisode naming the path that breaks JSON."""
    if depth > MAX_METADATA_DEPTH:
        raise InvalidEpisode(
            "metadata",
            f"metadata nested too deeply (more than {MAX_METADATA_DEPTH} levels)",
            metadata_key=top_key,
        )
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        # jsonb has no NaN or Infinity.
        if not math.isfinite(value):
            raise InvalidEpisode(
                "metadata", f"'{path}' is not a finite number", metadata_key=top_key
            )
        return value
    if isinstance(value, str):
        _check_storable(path, value, metadata_key=top_key)
        return value
    if isinstance(value, (list, tuple)):
        return [
            _clean_metadata(item, f"{path}[{i}]", top_key, depth + 1)
            for i, item in enumerate(value)
        ]
    if isinstance(value, dict):
        cleaned = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidEpisode(
                    "metadata",
                    f"metadata keys must be strings, got {_show(key)} in '{path}'",
                    metadata_key=top_key,
                )
            key_path = f"{path}.{key}"
            here = key if top_key is None else top_key
            _check_storable(key_path, key, metadata_key=here)
            cleaned[key] = _clean_metadata(item, key_path, here, depth + 1)
        return cleaned
    raise InvalidEpisode(
        "metadata", f"'{path}' is not JSON (got {json_type(value)})", metadata_key=top_key
    )


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _check_metadata_size(metadata: dict) -> None:
    """InvalidEpisode naming the biggest top-level key when ``metadata`` is over the limit."""
    size = _json_bytes(metadata)
    if size <= MAX_METADATA_BYTES:
        return
    sizes = {key: _json_bytes(value) for key, value in metadata.items()}
    biggest = max(sizes, key=sizes.__getitem__)
    raise InvalidEpisode(
        "metadata",
        f"metadata too large: {size:,} bytes as JSON (at most {MAX_METADATA_BYTES:,}); "
        f"'metadata.{biggest}' alone is {sizes[biggest]:,}",
        metadata_key=biggest,
    )


def _check_external_id(external_id: Any) -> str | None:
    if external_id is None:
        return None
    # Exports often number their records; the number's text is as good an id as any.
    if isinstance(external_id, int) and not isinstance(external_id, bool):
        return str(external_id)
    if not isinstance(external_id, str):
        raise InvalidEpisode(
            "id", f"'id' must be a string or an integer, got {json_type(external_id)}"
        )
    _check_storable("id", external_id)
    if not external_id.strip():
        raise InvalidEpisode("id", "empty 'id'")
    return external_id


def make_episode(
    *,
    memory: Any,
    kind: Any,
    title: Any,
    occurred_at: Any,
    body: Any,
    salience: Any = None,
    source: Any = "",
    metadata: Any = None,
    external_id: Any = None,
    file_key: str | None = None,
) -> EpisodeDraft:
    """Check every rule and return the draft, or raise InvalidEpisode (a ValueError) with one reason.

    The title is stored without surrounding whitespace; the body is stored exactly as given.
    The source identity (``source_key``) is the ``external_id`` when there is one, else
    ``file_key`` (a file's path within the folder it was ingested from, or a document's name).
    """
    memory = validate_memory_name(memory)
    kind = validate_kind(kind)

    title = _require_text("title", title).strip()
    if not title:
        raise InvalidEpisode("title", "empty title")
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidEpisode(
            "title", f"title too long: {len(title)} characters (at most {MAX_TITLE_CHARS})"
        )

    if occurred_at is None:
        raise InvalidEpisode("occurred_at", "missing occurred_at")
    occurred = parse_timestamp(occurred_at)

    body = _require_text("body", body)
    if not body.strip():
        raise InvalidEpisode("body", "empty body")
    if len(body) > MAX_BODY_CHARS:
        raise InvalidEpisode(
            "body", f"body too long: {len(body)} characters (at most {MAX_BODY_CHARS})"
        )

    salience_value = _check_salience(salience)
    source = _require_text("source", source if source is not None else "")
    if len(source) > MAX_SOURCE_CHARS:
        raise InvalidEpisode(
            "source", f"source too long: {len(source):,} characters (at most {MAX_SOURCE_CHARS:,})"
        )

    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise InvalidEpisode(
            "metadata", f"metadata must be a JSON object, got {json_type(metadata)}"
        )
    cleaned_metadata = _clean_metadata(metadata, "metadata", None, 0)
    _check_metadata_size(cleaned_metadata)

    return EpisodeDraft(
        memory=memory,
        kind=kind,
        title=title,
        occurred_at=occurred,
        body=body,
        salience=salience_value,
        source=source,
        metadata=cleaned_metadata,
        external_id=(checked_id := _check_external_id(external_id)),
        source_key=source_key(checked_id, file_key),
    )


def source_key(external_id: str | None, file_key: str | None) -> str | None:
    """The source identity of an episode: its id, else its file, else none (its own)."""
    if external_id is not None:
        return "id:" + external_id
    if file_key:
        _check_storable("source", file_key)
        return "file:" + file_key
    return None
