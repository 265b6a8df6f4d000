"""The HTTP API's writing routes: ``POST /v1/episodes`` (JSON episodes, documents among them as
base64 items, or one document as the raw body), ``POST /v1/index`` and forgetting
(``DELETE /v1/episodes/{id}``, ``DELETE /v1/memories/{memory}``)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from memory_pipeline.domain.documents import MAX_DOCUMENT_BYTES
from memory_pipeline.domain.episodes import validate_kind, validate_memory_name
from memory_pipeline.domain.uploads import CONTENT_TYPES
from memory_pipeline.errors import InputError
from memory_pipeline.memory import MAX_ADD_ITEMS, Memory
from memory_pipeline.server.access import forget_visible, writable_items, writable_memory
from memory_pipeline.server.guard import media_type
from memory_pipeline.server.http_bodies import read_body, read_json
from memory_pipeline.server.http_deps import Caller, MemoryDep, Writer, routes
from memory_pipeline.server.http_errors import TooLarge
from memory_pipeline.server.http_models import (
    AddAnswer,
    DocumentItem,
    EpisodeIn,
    EpisodesIn,
    ErrorBody,
    Forgotten,
    IndexAnswer,
    IndexQueued,
    answer,
    answering,
    errors,
    json_body,
    ref,
)
from memory_pipeline.server.index_queue import index_queue

router = routes("writing")

EPISODE = {
    "memory": "me",
    "kind": "note",
    "title": "Bread",
    "occurred_at": "2026-03-01",
    "body": "Sourdough needs a warm kitchen and patience.",
}
ITEM = {"anyOf": [ref(EpisodeIn), ref(DocumentItem)]}
ONE_OR_MANY = {
    "anyOf": [
        ref(EpisodesIn),
        *ITEM["anyOf"],
        {"type": "array", "maxItems": MAX_ADD_ITEMS, "items": ITEM},
    ]
}
RAW_DOCUMENT = {"schema": {"type": "string", "format": "binary"}}
ADDED = {
    **answer(AddAnswer, "Something new was stored (rejected items located)", 201),
    **answer(AddAnswer, "Nothing new: each valid item was stored before", 200),
    **answer(
        AddAnswer | ErrorBody,
        "Everything was rejected (each item located), or a parameter is invalid",
        422,
    ),
    **errors(400, 404, 408, 413, 415),
}


# What ``POST /v1/index`` serves of ``IndexReport.to_json``: to every writer, and the counts
# to a token of every memory only.
INDEX_FIELDS = ("profile", "seconds")
INDEX_COUNTS = ("episodes", "chunks", "vectors", "windowVectors", "pendingEpisodes")


def added(document: dict, report) -> JSONResponse:
    """201 when something new was stored, 422 when everything was rejected, else 200."""
    status = 201 if report.inserted else 200
    if document["rejected"] and not report.inserted and not report.duplicates:
        status = 422
    return JSONResponse(document, status_code=status)


def episode_items(body: Any) -> list:
    """The items of a JSON body: one episode object, a list of them, or ``{"episodes": [...]}``."""
    if isinstance(body, dict) and "episodes" in body:
        if set(body) != {"episodes"}:
            extra = ", ".join(repr(k) for k in body if k != "episodes")
            raise InputError(
                f"unknown field {extra} beside 'episodes' (the memory and kind for items "
                "that leave them out go in ?memory= and ?kind=)"
            )
        body = body["episodes"]
    items = [body] if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise InputError('expected an episode object, a list of them, or {"episodes": [...]}')
    if len(items) > MAX_ADD_ITEMS:
        raise TooLarge(f"{len(items)} episodes in one request; at most {MAX_ADD_ITEMS}")
    return items


def checked_defaults(memory: str | None, kind: str | None) -> tuple[str | None, str | None]:
    """``?memory=`` and ``?kind=`` for the items that leave them out, each valid or InputError."""
    if memory is not None:
        try:
            memory = validate_memory_name(memory)
        except ValueError as exc:
            raise InputError(f"memory: {exc}") from None
    if kind is not None:
        try:
            kind = validate_kind(kind)
        except ValueError as exc:
            raise InputError(f"kind: {exc}") from None
    return memory, kind


def _place(rejection: dict) -> int:
    return int(rejection["location"][len("episodes[") : -1])


@router.post(
    "/v1/episodes",
    summary="Store one or many episodes, or one document (the rules of ingest; rejections located)",
    description='A JSON body: one episode, a list of them, or `{"episodes": [...]}`, documents '
    "among them as base64 items; each invalid item is rejected in place and the valid ones are "
    "stored. Or one document as the raw body (its own Content-Type, `?memory=&name=`), up to "
    "32 MiB.",
    status_code=201,
    response_model=None,
    responses=ADDED,
    openapi_extra=json_body(
        ONE_OR_MANY,
        {"episodes": [EPISODE]},
        "Episodes as JSON (at most 1,000 and 8 MiB), or one document as it is",
        **{media: RAW_DOCUMENT for media in [*CONTENT_TYPES, "application/octet-stream"]},
    ),
)
async def add_episodes(
    request: Request,
    memory: MemoryDep,
    access: Writer,
    memory_name: str | None = Query(
        None,
        alias="memory",
        description="The memory of the items that name none; required for a raw document",
    ),
    kind: str | None = Query(None, description="The kind of the items that name none"),
    name: str | None = Query(None, description="A raw document's file name (default: document)"),
    modified_at: str | None = Query(
        None, description="A raw document's date of last resort (ISO 8601)"
    ),
) -> JSONResponse:
    media = media_type(request.headers.get("content-type"))
    if media in CONTENT_TYPES or media == "application/octet-stream":
        if memory_name is None:
            raise InputError("'memory' is a required query parameter for a document upload")
        target = writable_memory(access, memory_name)
        return await add_raw_document(request, memory, target, kind, name, media, modified_at)
    items = episode_items(await read_json(request))
    default_memory, kind = checked_defaults(memory_name, kind)
    # One scope decision, on the memory each item will be stored under (written into it).
    kept, refused = writable_items(access, items, default_memory)
    report = await run_in_threadpool(memory.add, [item for _, item in kept], kind=kind)
    document = report.to_json()
    # add() locates items by their place in what it was given: map back to the request's.
    for rejection in document["rejected"]:
        rejection["location"] = f"episodes[{kept[_place(rejection)][0]}]"
    document["rejected"] = sorted(document["rejected"] + refused, key=_place)
    return added(document, report)


async def add_raw_document(
    request: Request,
    memory: Memory,
    memory_name: str,
    kind: str | None,
    name: str | None,
    media: str,
    modified_at: str | None,
) -> JSONResponse:
    """One document as the raw body (``Content-Type`` its type, ``?memory=&name=``): its bytes
    as they are (no base64), up to the document size limit of ``ingest``."""
    data = await read_body(request, MAX_DOCUMENT_BYTES)
    report = await run_in_threadpool(
        memory.add_document,
        data,
        name or "document",
        memory=memory_name,
        kind=kind,
        content_type=media,
        modified_at=modified_at,
    )
    return added(report.to_json(), report)


@router.post(
    "/v1/index",
    summary="Run an index pass now: chunk and embed everything pending",
    description="The counts span every memory, so only a token of every memory gets them.",
    response_model=None,
    responses={
        **answer(IndexAnswer, "The pass ran"),
        **answer(IndexQueued, "A pass was running: one next pass, shared, indexes it", 202),
        **errors(502),
    },
)
async def index(memory: MemoryDep, access: Writer) -> Any:
    ticket = index_queue(memory).request()  # one pass at a time, on a thread of its own
    if not ticket.started:
        return JSONResponse(ticket.to_json(), status_code=202)
    report = await asyncio.wrap_future(ticket.future)
    document = report.to_json()
    # The counts span every memory: only a token of every memory gets them.
    shown = INDEX_FIELDS + (INDEX_COUNTS if access.all_memories else ())
    return {key: document[key] for key in shown}


@router.delete(
    "/v1/episodes/{episode_id}",
    summary="Forget one episode and everything derived from it",
    **answering(Forgotten, "Forgotten: the rows deleted, per table", 404, 422),
)
def forget_episode(
    memory: MemoryDep, access: Caller, episode_id: int = Path(description="The episode's id")
) -> dict:
    return forget_visible(memory, access, None, episode_id)


@router.delete(
    "/v1/memories/{memory_name}",
    summary="Forget a whole memory",
    **answering(Forgotten, "Forgotten: the rows deleted, per table", 404, 422),
)
def forget_memory(
    memory: MemoryDep,
    access: Caller,
    memory_name: str = Path(description="The memory's name", examples=["me"]),
) -> dict:
    return forget_visible(memory, access, memory_name, None)
