"""The HTTP routes that list a memory's episodes and show a source's revisions, over ``Memory``:
``GET /v1/memories/{memory}/episodes`` (current episodes, newest first, with source and revision
count; ``before`` pages on) and ``GET /v1/episodes/{id}/history`` (every revision of the
episode's source, newest first, superseded ones marked)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Query, Request

from memory_pipeline.memory import MAX_LIST, Memory
from memory_pipeline.server.access import Access, visible_episodes, visible_history


def add_episode_routes(
    app: FastAPI, memory: Memory, access_of: Callable[[Request], Access]
) -> None:
    @app.get(
        "/v1/memories/{memory_name}/episodes",
        summary="A memory's current episodes, newest first, with their source and revision count",
    )
    def episodes(
        request: Request,
        memory_name: str,
        limit: int = Query(50, ge=1, le=MAX_LIST),
        before: int | None = Query(None, ge=1, description="the page after this episode id"),
    ) -> dict:
        return visible_episodes(memory, access_of(request), memory_name, limit=limit, before=before)

    @app.get(
        "/v1/episodes/{episode_id}/history",
        summary="Every revision of an episode's source, newest first (superseded ones marked)",
    )
    def history(request: Request, episode_id: int) -> dict:
        return visible_history(memory, access_of(request), episode_id)
