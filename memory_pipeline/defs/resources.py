"""The one set of resources; environments differ only by environment variables."""

import dagster as dg

from memory_pipeline.resources import DatabaseResource, EmbedderResource, SearchResource


def default_resources() -> dict:
    database = DatabaseResource()
    embedder = EmbedderResource()
    return {
        "database": database,
        "embedder": embedder,
        "search": SearchResource(database=database, embedder=embedder),
    }


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources=default_resources())
