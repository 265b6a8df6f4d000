"""What every writer of vectors ends with: the serving generation left fast to search.

``index_pending`` (every index path) and the ``backlog`` asset call ``leave_search_fast`` last,
so what a user's commands leave is indexed without a nightly run: the keyword champion lists
that are missing or stale; the serving generation's HNSW index, built once, CONCURRENTLY, after
the bulk load and under an advisory lock (``hnsw_store.ensure_index``); and ANALYZE once an index
was built. The keyword statistics need nothing here: the writers keep them exact.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from memory_pipeline.indexing.keyword_lists import ListsBeside
from memory_pipeline.storage import champions_store, health_store, hnsw_store, profiles_store
from memory_pipeline.storage.champions_store import ChampionBuild
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.hnsw_store import IndexState


@dataclass
class SearchReady:
    """What ``leave_search_fast`` did for the serving generation."""

    index: IndexState | None = None  # None: nothing serves yet
    keyword_lists: list[ChampionBuild] = field(default_factory=list)
    analyzed: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict:
        state = self.index
        return {
            "hnswIndex": (
                {
                    "name": state.name,
                    "outcome": state.outcome,
                    "rows": state.rows,
                    "buildSeconds": round(state.build_seconds, 3)
                    if state.build_seconds is not None
                    else None,
                }
                if state
                else None
            ),
            "keywordLists": len(self.keyword_lists),
            "analyzed": self.analyzed,
            "seconds": round(self.seconds, 3),
        }


def leave_search_fast(
    db: Database, *, lists: ListsBeside | None = None, keyword_lists: bool = True
) -> SearchReady:
    """Leave the serving generation fast to search (see the module's docstring): the champion
    lists (``lists.finish()`` when the caller built them beside its pass), the HNSW index when it
    is missing, then ANALYZE when it was built. ``keyword_lists=False``: no lists built
    (``memory-pipeline index --no-keyword-lists``)."""
    started = time.perf_counter()
    ready = SearchReady()
    if lists is not None:
        ready.keyword_lists = lists.finish()
    elif keyword_lists:
        with db.connection() as conn:
            ready.keyword_lists = champions_store.refresh_all_champions(conn, stale_only=True)
    with db.connection() as conn:  # autocommit: CREATE INDEX CONCURRENTLY needs it
        profile = profiles_store.active_profile(conn)
        if profile is not None:
            ready.index = hnsw_store.ensure_index(conn, profile, count_rows=False)
            if ready.index.outcome == "built":
                health_store.analyze(conn)
                ready.analyzed = True
    ready.seconds = time.perf_counter() - started
    return ready
