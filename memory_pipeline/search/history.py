"""Search with history: the superseded revisions (DESIGN.md) that hold the query's words, as
results marked superseded, listed after the current ones.

Superseded revisions leave the chunk index when superseded (``storage.revisions_store``), so no
channel meets them and the default search needs no filter; with history they are matched by
their words alone (``search_store.superseded_matches``) and ranked among themselves.
"""

from __future__ import annotations

import psycopg

from memory_pipeline.search.results import SearchResult, make_snippet
from memory_pipeline.storage import search_store
from memory_pipeline.storage.search_store import Filters


def superseded_results(
    conn: psycopg.Connection,
    memory: str,
    query: str,
    filters: Filters,
    channels: tuple[str, ...],
    *,
    limit: int,
) -> list[SearchResult]:
    """At most ``limit`` superseded revisions of ``memory`` holding a word of ``query``."""
    return [
        SearchResult(
            episode_id=hit.id,
            chunk_id=f"episode:{hit.id}",
            title=hit.title,
            kind=hit.kind,
            occurred_at=hit.occurred_at,
            snippet=make_snippet(hit.head, query),
            start=0,
            end=len(hit.head),
            text=hit.head,
            score=hit.rank,
            ranks={ch: None for ch in channels},
            superseded_at=hit.superseded_at,
            superseded_by=hit.superseded_by,
        )
        for hit in search_store.superseded_matches(conn, memory, query, filters, limit=limit)
    ]
