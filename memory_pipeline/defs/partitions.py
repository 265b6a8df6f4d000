"""The partitioning of the pipeline: one partition per UTC ingest day that received episodes.

Dynamic partitions, added when a day receives its first episodes (``memory-pipeline ingest``,
the inbox, the sensors for any other path), so a day that received nothing is not a
"missing" partition: the graph reads 100% filled once every day with data is indexed, and the
backfill dialog's "Missing" launches only days that hold episodes. A fixed start date would
list every calendar day since then as missing, and a start date from configuration would have
to be read when the definitions are imported. ``day_asset`` declares an asset partitioned so.
"""

from collections.abc import Callable
from typing import Any

import dagster as dg

from memory_pipeline.orchestration.assets import BACKFILL_POLICY, stage_asset
from memory_pipeline.orchestration.instance import PARTITIONS

ingest_days = dg.DynamicPartitionsDefinition(name=PARTITIONS)


def day_asset(stage: str, **kwargs: Any) -> Callable[[Callable], dg.AssetsDefinition]:
    """``stage_asset`` partitioned by ingest day, a backfill taking a range of days in one run."""
    return stage_asset(stage, partitions_def=ingest_days, backfill_policy=BACKFILL_POLICY, **kwargs)
