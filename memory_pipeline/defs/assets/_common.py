"""What the asset modules share: the embedding pool's name and the partition's day."""

import datetime as dt

import dagster as dg

# Every step that calls the embedding model takes a slot of this pool, so a 100-day backfill
# queues behind the model server's capacity instead of flooding it.
EMBEDDING_POOL = "embedding"


def day_of(context: dg.AssetExecutionContext) -> dt.date:
    return dt.date.fromisoformat(context.partition_key)
