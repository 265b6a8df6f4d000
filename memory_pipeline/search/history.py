"""Search with history: the superseded revisions (DESIGN.md) that hold the query's words, as
results marked superseded, listed after the current ones; and the superseded revisions of
statements (a revised observation or belief, kept retired) the same way.

Superseded revisions leave the chunk index when superseded (``storage.revisions_store``), so no
channel meets them and the default search needs no filter; with history they are matched by
their words alone (``search_store.superseded_matches``) and ranked among themselves.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import psycopg

from memory_pipeline.domain.policies import Policy
from memory_pipeline.search.assembly import statement_result
from memory_pipeline.search.channels.statements import STATEMENT_CHANNELS
from memory_pipeline.search.results import SearchResult, make_snippet
from memory_pipeline.storage import observations_store, search_store
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


def superseded_statements(
    conn: psycopg.Connection,
    memory: str,
    query: str,
    chosen: Policy,
    *,
    until: dt.datetime | None = None,
) -> list[SearchResult]:
    """At most ``chosen.limit`` statements of ``memory`` that a revision superseded (before
    ``until``, when given), sharing words with ``query``, of the kinds whose channels the search
    runs; marked superseded, with the revision that took each one's place."""
    kinds = [STATEMENT_CHANNELS[ch] for ch in chosen.channels if ch in STATEMENT_CHANNELS]
    if not kinds:
        return []
    hits = observations_store.by_words(
        conn, memory, query, kinds=kinds, statuses=("retired",), limit=chosen.limit * 4
    )
    rows = observations_store.rows(conn, memory, [i for i, _ in hits]) if hits else {}
    kept = [
        (i, score)
        for i, score in hits
        if i in rows and (at := rows[i].superseded_at) is not None and (until is None or at < until)
    ][: chosen.limit]
    after = observations_store.successors(conn, memory, [i for i, _ in kept])
    results = []
    for i, score in kept:
        key = f"{rows[i].kind}:{i}"
        result = statement_result(key, rows[i], {}, {key: score}, chosen)
        results.append(
            dataclasses.replace(
                result,
                ranks={ch: None for ch in chosen.channels},
                superseded_at=rows[i].superseded_at,
                superseded_by=after.get(i),
            )
        )
    return results
