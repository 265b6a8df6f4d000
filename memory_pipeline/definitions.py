"""The Dagster entry point (``workspace.yaml`` and ``pyproject.toml`` point here)."""

import dagster as dg

from memory_pipeline.defs import assets, jobs, search
from memory_pipeline.defs.resources import default_resources

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets]),
    jobs=[jobs.index_day_job, jobs.build_hnsw_index_job, search.search_memory_job],
    resources=default_resources(),
)
