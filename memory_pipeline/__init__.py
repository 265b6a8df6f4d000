"""memory_pipeline: episodes -> chunks -> embeddings -> HNSW, as Dagster assets on PostgreSQL/pgvector.

Package map (each folder says what belongs in it):
- ``domain/``     pure domain code: chunking, episode records and file parsing, vector maths.
                  No Dagster, no SQL, no network.
- ``embedders/``  one module per embedding provider behind one interface (``base.Embedder``).
- ``storage/``    PostgreSQL: the embedded server, the connection pool, migrations, and the
                  stores that run the SQL in ``sql/queries``.
- ``indexing.py`` the index pass: pending episodes -> chunks -> vectors, one transaction each.
- ``resources.py`` Dagster ``ConfigurableResource`` wrappers around storage and embedders.
- ``defs/``       Dagster wiring only: partitions, assets, jobs, sensors, schedules.
- ``cli/``        the ``memory-pipeline`` command.
"""
