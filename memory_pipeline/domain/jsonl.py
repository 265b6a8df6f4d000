"""Reading one JSON object per line, with plain, located reasons for what is wrong."""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterable, Iterator, Sequence
from typing import Any


class LineRejected(ValueError):
    """One line that cannot be used; ``reason`` (also ``str(error)``) says why, without location."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def json_type(value: Any) -> str:
    """The JSON name of a value's type ("null", "number", "array"...), else the Python one."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, numbers.Number):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def given(value: Any, name: str, default: Any = None) -> Any:
    """``value[name]`` when ``value`` is an object that gives it, else ``default``: a missing
    field and a null one both mean "not given" (an exported ``"salience": null`` takes the
    default). The one rule for filling fields, so a check made on the filled value (a token's
    scope on an item's memory) is made on what is stored."""
    if isinstance(value, dict) and value.get(name) is not None:
        return value[name]
    return default


def iter_lines(data: bytes | Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) for each non-blank line, without its LF or CRLF ending.

    ``data`` is the bytes of a file, or a file opened in binary mode (read a line at a time, so
    a large file is never in memory whole). The bytes are split, not decoded text, so invalid
    UTF-8 on one line costs only that line. A byte order mark is the caller's to remove first.
    """
    for number, raw in enumerate(_split(data) if isinstance(data, bytes) else data, start=1):
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        yield number, raw


def _split(data: bytes) -> Iterator[bytes]:
    """The lines of ``data`` one at a time (no list of every line of a large file)."""
    start = 0
    while start <= len(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        yield data[start:end]
        start = end + 1


def parse_object_line(raw: bytes) -> dict[str, Any]:
    """The JSON object on one line (UTF-8, no NUL, no repeated key), or LineRejected."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LineRejected(
            f"invalid UTF-8 at byte {error.start + 1} of the line (0x{raw[error.start]:02x})"
        ) from None
    if "\x00" in text:
        raise LineRejected(
            f"NUL character at column {text.index(chr(0)) + 1} (PostgreSQL text cannot hold it)"
        )
    try:
        value = json.loads(text, object_pairs_hook=_reject_duplicate_keys)
    except json.JSONDecodeError as error:
        raise LineRejected(f"malformed JSON: {error.msg} at column {error.colno}") from None
    except _DuplicateKey as error:
        raise LineRejected(f"malformed JSON: duplicate key '{error.key}'") from None
    except RecursionError:
        raise LineRejected("malformed JSON: nested too deeply") from None
    except ValueError:  # the only other ValueError: an integer past Python's digit limit
        raise LineRejected("malformed JSON: a number has too many digits") from None
    if not isinstance(value, dict):
        raise LineRejected(f"not a JSON object (got {json_type(value)})")
    return value


def reject_unknown_fields(value: dict[str, Any], allowed: Sequence[str], suffix: str = "") -> None:
    """LineRejected naming every key of ``value`` not in ``allowed``, with ``suffix`` appended.

    Unknown fields are rejected rather than kept: a typo ("titel") must not be stored silently
    while the real field goes missing or falls back to a default.
    """
    unknown = [name for name in value if name not in allowed]
    if unknown:
        quoted = ", ".join(f"'{name}'" for name in unknown)
        raise LineRejected(f"unknown field{'s' if len(unknown) > 1 else ''} {quoted}{suffix}")


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json keeps the last of two equal keys; two "body" fields on one line is a mistake to show.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result
