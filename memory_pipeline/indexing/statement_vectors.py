"""Statements' vectors: observations and beliefs embedded like chunks, per profile and generation.

The same model, canary and generation as the chunks' (``canary``): ``until_done.index_pending``
runs it after its passes, the Dagster ``statement_vectors`` asset on its own. A new generation
makes every statement pending again.
"""

from __future__ import annotations

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing.canary import check_canary
from memory_pipeline.progress import Progress, ProgressCallback
from memory_pipeline.storage import observations_store, profiles_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import StoredProfile

# Statements read and embedded per round.
EMBED_PASS_LIMIT = 1000


def embed_pending(
    db: Database,
    embedder: Embedder,
    *,
    limit: int = EMBED_PASS_LIMIT,
    on_progress: ProgressCallback | None = None,
) -> int:
    """Embed statements without a vector for the generation ``embedder`` writes (the canary is
    checked first, as for chunks); build that generation's HNSW index over them. Returns how
    many vectors were written; ``on_progress`` gets stage "statement vectors" after each batch."""
    written = 0
    with db.connection() as conn:
        target = profiles_store.writing_target(conn, embedder.profile)
        if target is None:
            return 0  # no chunk was ever embedded with this profile: nothing serves yet
        pending = observations_store.pending_count(conn, target)
        if not pending:
            return 0

        def tell(finished: bool = False) -> None:
            if on_progress is not None:
                total = max(pending, written)
                on_progress(
                    Progress("statement vectors", written, total, "vectors", finished=finished)
                )

        profile = profiles_store.register_profile(conn, embedder.profile).writing()
        check_canary(conn, embedder, profile)
        while True:
            todo = observations_store.pending(conn, profile, limit=limit)
            if not todo:
                break
            for start in range(0, len(todo), embedder.batch_size):
                batch = todo[start : start + embedder.batch_size]
                vectors = embedder.embed_documents([text for _, _, text in batch])
                written += observations_store.write_vectors(
                    conn, profile, [(i, m) for i, m, _ in batch], vectors
                )
                tell()
        observations_store.ensure_index(conn, profile)
        tell(finished=True)
    return written


def integrity(db: Database) -> tuple[StoredProfile | None, dict | None]:
    """The profile search serves, and its live statements' missing, mis-sized and non-unit
    vectors (None, None before anything serves)."""
    with db.connection() as conn:
        serving = profiles_store.active_profile(conn)
        return serving, observations_store.vector_integrity(conn, serving) if serving else None
