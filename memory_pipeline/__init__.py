"""memory_pipeline: episodes -> chunks -> embeddings -> HNSW, as Dagster assets on PostgreSQL/pgvector.

Floors, imports pointing down only (``memory_pipeline_tests/test_architecture.py`` checks it):
``domain/`` rules (no Dagster, no SQL, no network), with ``errors``, ``config``,
``redaction`` and ``version`` beside it; ``storage/`` PostgreSQL and the stores that run
``sql/queries``; ``embedders/`` and ``rerankers/`` the model clients; the application core
(``ingest``, ``indexing/``, ``search/``, ``statements``, ``tokens``, ``maintenance``,
``reporting``); ``memory/`` (``Memory``), the core's face, its parts in modules of their own; and the adapters over it:
``orchestration/`` (Dagster helpers that define nothing), ``server/`` (HTTP and MCP), ``defs/``
(Dagster definitions only, loaded by ``definitions.py``) and ``cli/``. docs/architecture.md
describes each folder.
"""

from memory_pipeline.version import __version__

__all__ = ["Memory", "__version__"]


def __getattr__(name: str):
    # Imported on first use: ``import memory_pipeline.config`` must not load the whole stack.
    if name == "Memory":
        from memory_pipeline.memory import Memory

        return Memory
    raise AttributeError(f"module 'memory_pipeline' has no attribute {name!r}")
