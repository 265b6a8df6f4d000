"""The one set of resources; environments differ only by environment variables."""

import dagster as dg

from memory_pipeline.orchestration.resources import MemoryResource


def default_resources() -> dict:
    return {"memory_api": MemoryResource()}


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=default_resources())
