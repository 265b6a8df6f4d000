"""Saving labelled questions: each item read, its memory and expected answer checked, stored
(one text per memory), or rejected with its location; what the CLI's ``questions add`` and
``import``, ``Memory.add_questions``, HTTP and MCP share."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.domain.episodes import validate_memory_name
from memory_pipeline.domain.jsonl import iter_lines, parse_object_line, reject_unknown_fields
from memory_pipeline.domain.quality import Expectation, parse_expectation
from memory_pipeline.domain.sources import Rejection
from memory_pipeline.storage import questions_store
from memory_pipeline.storage.database import Database

MAX_QUESTION_CHARS = 2000
FIELDS = ("memory", "question", "query", "expect", "expect_title")


@dataclass
class QuestionReport:
    """What a save stored: the ids of new and moved questions, and located rejections."""

    saved_ids: list[int] = field(default_factory=list)
    new: int = 0
    rejections: list[Rejection] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "saved": len(self.saved_ids),
            "new": self.new,
            "questionIds": self.saved_ids,
            "rejected": [{"location": r.location, "reason": r.reason} for r in self.rejections],
        }


@dataclass(frozen=True)
class _Item:
    memory: str
    question: str
    expect: Expectation | None
    expect_title: str | None


def _read(item: object, default_memory: str | None) -> _Item:
    """One item: ``question`` (or ``query``), ``memory`` (else the default), and ``expect``
    (``domain.quality.parse_expectation``) or ``expect_title`` (the memory's current episode of
    that exact title). ValueError says what is wrong."""
    if isinstance(item, _Unreadable):
        raise ValueError(item.reason)
    if not isinstance(item, Mapping):
        raise ValueError(f"expected an object, got {type(item).__name__}")
    reject_unknown_fields(dict(item), FIELDS)
    memory = item.get("memory", default_memory)
    if memory is None:
        raise ValueError("no memory: give 'memory' (or --memory)")
    memory = validate_memory_name(memory)
    text = item.get("question", item.get("query"))
    if not isinstance(text, str) or not text.strip():
        raise ValueError("'question' must be a non-empty text")
    if len(text) > MAX_QUESTION_CHARS:
        raise ValueError(f"'question' is longer than {MAX_QUESTION_CHARS} characters")
    has_expect, title = "expect" in item, item.get("expect_title")
    if has_expect == (title is not None):
        raise ValueError(
            "give exactly one of 'expect' (ID, source:KEY, statement:ID) or 'expect_title'"
        )
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ValueError("'expect_title' must be a non-empty text")
    expect = parse_expectation(item["expect"]) if has_expect else None
    return _Item(memory, text.strip(), expect, title)


def save_questions(
    db: Database,
    items: Iterable[tuple[str, object]],
    *,
    memory: str | None = None,
    author: str = "",
) -> QuestionReport:
    """Store (location, item) pairs in one transaction; an item whose memory, episode, source or
    statement does not exist is rejected with its location, the others are stored."""
    report = QuestionReport()
    with db.connection() as conn, conn.transaction():
        for location, raw in items:
            try:
                item = _read(raw, memory)
                expect = item.expect or _by_title(conn, item.memory, item.expect_title or "")
                if not questions_store.target_exists(conn, item.memory, expect):
                    raise ValueError(f"memory {item.memory!r} has no {_named(expect)}")
            except ValueError as exc:
                report.rejections.append(Rejection(location, str(exc)))
                continue
            question_id, new = questions_store.save(
                conn, item.memory, item.question, expect, author
            )
            report.saved_ids.append(question_id)
            report.new += int(new)
    return report


def _by_title(conn, memory: str, title: str) -> Expectation:
    found = questions_store.episodes_titled(conn, memory, title)
    if len(found) != 1:
        how = "no current episode" if not found else f"{len(found)} current episodes"
        raise ValueError(f"memory {memory!r} has {how} titled {title!r}")
    return Expectation(episode_id=found[0])


def _named(expect: Expectation) -> str:
    if expect.episode_id is not None:
        return f"episode {expect.episode_id}"
    if expect.source_key is not None:
        return f"source {expect.source_key!r}"
    return f"observation or belief {expect.observation_id}"


def read_question_file(path: str | Path) -> list[tuple[str, object]]:
    """(location, item) pairs of a JSONL file of questions, or of a JSON array of them (the
    sample corpus's ``questions.json``); a line that is no JSON object is an item that the save
    rejects with its location. OSError when the file cannot be read."""
    shown = str(path)
    data = Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf")
    if data.lstrip().startswith(b"["):
        try:
            items = json.loads(data)
        except ValueError as exc:
            return [(shown, _Unreadable(f"malformed JSON: {exc}"))]
        return [(f"{shown}[{n}]", item) for n, item in enumerate(items)]
    pairs: list[tuple[str, object]] = []
    for number, raw in iter_lines(data):
        try:
            pairs.append((f"{shown}:{number}", parse_object_line(raw)))
        except ValueError as exc:
            pairs.append((f"{shown}:{number}", _Unreadable(str(exc))))
    return pairs


@dataclass(frozen=True)
class _Unreadable:
    """A line or file that is no item: the save rejects it with this reason."""

    reason: str
