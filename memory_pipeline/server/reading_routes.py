"""The HTTP API's reading routes: ``GET /v1/search``, ``/v1/memories``, ``/v1/status`` and
``/v1/episodes/{id}`` (whole, or page by page), each inside the caller's memories."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Query

from memory_pipeline.errors import InputError
from memory_pipeline.memory import SearchResponse
from memory_pipeline.server.access import (
    visible_episode,
    visible_page,
    visible_search,
    visible_status,
)
from memory_pipeline.server.api_docs import REQUIRED
from memory_pipeline.server.http_deps import Caller, MemoryDep, SearchQuery, routes
from memory_pipeline.server.http_models import (
    EpisodePage,
    FullStatus,
    MemoriesAnswer,
    ScopedStatus,
    SearchAnswer,
    WholeEpisode,
    answering,
)

router = routes("reading")


def result_document(result) -> dict:
    """One search result as the API serves it: ``search --json``'s fields plus, for a passage of
    an episode, the seed's compatibility fields (``kind: "chunk"``, ``ord: 0``; the episode's own
    kind is ``episodeKind``). An observation or a belief keeps its kind, status and sources."""
    document = result.to_json()
    if result.sources is not None:
        return document
    return {**document, "episodeKind": document["kind"], "kind": "chunk", "ord": 0}


def search_document(response: SearchResponse) -> dict:
    document = response.to_json()
    document["results"] = [result_document(r) for r in response.results]
    return document


@router.get(
    "/v1/search",
    summary="Fused search inside one memory (the document of search --json)",
    description="The passages (and statements) of one memory that answer `q`, best first, and "
    "how the search ran; `pending` counts the memory's episodes not indexed yet.",
    **answering(SearchAnswer, "The results, best first", 404, 422, 502),
)
def search(
    memory: MemoryDep,
    access: Caller,
    options: Annotated[SearchQuery, Depends()],
    memory_name: str | None = Query(
        None,
        alias="memory",
        description="The memory to search",
        examples=["me"],
        json_schema_extra=REQUIRED,
    ),
    q: str | None = Query(
        None,
        description="The question, in the user's words (at most 4,000 characters)",
        examples=["sourdough kitchen"],
        json_schema_extra=REQUIRED,
    ),
) -> dict:
    if memory_name is None or q is None:
        raise InputError("'memory' and 'q' are required query parameters")
    response = visible_search(memory, access, memory_name, q, options)
    return search_document(response)


@router.get(
    "/v1/memories",
    summary="The memories this caller can see, with their counts",
    **answering(MemoriesAnswer, "The memories, by name"),
)
def memories(memory: MemoryDep, access: Caller) -> dict:
    return {"memories": [m.to_json() for m in memory.memories() if access.sees(m.name)]}


@router.get(
    "/v1/episodes/{episode_id}",
    summary="One stored episode; with ?page=N one page of it (its chunks, up to 16,000 "
    "characters), with the page count",
    description="Pages 1 to `pages` are the whole body; a search hit lies in the page that holds "
    "its chunk.",
    **answering(
        WholeEpisode | EpisodePage,
        "The episode with its body, or with `page` the page without it",
        404,
        422,
    ),
)
def get_episode(
    memory: MemoryDep,
    access: Caller,
    episode_id: int = Path(description="The episode's id"),
    page: int | None = Query(None, ge=1, description="A page of it, from 1", examples=[1]),
) -> dict:
    if page is not None:
        return visible_page(memory, access, episode_id, page)
    return visible_episode(memory, access, episode_id)


@router.get(
    "/v1/status",
    summary="Counts, pending work, the serving profile (this caller's memories)",
    **answering(
        FullStatus | ScopedStatus,
        "`status --json` for a caller of every memory, else its memories only",
    ),
)
def status(memory: MemoryDep, access: Caller) -> dict:
    return visible_status(memory, access)
