"""The assets: episodes, chunks, embeddings and entity mentions per ingest day; global upkeep
(statement vectors among it)."""

from memory_pipeline.defs.assets.index import chunks, embeddings, entity_mentions
from memory_pipeline.defs.assets.ingest import episodes
from memory_pipeline.defs.assets.maintenance import (
    backlog,
    entities,
    hnsw_index,
    keyword_champions,
    pipeline_stats,
    serving_generation,
    statement_vectors,
)
from memory_pipeline.orchestration.instance import EMBEDDING_POOL

__all__ = [
    "EMBEDDING_POOL",
    "backlog",
    "chunks",
    "embeddings",
    "entities",
    "entity_mentions",
    "episodes",
    "hnsw_index",
    "keyword_champions",
    "pipeline_stats",
    "serving_generation",
    "statement_vectors",
]
