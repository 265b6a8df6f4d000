"""What a day's partitions say they did: materialization metadata from the core's day reports.

The partition runs (``defs/assets``) and the ``backlog`` asset, which does the same work for
every pending day, record a day with the same metadata, so the asset page reads the same
whichever did the work.
"""

from __future__ import annotations

import os

import dagster as dg

from memory_pipeline.indexing.days import ChunkedDay, EmbeddedDay, LinkedDay
from memory_pipeline.ingest import DayEpisodes
from memory_pipeline.orchestration.metadata import markdown_table


def episodes(held: DayEpisodes) -> dict:
    return {
        "dagster/row_count": held.episodes,
        "by_memory_and_kind": markdown_table(held.summary),
        "preview": markdown_table(held.preview),
    }


def chunks(chunked: ChunkedDay) -> dict:
    report, stats = chunked.report, chunked.stats
    return {
        "dagster/row_count": stats["chunks"],
        "new_chunks": report.chunks,
        "episodes_chunked": report.episodes,
        "mean_chunk_chars": round(stats["characters"] / stats["chunks"], 1)
        if stats["chunks"]
        else 0.0,
        "wall_seconds": round(report.seconds, 3),
        "chunks_per_second": round(report.chunks_per_second, 1),
        "preview": markdown_table(report.preview),
    }


def embeddings(embedded: EmbeddedDay) -> dict:
    report = embedded.report
    return {
        "dagster/row_count": embedded.vectors["vectors"],
        "profile": report.profile,
        "generation": embedded.generation,
        "episodes_indexed": report.episodes,
        "new_vectors": report.vectors,
        "new_window_vectors": report.windows,
        "model_calls": report.model_calls,
        "pending_after": report.pending_after or 0,
        "wall_seconds": round(report.seconds, 3),
        # Summed over the model calls, which overlap (several in flight): above wall_seconds.
        "model_call_seconds_total": round(report.embed_seconds, 3),
        # Summed over the commits, which overlap (two storing threads).
        "store_seconds_total": round(report.store_seconds, 3),
        "vectors_per_second": round(report.vectors_per_second, 2),
        # Which process embedded: tells a distributed executor's workers apart.
        "worker_pid": os.getpid(),
        "preview": markdown_table(report.preview),
        # The generation's measured cut-offs (domain.calibration), or the defaults and why.
        "calibration": dg.MetadataValue.json(embedded.calibration.to_json()),
        "close_statement_cut_off": round(embedded.calibration.close, 4),
    }


def search_ready(ready) -> dict:
    """What a run over days left for search, once after its days (``indexing.serving``): the
    serving HNSW index built, present or left to another builder, and the keyword lists built."""
    return {"search_ready": dg.MetadataValue.json(ready.to_json())}


def entity_mentions(linked: LinkedDay) -> dict:
    return {
        "dagster/row_count": linked.stats["mentions"],
        "memories": len(linked.memories),
        "new_mentions": linked.report.mentions_added,
        "episodes_scanned_for_names": linked.report.extracted_episodes,
        "wall_seconds": round(linked.seconds, 3),
        "top_entities": markdown_table(linked.top),
    }
