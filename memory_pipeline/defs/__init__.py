"""Dagster wiring only: partitions, assets, jobs, sensors, schedules and resources.

Everything here delegates to ``memory_pipeline.ingest``, ``memory_pipeline.indexing`` and the
stores; ``memory_pipeline.definitions`` loads this folder.
"""
