"""The HTTP routes that list a memory's episodes and show a source's revisions, over ``Memory``:
``GET /v1/memories/{memory}/episodes`` (current episodes, newest first, with source and revision
count; ``before`` pages on) and ``GET /v1/episodes/{id}/history`` (every revision of the
episode's source, newest first, superseded ones marked)."""

from __future__ import annotations

from fastapi import Path, Query

from memory_pipeline.memory import MAX_LIST
from memory_pipeline.server.access import visible_episodes, visible_history
from memory_pipeline.server.http_deps import Caller, MemoryDep, routes
from memory_pipeline.server.http_models import (
    EpisodeListing,
    History,
    answering,
)

router = routes("episodes")


@router.get(
    "/v1/memories/{memory_name}/episodes",
    summary="A memory's current episodes, newest first, with their source and revision count",
    **answering(EpisodeListing, "The current episodes, newest first", 404, 422),
)
def episodes(
    memory: MemoryDep,
    access: Caller,
    memory_name: str = Path(description="The memory", examples=["me"]),
    limit: int = Query(50, ge=1, le=MAX_LIST, description="How many episodes", examples=[20]),
    before: int | None = Query(None, ge=1, description="The page after this episode id"),
) -> dict:
    return visible_episodes(memory, access, memory_name, limit=limit, before=before)


@router.get(
    "/v1/episodes/{episode_id}/history",
    summary="Every revision of an episode's source, newest first (superseded ones marked)",
    **answering(History, "The source's revisions, newest first", 404, 422),
)
def history(
    memory: MemoryDep,
    access: Caller,
    episode_id: int = Path(description="Any revision's episode id"),
) -> dict:
    return visible_history(memory, access, episode_id)
