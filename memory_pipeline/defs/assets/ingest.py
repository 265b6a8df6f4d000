"""Stage 1: episodes, loaded per ingest day (the inbox) and reported however they arrived.

A backfill run takes a range of days (``BACKFILL_POLICY``): each day is loaded and reported as
its own partition's materialization."""

import time

import dagster as dg

from memory_pipeline import config
from memory_pipeline.defs.partitions import day_asset
from memory_pipeline.orchestration import day_metadata
from memory_pipeline.orchestration.assets import (
    EPISODES_TABLE,
    code_referenced,
    each_day,
)
from memory_pipeline.orchestration.resources import MemoryResource


@day_asset("ingest", metadata=EPISODES_TABLE)
def episodes(context: dg.AssetExecutionContext, memory_api: MemoryResource) -> dg.MaterializeResult:
    """Episodes (notes, journal entries, chats, documents) ingested on this UTC day.
    Materializing a day loads the inbox folder `INBOX/YYYY-MM-DD/` (JSONL, Markdown, text) and
    reports every episode of the day, however it arrived (CLI, inbox, API)."""
    # Backticks: the UI renders descriptions as Markdown, where a bare <day> is an HTML tag.
    done = each_day(context, lambda day: _load_day(context, memory_api, day), lambda m: m)
    return dg.MaterializeResult(metadata={"days_in_run": len(done)})


def _load_day(context: dg.AssetExecutionContext, memory_api: MemoryResource, day) -> dict:
    """Load the day's inbox folder; the day's materialization metadata."""
    started = time.perf_counter()
    inbox = config.inbox_dir() / day.isoformat()
    loaded = None
    if inbox.is_dir():
        loaded = memory_api.api.days.load([inbox], day)
        context.log.info(f"inbox {inbox}: {loaded.summary()}")
        for rejection in loaded.rejections:
            context.log.warning(str(rejection))
    held = memory_api.api.days.episodes(day)
    metadata = {
        **day_metadata.episodes(held),
        "inbox": str(inbox),
        "inbox_new": loaded.inserted if loaded else 0,
        "inbox_duplicates": loaded.duplicates if loaded else 0,
        "inbox_rejected": len(loaded.rejections) if loaded else 0,
        "wall_seconds": round(time.perf_counter() - started, 3),
    }
    if loaded and loaded.rejections:
        metadata["rejections"] = dg.MetadataValue.md(
            "\n".join(f"- `{r}`" for r in loaded.rejections[:50])
        )
    return metadata


@dg.definitions
def defs() -> dg.Definitions:
    return code_referenced([episodes])
