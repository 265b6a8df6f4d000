"""Dagster definitions only: partitions, assets, checks, jobs, sensors, schedules and resources.

Each asset, check, sensor and op calls the application core (``Memory`` through the ``memory``
resource, and the core's functions: ``ingest``, ``indexing``, ``maintenance``) as the CLI and the
servers do; the Dagster helpers that define nothing live in ``memory_pipeline.orchestration``.
``memory_pipeline.definitions`` loads this folder. A module here names another's assets by key
and reaches its jobs through their module, never by importing the objects, so the loader meets
each definition once.
"""
