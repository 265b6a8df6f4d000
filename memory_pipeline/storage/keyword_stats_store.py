"""The keyword channel's statistics: per memory, each lexeme's document frequency and the totals.

Two small tables (``sql/migrations/0004_keyword_stats.sql``) hold, per memory, each lexeme's
document frequency (``keyword_stats.df``: chunk rows holding it) and the memory's chunk-row count
and summed document length (``keyword_memory_stats``), which ``keyword_store`` plans its query
with. They change with the chunks: ``record_chunks`` in the transaction that writes chunks
(``index_store.write_episodes``), ``recompute`` where chunks are deleted (``memory-pipeline
backfill --rechunk``, forgetting), ``remove_chunks`` where a superseded revision's chunks leave
(``revisions_store``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import psycopg

from memory_pipeline.storage.paths import query


def record_chunks(conn: psycopg.Connection | psycopg.Cursor, episode_ids: Sequence[int]) -> None:
    """Add the chunk rows of ``episode_ids`` (written in the current transaction) to the statistics.

    Call it once per transaction, after the chunks are written, for exactly the episodes whose
    chunks that transaction wrote. One query (``keyword_stats_record.sql``): memory totals
    first, then lexemes, each in key order, so concurrent writers lock rows in one order. Then
    the champion lists (``keyword_champions_record.sql``), after the memories' statistics rows:
    a rebuild's swap holds such a row, so the writer reads the lists it installed.
    """
    ids = list(episode_ids)
    if ids:
        conn.execute(query("keyword_stats_record"), {"episode_ids": ids})
        conn.execute(query("keyword_champions_record"), {"episode_ids": ids})


def recompute(conn: psycopg.Connection, memories: Iterable[str]) -> None:
    """Recount the statistics of ``memories`` from their chunks (after chunks were deleted).

    Takes ``keyword_memory_stats`` in SHARE ROW EXCLUSIVE mode for the rest of the transaction:
    it waits for writers whose chunks are not committed yet (so it counts them) and holds new
    ones back until it commits (they then add to the recounted figures). Writers take nothing
    of the statistics before that table, so they cannot deadlock with it.
    """
    names = sorted(set(memories))
    if not names:
        return
    with conn.transaction():
        conn.execute("LOCK TABLE keyword_memory_stats IN SHARE ROW EXCLUSIVE MODE")
        conn.execute(query("keyword_stats_recompute_memories"), {"memories": names})
        conn.execute(query("keyword_stats_recompute_lexemes"), {"memories": names})


def remove_chunks(conn: psycopg.Connection, episode_ids: Sequence[int]) -> None:
    """Take the chunk rows of ``episode_ids`` out of the statistics; call it in the transaction
    that deletes them, before the delete. What they add is counted as ``record_chunks`` counts it
    (``keyword_stats_remove.sql``) and subtracted, rows that reach 0 deleted (their checks keep
    every count positive): work in proportion to those chunks, not to the memory, as
    ``recompute`` is. Rows are locked as writers lock them (memory totals first, then lexemes in
    key order), so a concurrent writer cannot deadlock with it."""
    rows = conn.execute(query("keyword_stats_remove"), {"episode_ids": list(episode_ids)})
    by_memory: dict[str, tuple[int, int, list[str], list[int]]] = {}
    for memory, chunks, episodes, word, ndoc in rows.fetchall():
        _, _, words, counts = by_memory.setdefault(memory, (chunks, episodes, [], []))
        words.append(word)
        counts.append(ndoc)
    for memory in sorted(by_memory):
        chunks, episodes, words, counts = by_memory[memory]
        conn.execute("SELECT 1 FROM keyword_memory_stats WHERE memory = %s FOR UPDATE", (memory,))
        conn.execute(
            "DELETE FROM keyword_memory_stats WHERE memory = %s AND chunks <= %s", (memory, chunks)
        )
        conn.execute(
            query("keyword_memory_stats_subtract"),
            {"memory": memory, "chunks": chunks, "lexemes": sum(counts), "episodes": episodes},
        )
    for memory in sorted(by_memory):
        _, _, words, counts = by_memory[memory]
        params = {"memory": memory, "words": words, "counts": counts}
        conn.execute(
            query("keyword_stats_lock_lexemes"),
            params,
        )
        conn.execute(
            query("keyword_stats_delete_exhausted"),
            params,
        )
        conn.execute(
            query("keyword_stats_decrement"),
            params,
        )
