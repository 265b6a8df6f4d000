"""The pipeline's assets: episodes -> chunks -> embeddings (per ingest day) -> hnsw_index.

Assets write through the database resource (no IO managers for the big tables), declare their
upstream tables with ``deps``, and return ``MaterializeResult`` with counts, seconds, throughput,
the profile and a short preview. Each partition run is idempotent: re-running a day stores
nothing twice.

One module per stage group: ``ingest`` (episodes), ``index`` (chunks, embeddings,
entity_mentions) and ``maintenance`` (backlog, hnsw_index, pipeline_stats).
"""

from memory_pipeline.defs.assets._common import EMBEDDING_POOL
from memory_pipeline.defs.assets.index import chunks, embeddings, entity_mentions
from memory_pipeline.defs.assets.ingest import episodes
from memory_pipeline.defs.assets.maintenance import backlog, hnsw_index, pipeline_stats

__all__ = [
    "EMBEDDING_POOL",
    "backlog",
    "chunks",
    "embeddings",
    "entity_mentions",
    "episodes",
    "hnsw_index",
    "pipeline_stats",
]
