"""memory_pipeline: episodes -> chunks -> embeddings -> HNSW, as Dagster assets on PostgreSQL/pgvector.

Package map, floor by floor (each folder says what belongs in it; imports only point down,
``memory_pipeline_tests/test_architecture.py`` checks it):
- ``domain/``     pure domain code: chunking and paragraph windows, pages, episode records
                  and file parsing, documents, fusion and its evidence scale, the embedding
                  calibration's probes and cut-offs, policies, entities. No Dagster, no SQL,
                  no network. Beside it ``errors``, ``config``, ``redaction`` and ``version``.
- ``storage/``    PostgreSQL: the embedded server, the connection pool, migrations, and the
                  stores that run the SQL in ``sql/queries``.
- ``embedders/``  one module per embedding provider behind one interface (``base.Embedder``);
  ``rerankers/``  the optional ``/v1/rerank`` client; its failures never fail a search.
- the application core:
  ``ingest.py``   files -> episodes for an ingest day; what a day holds.
  ``indexing/``   the index pass (pending episodes -> chunks -> vectors, canary first, one
                  commit per episode), passes until done, a day's work, pending counts,
                  generations, statements' vectors, a generation's model calibration,
                  linking and keyword lists beside the pass.
  ``search/``     fused retrieval (``service.SearchService``), result documents, renderers.
  ``statements.py`` saving observations and beliefs; ``tokens.py`` access tokens;
  ``maintenance.py`` global upkeep; ``reporting.py`` what the core tells an adapter.
- ``memory/``     the Python API (``Memory``): the core's face, importing no adapter.
- the adapters, over ``Memory`` only:
  ``orchestration/`` Dagster helpers that define nothing (instance, storage, the resource,
                  settings, metadata, recording work in Dagster);
  ``server/``     the HTTP API (FastAPI) and the MCP server;
  ``defs/``       Dagster definitions only: partitions, assets, checks, jobs, sensors, schedules;
  ``definitions.py`` the Dagster entry point (one ``load_from_defs_folder`` call);
  ``cli/``        the ``memory-pipeline`` command.
"""

from memory_pipeline.version import __version__

__all__ = ["Memory", "__version__"]


def __getattr__(name: str):
    # Imported on first use: ``import memory_pipeline.config`` must not load the whole stack.
    if name == "Memory":
        from memory_pipeline.memory import Memory

        return Memory
    raise AttributeError(f"module 'memory_pipeline' has no attribute {name!r}")
