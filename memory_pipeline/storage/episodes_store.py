"""Storing episodes and reading a day's episodes back (SQL in ``sql/queries``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.domain.episodes import EpisodeDraft
from memory_pipeline.storage import revisions_store
from memory_pipeline.storage.paths import query


@dataclass
class StoreReport:
    """New episode ids (input order), bodies already stored, and the revisions: ``revised`` of
    the new ids are new revisions of a stored source, ``superseded_ids`` the revisions they
    replaced (out of the index now); ``restored`` older revisions made current again."""

    inserted_ids: list[int] = field(default_factory=list)
    duplicates: int = 0
    revised: int = 0
    restored: int = 0
    superseded_ids: list[int] = field(default_factory=list)

    @property
    def inserted(self) -> int:
        return len(self.inserted_ids)


def store_episodes(
    conn: psycopg.Connection, drafts: Iterable[EpisodeDraft], ingest_day: dt.date
) -> StoreReport:
    """Insert drafts in one transaction; bodies already in their memory count as duplicates.

    A draft of a source (``source_key``) whose current revision has another body is a new
    revision (``revisions_store.store_revision``): inserted, the old one superseded and taken out
    of the index in this same transaction, so no search sees both.
    One transaction for the set: a database failure stores none of it (``ingest`` calls this a
    batch at a time; a retry of the same files is harmless: idempotent).
    Rows are stored in (memory, source, content hash) order, whatever the input order: two ingests
    of the same rows then wait for each other's locks and uniqueness checks in one order.
    ``inserted_ids`` keeps the input order.
    """
    report = StoreReport()
    listed = list(drafts)
    # Stable: of two drafts with the same body in one memory, the first in the input is stored;
    # the revisions of one source are stored in input order, so the last one is current.
    order = sorted(range(len(listed)), key=lambda i: _store_order(listed[i], i))
    inserted: list[tuple[int, int]] = []  # (input position, id)
    with conn.transaction():
        for position in order:
            draft = listed[position]
            outcome = revisions_store.store_revision(conn, draft, insert_params(draft, ingest_day))
            if outcome.inserted_id is not None:
                inserted.append((position, outcome.inserted_id))
                report.revised += 1 if outcome.superseded is not None else 0
            elif outcome.restored:
                report.restored += 1
            else:
                report.duplicates += 1
            if outcome.superseded is not None:
                report.superseded_ids.append(outcome.superseded)
        revisions_store.drop_from_index(conn, report.superseded_ids)
    report.inserted_ids = [episode_id for _, episode_id in sorted(inserted)]
    return report


def _store_order(draft: EpisodeDraft, position: int) -> tuple:
    if draft.source_key is None:
        return (draft.memory, 1, draft.content_hash, 0)
    return (draft.memory, 0, draft.source_key, position)


def insert_params(draft: EpisodeDraft, ingest_day: dt.date) -> dict:
    """The parameters of ``insert_episode.sql`` for ``draft``."""
    return {
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
        "source_key": draft.source_key,
    }


def day_summary(conn: psycopg.Connection, day: dt.date) -> list[dict]:
    """Per (memory, kind): episodes and characters ingested on ``day``."""
    rows = conn.execute(query("day_summary"), {"day": day}).fetchall()
    return [
        {"memory": m, "kind": k, "episodes": n, "characters": int(c or 0)} for m, k, n, c in rows
    ]


def day_preview(conn: psycopg.Connection, day: dt.date, limit: int = 5) -> list[dict]:
    rows = conn.execute(
        query("day_episode_preview"),
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
        query("episode_get"),
        (episode_id,),
    ).fetchone()
    if row is None:
        return None
    return _document(row, ("body", "chunks"))


def episode_header(conn: psycopg.Connection, episode_id: int) -> dict | None:
    """One episode's fields as ``get_episode`` names them, without the body: ``characters`` (its
    length) and ``contentHash`` instead; None when there is no such episode."""
    row = conn.execute(query("episode_header"), {"id": episode_id}).fetchone()
    if row is None:
        return None
    return _document(row, ("characters", "contentHash", "chunks"))


# The fields every episode document starts with, in the order the queries select them.
_EPISODE_KEYS = (
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
)


def _document(row: tuple, rest: tuple[str, ...]) -> dict:
    document = dict(zip(_EPISODE_KEYS + rest, row))
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
