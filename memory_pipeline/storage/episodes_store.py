"""Storing episodes and reading a day's episodes back (SQL in ``sql/queries``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.domain.episodes import EpisodeDraft
from memory_pipeline.storage.paths import query


@dataclass
class StoreReport:
    inserted_ids: list[int] = field(default_factory=list)
    duplicates: int = 0

    @property
    def inserted(self) -> int:
        return len(self.inserted_ids)


def store_episodes(
    conn: psycopg.Connection, drafts: Iterable[EpisodeDraft], ingest_day: dt.date
) -> StoreReport:
    """Insert drafts in one transaction; bodies already in their memory count as duplicates.

    One transaction for the set: a database failure stores none of it (``ingest`` calls this a
    batch at a time; a retry of the same files is harmless: idempotent).
    Rows are inserted in (memory, content hash) order, whatever the input order: two ingests of
    the same rows then wait for each other's uniqueness check in one order and cannot deadlock.
    ``inserted_ids`` keeps the input order.
    """
    report = StoreReport()
    sql = query("insert_episode")
    listed = list(drafts)
    # Stable: of two drafts with the same body in one memory, the first in the input is stored.
    order = sorted(range(len(listed)), key=lambda i: (listed[i].memory, listed[i].content_hash))
    inserted: list[tuple[int, int]] = []  # (input position, id)
    with conn.transaction():
        for position in order:
            draft = listed[position]
            row = conn.execute(
                sql,
                {
                    "memory": draft.memory,
                    "kind": draft.kind,
                    "title": draft.title,
                    "occurred_at": draft.occurred_at,
                    "ingest_day": ingest_day,
                    "salience": draft.salience,
                    "source": draft.source,
                    "external_id": draft.external_id,
                    "metadata": Jsonb(draft.metadata),
                    "body": draft.body,
                    "content_hash": draft.content_hash,
                },
            ).fetchone()
            if row is None:
                report.duplicates += 1
            else:
                inserted.append((position, row[0]))
    report.inserted_ids = [episode_id for _, episode_id in sorted(inserted)]
    return report


def day_summary(conn: psycopg.Connection, day: dt.date) -> list[dict]:
    """Per (memory, kind): episodes and characters ingested on ``day``."""
    rows = conn.execute(query("day_summary"), {"day": day}).fetchall()
    return [
        {"memory": m, "kind": k, "episodes": n, "characters": int(c or 0)} for m, k, n, c in rows
    ]


def day_preview(conn: psycopg.Connection, day: dt.date, limit: int = 5) -> list[dict]:
    rows = conn.execute(
        """SELECT id, memory, kind, title, occurred_at, length(body)
           FROM episodes WHERE ingest_day = %s ORDER BY id DESC LIMIT %s""",
        (day, limit),
    ).fetchall()
    return [
        {"id": i, "memory": m, "kind": k, "title": t, "occurred_at": o.isoformat(), "chars": n}
        for i, m, k, t, o, n in rows
    ]


@dataclass(frozen=True)
class MemoryCounts:
    """A memory's counts; ``first_at``/``last_at`` span its episodes' dates (None when it holds
    only statements); ``statements``: its observations and beliefs that are not retired."""

    name: str
    episodes: int
    chunks: int
    first_at: dt.datetime | None
    last_at: dt.datetime | None
    statements: int = 0

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "episodes": self.episodes,
            "chunks": self.chunks,
            "statements": self.statements,
            "firstAt": self.first_at.isoformat() if self.first_at else None,
            "lastAt": self.last_at.isoformat() if self.last_at else None,
        }


def memory_counts(conn: psycopg.Connection) -> list[MemoryCounts]:
    """Every memory that holds an episode or a statement (``memory_names``), by name."""
    return [MemoryCounts(*row) for row in conn.execute(query("memory_counts")).fetchall()]


def memory_names(conn: psycopg.Connection) -> list[str]:
    """Every memory holding an episode or a statement (``search_store.memory_exists``)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT memory FROM episodes UNION SELECT memory FROM observations ORDER BY memory"
        ).fetchall()
    ]


def get_episode(conn: psycopg.Connection, episode_id: int) -> dict | None:
    """One stored episode with its chunk count, or None."""
    row = conn.execute(
        """SELECT e.id, e.memory, e.kind, e.title, e.occurred_at, e.ingested_at, e.ingest_day, e.salience,
                  e.source, e.external_id, e.metadata, e.body,
                  (SELECT count(*) FROM chunks c WHERE c.episode_id = e.id)
           FROM episodes e WHERE e.id = %s""",
        (episode_id,),
    ).fetchone()
    if row is None:
        return None
    keys = (
        "id",
        "memory",
        "kind",
        "title",
        "occurredAt",
        "ingestedAt",
        "ingestDay",
        "salience",
        "source",
        "externalId",
        "metadata",
        "body",
        "chunks",
    )
    document = dict(zip(keys, row))
    for key in ("occurredAt", "ingestedAt", "ingestDay"):
        document[key] = document[key].isoformat()
    return document


def episode_header(conn: psycopg.Connection, episode_id: int) -> dict | None:
    """One episode's fields as ``get_episode`` names them, without the body: ``characters`` (its
    length) and ``contentHash`` instead; None when there is no such episode."""
    row = conn.execute(query("episode_header"), {"id": episode_id}).fetchone()
    if row is None:
        return None
    keys = (
        "id",
        "memory",
        "kind",
        "title",
        "occurredAt",
        "ingestedAt",
        "ingestDay",
        "salience",
        "source",
        "externalId",
        "metadata",
        "characters",
        "contentHash",
        "chunks",
    )
    document = dict(zip(keys, row))
    for key in ("occurredAt", "ingestedAt", "ingestDay"):
        document[key] = document[key].isoformat()
    return document


def chunk_spans(conn: psycopg.Connection, episode_id: int) -> list[tuple[int, int, str]]:
    """The stored chunks of an episode as (start, end, chunk id), in order ([] before indexing)."""
    return [
        (start, end, chunk_id)
        for start, end, chunk_id in conn.execute(
            "SELECT start_char, end_char, chunk_id FROM chunks WHERE episode_id = %s ORDER BY ordinal",
            (episode_id,),
        ).fetchall()
    ]


def body_text(
    conn: psycopg.Connection, episode_id: int, start: int | None = None, end: int | None = None
) -> str | None:
    """The body, or its characters ``start``..``end`` (code points, as chunk offsets count);
    None when the episode is gone."""
    if start is None or end is None:
        row = conn.execute("SELECT body FROM episodes WHERE id = %s", (episode_id,)).fetchone()
    else:
        row = conn.execute(
            "SELECT substr(body, %s, %s) FROM episodes WHERE id = %s",
            (start + 1, end - start, episode_id),
        ).fetchone()
    return None if row is None else row[0]
