"""The HTTP API (``memory-pipeline serve``): FastAPI over one shared ``Memory``.

Routes (OpenAPI at ``/openapi.json``, docs at ``/docs`` and ``/redoc``, offline: ``api_docs``): ``GET /v1/search``, ``POST /v1/episodes``
(JSON episodes, documents among them as base64 items, or one document as the raw body),
``POST /v1/index``, ``POST``/``GET /v1/observations`` and ``PATCH /v1/observations/{id}``
(``observation_routes``), ``GET /v1/status``, ``GET /v1/memories``, ``GET``/``DELETE /v1/episodes/{id}``,
``DELETE /v1/memories/{memory}``; ``GET /v1/episodes/{id}?page=N`` reads a long episode page by
page (``domain.pages``).

Every error is ``{"error": "<plain message>"}`` with its status: 400 unreadable body, 401 no or
bad token (or, beyond loopback, no token exists at all), 403 a read-only token writing or a
foreign ``Origin``, 404 unknown (or not visible) memory, episode or statement, 405 wrong method,
408 a body that stalls, 413 body or batch too large, 415 a JSON body not sent as
``application/json``, 421 a foreign ``Host`` on a loopback server (``guard``), 422 invalid input,
502 the embedding service is down or refused, 503 the database is down. A response never
carries a stack trace: what is not an expected failure is logged here and answered 500
"internal error".
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from memory_pipeline.domain.documents import MAX_DOCUMENT_BYTES
from memory_pipeline.domain.episodes import validate_kind, validate_memory_name
from memory_pipeline.domain.policies import MAX_LIMIT
from memory_pipeline.domain.uploads import CONTENT_TYPES
from memory_pipeline.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    EmbedderUnavailable,
    InputError,
    MemoryPipelineError,
    ModelRefused,
    UnknownPage,
)
from memory_pipeline.memory import MAX_ADD_ITEMS, Memory, UnknownEpisode, UnknownMemory
from memory_pipeline.search.results import SearchResponse
from memory_pipeline.server.access import (
    Access,
    Forbidden,
    NotFound,
    Unauthorized,
    access_of_token,
    bearer,
    forget_visible,
    visible_episode,
    visible_page,
    visible_search,
    visible_status,
    writable_items,
    writable_memory,
)
from memory_pipeline.server.api_docs import add_api_docs
from memory_pipeline.server.guard import Exposure, RequestGuard, media_type, unsupported_media
from memory_pipeline.server.index_queue import index_queue
from memory_pipeline.server.observation_routes import add_observation_routes
from memory_pipeline.statements import UnknownStatement
from memory_pipeline.version import __version__

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024 * 1024


class TooLarge(InputError):
    pass


class BadRequest(InputError):
    pass


class UnsupportedMedia(InputError):
    pass


def error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def status_of(exc: MemoryPipelineError) -> int:
    for kind, status in (
        (Unauthorized, 401),
        (Forbidden, 403),
        (NotFound, 404),
        (UnknownMemory, 404),
        (UnknownEpisode, 404),
        (UnknownStatement, 404),
        (UnknownPage, 404),
        (TooLarge, 413),
        (UnsupportedMedia, 415),
        (BadRequest, 400),
        (InputError, 422),
        (EmbedderUnavailable, 502),
        (ModelRefused, 502),
        (DatabaseUnavailable, 503),
        (ConfigurationError, 503),
    ):
        if isinstance(exc, kind):
            return status
    return 500


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


def added(document: dict, report) -> JSONResponse:
    """201 when something new was stored, 422 when everything was rejected, else 200."""
    status = 201 if report.inserted else 200
    if document["rejected"] and not report.inserted and not report.duplicates:
        status = 422
    return JSONResponse(document, status_code=status)


def create_app(memory: Memory, exposure: Exposure):
    """The API over ``memory``, guarded (``guard.RequestGuard``) as ``exposure`` says. Without
    tokens in the database a loopback server gives every caller full access; with tokens, or
    bound beyond loopback, each request needs a valid one."""
    app = FastAPI(
        title="memory_pipeline",
        version=__version__,
        docs_url=None,  # the offline pages of api_docs instead of FastAPI's CDN ones
        redoc_url=None,
        description="Episodes in, fused search out, and forgetting. `Authorization: Bearer <token>` "
        "when tokens are configured (`memory-pipeline tokens create`).",
    )

    add_api_docs(app)

    @app.exception_handler(MemoryPipelineError)
    async def expected_failure(request: Request, exc: MemoryPipelineError) -> JSONResponse:
        status = status_of(exc)
        if status == 500:
            log.error("unexpected failure on %s %s: %s", request.method, request.url.path, exc)
            return error(500, "internal error")
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return error(status, str(exc), headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for item in exc.errors()[:5]:
            where = " ".join(
                str(part) for part in item.get("loc", ()) if part not in ("query", "path", "body")
            )
            problems.append(
                f"{item.get('loc', ('?',))[0]} parameter {where!r}: {item.get('msg', 'invalid')}"
            )
        return error(422, "; ".join(problems) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = {404: "no such route", 405: f"method {request.method} is not allowed here"}.get(
            exc.status_code, str(exc.detail)
        )
        return error(exc.status_code, message, getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected failure on %s %s", request.method, request.url.path)
        return error(500, "internal error")

    @app.exception_handler(ClientDisconnect)
    async def disconnected(request: Request, exc: ClientDisconnect) -> Response:
        # The client left (or paused too long: the guard has answered 408): nobody to answer.
        return Response(status_code=400)

    def access_of(request: Request) -> Access:
        return access_of_token(
            memory, bearer(request.headers.get("authorization")), loopback=exposure.loopback
        )

    async def read_body(request: Request, limit: int) -> bytes:
        """The body, refused as soon as it is known to pass ``limit``: by its declared length
        before a byte is read, else while it streams in (never buffered past the limit)."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise TooLarge(f"the body is {int(declared)} bytes; at most {limit} are accepted")
        body = bytearray()
        async for piece in request.stream():
            body += piece
            if len(body) > limit:
                raise TooLarge(f"the body is larger than {limit} bytes, the most accepted")
        return bytes(body)

    async def read_json(request: Request) -> Any:
        # Only application/json: the types a web page may send anywhere without asking
        # (text/plain, forms) are never read as JSON.
        media = media_type(request.headers.get("content-type"))
        if media != "application/json":
            raise UnsupportedMedia(unsupported_media(media))
        body = await read_body(request, MAX_BODY_BYTES)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadRequest(
                f"the body is not UTF-8 (invalid byte at offset {exc.start})"
            ) from None
        if not text.strip():
            raise BadRequest("the body is empty; expected JSON")
        try:
            return json.loads(text)
        except RecursionError:
            raise BadRequest("the JSON body is nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise BadRequest(
                f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None

    # -- reading ------------------------------------------------------------------------------
    @app.get("/v1/search", summary="Fused search inside one memory (the document of search --json)")
    def search(
        request: Request,
        memory_name: str | None = Query(None, alias="memory"),
        q: str | None = None,
        policy: str | None = None,
        # Bounds checked here, so the error names this query parameter, not the CLI's flag.
        limit: int | None = Query(None, ge=1, le=MAX_LIMIT),
        channels: str | None = None,
        contested: bool | None = None,
    ) -> dict:
        access = access_of(request)
        name = memory_name
        if name is None or q is None:
            raise InputError("'memory' and 'q' are required query parameters")
        response = visible_search(
            memory,
            access,
            name,
            q,
            policy=policy,
            limit=limit,
            channels=channels,
            contested=contested,
        )
        return search_document(response)

    @app.get("/v1/memories", summary="The memories this caller can see, with their counts")
    def memories(request: Request) -> dict:
        access = access_of(request)
        return {"memories": [m.to_json() for m in memory.memories() if access.sees(m.name)]}

    @app.get(
        "/v1/episodes/{episode_id}",
        summary="One stored episode; with ?page=N one page of it (its chunks, up to 16,000 "
        "characters), with the page count",
    )
    def get_episode(
        request: Request, episode_id: int, page: int | None = Query(None, ge=1)
    ) -> dict:
        if page is not None:
            return visible_page(memory, access_of(request), episode_id, page)
        return visible_episode(memory, access_of(request), episode_id)

    @app.get(
        "/v1/status", summary="Counts, pending work, the serving profile (this caller's memories)"
    )
    def status(request: Request) -> dict:
        return visible_status(memory, access_of(request))

    # -- writing ------------------------------------------------------------------------------
    @app.post(
        "/v1/episodes",
        summary="Store one or many episodes, or one document (the rules of ingest; "
        "rejections located)",
    )
    async def add_episodes(
        request: Request,
        memory_name: str | None = Query(None, alias="memory"),
        kind: str | None = None,
        name: str | None = None,
        modified_at: str | None = None,
    ) -> JSONResponse:
        access = access_of(request)
        access.require_write()
        media = media_type(request.headers.get("content-type"))
        if media in CONTENT_TYPES or media == "application/octet-stream":
            return await add_raw_document(
                request, access, memory_name, kind, name, media, modified_at
            )
        default_memory = memory_name
        body = await read_json(request)
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
        if default_memory is not None:
            try:
                default_memory = validate_memory_name(default_memory)
            except ValueError as exc:
                raise InputError(f"memory: {exc}") from None
        if kind is not None:
            try:
                kind = validate_kind(kind)
            except ValueError as exc:
                raise InputError(f"kind: {exc}") from None
        # One scope decision, on the memory each item will be stored under (written into it).
        kept, refused = writable_items(access, items, default_memory)
        report = await run_in_threadpool(memory.add, [item for _, item in kept], kind=kind)
        document = report.to_json()
        # add() locates items by their place in what it was given: map back to the request's.
        for rejection in document["rejected"]:
            index = int(rejection["location"][len("episodes[") : -1])
            rejection["location"] = f"episodes[{kept[index][0]}]"
        document["rejected"] = sorted(
            document["rejected"] + refused, key=lambda r: int(r["location"][len("episodes[") : -1])
        )
        return added(document, report)

    async def add_raw_document(
        request: Request,
        access: Access,
        memory_name: str | None,
        kind: str | None,
        name: str | None,
        media: str,
        modified_at: str | None,
    ) -> JSONResponse:
        """One document as the raw body (``Content-Type`` its type, ``?memory=&name=``): its bytes
        as they are (no base64), up to the document size limit of ``ingest``."""
        if memory_name is None:
            raise InputError("'memory' is a required query parameter for a document upload")
        memory_name = writable_memory(access, memory_name)
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

    add_observation_routes(app, memory, access_of, read_json)

    @app.post("/v1/index", summary="Run an index pass now: chunk and embed everything pending")
    async def index(request: Request) -> Any:
        access = await run_in_threadpool(access_of, request)
        access.require_write()
        ticket = index_queue(memory).request()  # one pass at a time, on a thread of its own
        if not ticket.started:
            return JSONResponse(ticket.to_json(), status_code=202)
        report = await asyncio.wrap_future(ticket.future)
        document = {"profile": report.profile, "seconds": round(report.seconds, 3)}
        if access.all_memories:  # counts span every memory
            document.update(
                episodes=report.episodes,
                chunks=report.chunks,
                vectors=report.vectors,
                windowVectors=report.windows,
                pendingEpisodes=report.pending_after,
            )
        return document

    @app.delete(
        "/v1/episodes/{episode_id}", summary="Forget one episode and everything derived from it"
    )
    def forget_episode(request: Request, episode_id: int) -> dict:
        return forget_visible(memory, access_of(request), None, episode_id)

    @app.delete("/v1/memories/{memory_name}", summary="Forget a whole memory")
    def forget_memory(request: Request, memory_name: str) -> dict:
        return forget_visible(memory, access_of(request), memory_name, None)

    return RequestGuard(app, exposure, memory.tokens_configured)
