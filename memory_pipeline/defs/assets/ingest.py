"""Stage 1: episodes, loaded per ingest day (the inbox) and reported however they arrived."""

import time

import dagster as dg

from memory_pipeline import config
from memory_pipeline.defs.assets._common import EPISODES_TABLE, OWNERS, day_of
from memory_pipeline.defs.metadata import markdown_table
from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.resources import MemoryResource
from memory_pipeline.storage import episodes_store


@dg.asset(
    partitions_def=ingest_days,
    group_name="ingest",
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "ingest"},
    metadata=EPISODES_TABLE,
    # Backticks: the UI renders descriptions as Markdown, where a bare <day> is an HTML tag.
    description=(
        "Episodes (notes, journal entries, chats, documents) ingested on this UTC day. "
        "Materializing a day loads the inbox folder `INBOX/YYYY-MM-DD/` (JSONL, Markdown, text) "
        "and reports every episode of the day, however it arrived (CLI, inbox, API)."
    ),
)
def episodes(context: dg.AssetExecutionContext, memory: MemoryResource) -> dg.MaterializeResult:
    day = day_of(context)
    started = time.perf_counter()
    inbox = config.inbox_dir() / day.isoformat()
    loaded = None
    if inbox.is_dir():
        loaded = ingest_paths(memory.db, [inbox], ingest_day=day)
        context.log.info(f"inbox {inbox}: {loaded.summary()}")
        for rejection in loaded.rejections:
            context.log.warning(str(rejection))
    with memory.db.connection() as conn:
        summary = episodes_store.day_summary(conn, day)
        preview = episodes_store.day_preview(conn, day)
    total = sum(r["episodes"] for r in summary)
    metadata = {
        "dagster/row_count": total,
        "inbox": str(inbox),
        "inbox_new": loaded.inserted if loaded else 0,
        "inbox_duplicates": loaded.duplicates if loaded else 0,
        "inbox_rejected": len(loaded.rejections) if loaded else 0,
        "seconds": round(time.perf_counter() - started, 3),
        "by_memory_and_kind": markdown_table(summary),
        "preview": markdown_table(preview),
    }
    if loaded and loaded.rejections:
        metadata["rejections"] = dg.MetadataValue.md("\n".join(f"- `{r}`" for r in loaded.rejections[:50]))
    return dg.MaterializeResult(metadata=metadata)
