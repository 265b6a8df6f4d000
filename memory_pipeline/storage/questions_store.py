"""Labelled questions (``retrieval_questions``) and the figures of their scorings
(``retrieval_quality``), migration 0035."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.domain.quality import Expectation
from memory_pipeline.storage.paths import query


@dataclass(frozen=True)
class StoredQuestion:
    id: int
    memory: str
    question: str
    expect: Expectation
    expected: str | None  # what it expects, for people: a title or a statement's text
    author: str
    created_at: dt.datetime

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "memory": self.memory,
            "question": self.question,
            "expect": str(self.expect),
            "expected": self.expected,
            "author": self.author,
            "createdAt": self.created_at.isoformat(),
        }


@dataclass(frozen=True)
class Target:
    """What answers one question, as search results name it."""

    question_id: int
    episode_ids: frozenset[int]
    statement_key: str | None

    def matches_result(self, episode_id: int | None, key: str, statement: bool) -> bool:
        if statement:
            return key == self.statement_key
        return episode_id is not None and episode_id in self.episode_ids


def target_exists(conn: psycopg.Connection, memory: str, expect: Expectation) -> bool:
    """Whether the episode, source or statement a question expects is one of ``memory``'s."""
    if expect.episode_id is not None:
        statement = "SELECT EXISTS (SELECT 1 FROM episodes WHERE id = %s AND memory = %s)"
        value: object = expect.episode_id
    elif expect.source_key is not None:
        statement = "SELECT EXISTS (SELECT 1 FROM episodes WHERE source_key = %s AND memory = %s)"
        value = expect.source_key
    else:
        statement = "SELECT EXISTS (SELECT 1 FROM observations WHERE id = %s AND memory = %s)"
        value = expect.observation_id
    row = conn.execute(statement, (value, memory)).fetchone()
    return bool(row and row[0])


def episodes_titled(conn: psycopg.Connection, memory: str, title: str) -> list[int]:
    """The current episodes of ``memory`` with exactly this title (a labelled set written
    against titles, like the sample corpus's, resolves through it)."""
    rows = conn.execute(
        query("questions_episodes_titled"),
        (memory, title),
    ).fetchall()
    return [r[0] for r in rows]


def save(
    conn: psycopg.Connection, memory: str, question: str, expect: Expectation, author: str
) -> tuple[int, bool]:
    """Store a question (one text per memory: saving it again points it at ``expect``):
    (its id, whether it was new)."""
    row = conn.execute(
        query("questions_save"),
        (memory, question, expect.episode_id, expect.source_key, expect.observation_id, author),
    ).fetchone()
    assert row is not None
    return row[0], bool(row[1])


def list_questions(conn: psycopg.Connection, memory: str | None = None) -> list[StoredQuestion]:
    rows = conn.execute(query("questions_list"), {"memory": memory}).fetchall()
    return [
        StoredQuestion(
            id=r[0],
            memory=r[1],
            question=r[2],
            expect=Expectation(episode_id=r[3], source_key=r[4], observation_id=r[5]),
            expected=r[8],
            author=r[6],
            created_at=r[7],
        )
        for r in rows
    ]


def remove(conn: psycopg.Connection, memory: str, ids: list[int]) -> list[int]:
    """Delete these questions of ``memory``: the ids deleted (others' ids are not touched)."""
    rows = conn.execute(
        "DELETE FROM retrieval_questions WHERE memory = %s AND id = ANY(%s) RETURNING id",
        (memory, ids),
    ).fetchall()
    return sorted(r[0] for r in rows)


def memories_with_questions(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute("SELECT DISTINCT memory FROM retrieval_questions ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def targets(conn: psycopg.Connection, memory: str) -> dict[int, Target]:
    rows = conn.execute(query("questions_targets"), {"memory": memory}).fetchall()
    return {r[0]: Target(r[0], frozenset(r[1]), r[2]) for r in rows}


def chunk_episodes(
    conn: psycopg.Connection, memory: str, chunk_ids: list[str]
) -> dict[str, frozenset[int]]:
    """The episodes of ``memory`` holding each chunk (a chunk id is its text's: episodes with
    the same paragraph share it)."""
    found: dict[str, set[int]] = {}
    for chunk_id, episode_id in conn.execute(
        "SELECT chunk_id, episode_id FROM chunks WHERE memory = %s AND chunk_id = ANY(%s)",
        (memory, chunk_ids),
    ):
        found.setdefault(chunk_id, set()).add(episode_id)
    return {k: frozenset(v) for k, v in found.items()}


def record(
    conn: psycopg.Connection,
    memory: str,
    *,
    profile: str | None,
    generation: int | None,
    questions: int,
    figures: dict,
) -> dt.datetime:
    row = conn.execute(
        query("quality_record"),
        (memory, profile, generation, questions, Jsonb(figures)),
    ).fetchone()
    assert row is not None
    return row[0]


def latest(conn: psycopg.Connection, memory: str | None = None) -> list[dict]:
    """The latest scoring of each memory (or of ``memory``), as the APIs report it."""
    rows = conn.execute(query("quality_latest"), {"memory": memory}).fetchall()
    return [
        {
            "memory": r[0],
            "measuredAt": r[1].isoformat(),
            "profile": r[2],
            "generation": r[3],
            "questions": r[4],
            "figures": r[5],
        }
        for r in rows
    ]


def latest_of_generation(
    conn: psycopg.Connection, memory: str, profile: str, generation: int
) -> tuple[dt.datetime, dict] | None:
    """The latest figures of ``memory`` scored under this profile and generation, or None."""
    row = conn.execute(
        query("quality_latest_of_generation"),
        (memory, profile, generation),
    ).fetchone()
    return None if row is None else (row[0], row[1])


def memories_changed_since(conn: psycopg.Connection, since: dt.datetime | None) -> list[str]:
    """The memories with questions that got episodes or questions after ``since`` (None: every
    memory with questions): what the next scoring should cover."""
    rows = conn.execute(
        query("questions_memories_changed_since"),
        {"since": since},
    ).fetchall()
    return [r[0] for r in rows]
