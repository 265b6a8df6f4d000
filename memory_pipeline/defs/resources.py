"""The one set of resources; environments differ only by environment variables."""

from memory_pipeline.resources import DatabaseResource, EmbedderResource, SearchResource


def default_resources() -> dict:
    database = DatabaseResource()
    embedder = EmbedderResource()
    return {
        "database": database,
        "embedder": embedder,
        "search": SearchResource(database=database, embedder=embedder),
    }
