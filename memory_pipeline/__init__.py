"""memory_pipeline: episodes -> chunks -> embeddings -> HNSW, as Dagster assets on PostgreSQL/pgvector.

Package map (each folder says what belongs in it):
- ``domain/``     pure domain code: chunking and paragraph windows, pages, episode records and file
                  parsing, fusion, policies, entities.
                  No Dagster, no SQL, no network.
- ``embedders/``  one module per embedding provider behind one interface (``base.Embedder``).
- ``rerankers/``  the optional ``/v1/rerank`` client; its failures never fail a search.
- ``storage/``    PostgreSQL: the embedded server, the connection pool, migrations, and the
                  stores that run the SQL in ``sql/queries``.
- ``indexing.py`` the index pass: pending episodes -> chunks -> vectors (chunk + paragraph
                  windows), canary first, one commit per episode; promotes a finished
                  generation or profile.
- ``ingest.py``   files -> episodes for an ingest day (shared by the CLI and the episodes asset).
- ``memory.py``   the Python API (``Memory``) that the CLI, the servers and the resources call.
- ``server/``     the HTTP API (FastAPI) and the MCP server, both over ``Memory``.
- ``search/``     fused retrieval (``service.SearchService``), result documents, renderers.
- ``resources.py`` Dagster ``ConfigurableResource`` wrappers: database, embedder, search.
- ``defs/``       Dagster wiring only: partitions, assets, jobs, sensors, schedules.
- ``cli/``        the ``memory-pipeline`` command.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

__all__ = ["Memory", "__version__"]

try:
    # The installed distribution's version (pyproject.toml), so it is written in one place.
    __version__ = _version("memory_pipeline")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    # Imported on first use: ``import memory_pipeline.config`` must not load the whole stack.
    if name == "Memory":
        from memory_pipeline.memory import Memory

        return Memory
    raise AttributeError(f"module 'memory_pipeline' has no attribute {name!r}")
