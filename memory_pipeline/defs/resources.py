"""The one set of resources; environments differ only by environment variables."""

from memory_pipeline.resources import DatabaseResource, EmbedderResource


def default_resources() -> dict:
    return {"database": DatabaseResource(), "embedder": EmbedderResource()}
