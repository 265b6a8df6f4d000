"""Revisions of one source (DESIGN.md): storing a changed body as a new revision, taking the
superseded one out of the index, and reading a memory's episodes and a source's history back.

A source is ``episodes.source_key`` (migration 0031); its current revision is the row without
``superseded_at``, at most one per (memory, source) by a partial unique index.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import psycopg

from memory_pipeline.domain.episodes import EpisodeDraft
from memory_pipeline.storage import keyword_stats_store
from memory_pipeline.storage.paths import query


@dataclass(frozen=True)
class Outcome:
    """What storing one draft did: the new row's id (None: nothing inserted), the revision it
    superseded, and whether an older revision's body became current again instead (``restored``)."""

    inserted_id: int | None = None
    superseded: int | None = None
    restored: bool = False


def store_revision(conn: psycopg.Connection, draft: EpisodeDraft, params: dict) -> Outcome:
    """Store ``draft`` (``params``: ``insert_episode.sql``'s) inside the caller's transaction.

    No source: inserted unless its body is stored (idempotent, as always). A source whose
    current revision has the same body: nothing. Another body: a new revision superseding the
    current one (``superseded_at`` now: the memory's own time). A body the memory holds already:
    an older revision of this source becomes current again; an episode with no source adopts
    this one (what migration 0031 could not derive: a file's path within its folder); another
    source's episode leaves everything as it was (bodies are stored once per memory).
    """
    insert = query("insert_episode")
    if draft.source_key is None:
        row = conn.execute(insert, params).fetchone()
        return Outcome(row[0] if row else None)
    # Locked as an index pass locks the rows it writes: one of them writing this revision's
    # chunks finishes first (and they are dropped below), one starting later skips it.
    current = conn.execute(
        query("revision_current_lock"),
        (draft.memory, draft.source_key),
    ).fetchone()
    if current is not None and current[1] == draft.content_hash:
        return Outcome()
    old = current[0] if current is not None else None
    if old is not None:  # first, so that the new row can be the source's current one
        conn.execute("UPDATE episodes SET superseded_at = now() WHERE id = %s", (old,))
    row = conn.execute(insert, params).fetchone()
    if row is not None:
        if old is not None:
            _link(conn, old, row[0])
        return Outcome(row[0], old)
    same = conn.execute(
        query("revision_same_content_lock"),
        (draft.memory, draft.content_hash),
    ).fetchone()
    if same is not None and same[1] == draft.source_key and same[2] is not None:
        conn.execute(
            "UPDATE episodes SET superseded_at = NULL, superseded_by = NULL WHERE id = %s",
            (same[0],),
        )
        if old is not None:
            _link(conn, old, same[0])
        return Outcome(None, old, restored=True)
    if old is not None:  # nothing takes its place: it stays current
        conn.execute("UPDATE episodes SET superseded_at = NULL WHERE id = %s", (old,))
    elif same is not None and same[1] is None and same[2] is None:
        conn.execute(
            "UPDATE episodes SET source_key = %s WHERE id = %s", (draft.source_key, same[0])
        )
    return Outcome()


def _link(conn: psycopg.Connection, old: int, new: int) -> None:
    """``new`` took ``old``'s place when ``old`` was superseded (migration 0034: as of a date)."""
    conn.execute("UPDATE episodes SET superseded_by = %s WHERE id = %s", (new, old))
    conn.execute(query("revision_current_from"), (old, new))


def drop_from_index(conn: psycopg.Connection, episode_ids: list[int]) -> int:
    """Take superseded revisions out of every search channel, keeping their episode rows: their
    chunks (champion rows by cascade), entity mentions and extracted names, the vectors no
    remaining chunk of the memory shares, and their share of the keyword statistics. A search
    then never meets them, with no filter on its hot path. Returns the chunk rows deleted."""
    if not episode_ids:
        return 0
    chunk_ids = conn.execute(
        query("revision_chunks_by_memory"),
        (episode_ids,),
    ).fetchall()
    conn.execute("DELETE FROM entity_mentions WHERE episode_id = ANY(%s)", (episode_ids,))
    conn.execute("DELETE FROM episode_names WHERE episode_id = ANY(%s)", (episode_ids,))
    if not chunk_ids:  # never indexed: nothing else of them is anywhere
        return 0
    keyword_stats_store.remove_chunks(conn, episode_ids)  # before the chunks go: it reads them
    deleted = conn.execute("DELETE FROM chunks WHERE episode_id = ANY(%s)", (episode_ids,)).rowcount
    for memory, ids in chunk_ids:
        conn.execute(query("forget_vectors"), {"memory": memory, "chunk_ids": ids})
    return deleted


def _source(source_key: str | None) -> str | None:
    """The source identity as people read it: the id or the file path, without its prefix."""
    return None if source_key is None else source_key.partition(":")[2]


@dataclass(frozen=True)
class EpisodeHead:
    """What a listing and a history say of each episode (``source``: the stored location;
    ``source_key``: its identity, None for its own)."""

    id: int
    title: str
    kind: str
    occurred_at: dt.datetime
    ingested_at: dt.datetime
    source: str
    source_key: str | None

    def head_json(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "kind": self.kind,
            "occurredAt": self.occurred_at.isoformat(),
            "ingestedAt": self.ingested_at.isoformat(),
            "source": self.source,
        }


@dataclass(frozen=True)
class ListedEpisode(EpisodeHead):
    """A current episode in a memory's listing, with how many revisions its source has had."""

    revisions: int

    def to_json(self) -> dict:
        return {
            **self.head_json(),
            "sourceId": _source(self.source_key),
            "revisions": self.revisions,
        }


def listing(
    conn: psycopg.Connection, memory: str, *, limit: int, before: int | None = None
) -> list[ListedEpisode]:
    """The memory's current episodes, newest first (``episode_listing.sql``); ``before``: only
    those with a smaller id (the next page after an id)."""
    rows = conn.execute(
        query("episode_listing"), {"memory": memory, "limit": limit, "before": before}
    ).fetchall()
    return [ListedEpisode(*row) for row in rows]


@dataclass(frozen=True)
class Revision(EpisodeHead):
    """One revision of a source: ``superseded_at`` None for the current one."""

    memory: str
    superseded_at: dt.datetime | None
    superseded_by: int | None
    characters: int

    def to_json(self) -> dict:
        return {
            **self.head_json(),
            "current": self.superseded_at is None,
            "supersededAt": self.superseded_at.isoformat() if self.superseded_at else None,
            "supersededBy": self.superseded_by,
            "characters": self.characters,
        }


def history(conn: psycopg.Connection, episode_id: int) -> list[Revision]:
    """Every revision of ``episode_id``'s source, newest first; [] when there is no such episode."""
    return [Revision(*row) for row in conn.execute(query("episode_history"), {"id": episode_id})]
