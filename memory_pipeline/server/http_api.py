"""The HTTP API (``memory-pipeline serve``): FastAPI over one shared ``Memory``.

The routes are routers of their own modules, over ``Memory`` and the caller's ``Access``
(``http_deps``): ``reading_routes`` (``GET /v1/search``, ``/v1/memories``, ``/v1/status``,
``/v1/episodes/{id}``, with ``?page=N`` a long episode page by page, ``domain.pages``),
``writing_routes`` (``POST /v1/episodes``: JSON episodes, documents among them as base64 items,
or one document as the raw body; ``POST /v1/index``; ``DELETE /v1/episodes/{id}`` and
``/v1/memories/{memory}``) and ``observation_routes`` (``POST``/``GET /v1/observations``,
``PATCH /v1/observations/{id}``) and ``episode_routes`` (``GET /v1/memories/{memory}/episodes``,
``/v1/episodes/{id}/history``: a memory's episodes and a source's revisions). OpenAPI at ``/openapi.json``, docs at ``/docs`` and
``/redoc``, offline (``api_docs``).

Every error is ``{"error": "<plain message>"}`` with its status: 400 unreadable body, 401 no or
bad token (or, beyond loopback, no token exists at all), 403 a read-only token writing or a
foreign ``Origin``, 404 unknown (or not visible) memory, episode or statement, 405 wrong method,
408 a body that stalls, 413 body or batch too large, 415 a JSON body not sent as
``application/json``, 421 a foreign ``Host`` on a loopback server (``guard``), 422 invalid input,
502 the embedding service is down or refused, 503 the database is down. A response never
carries a stack trace: what is not an expected failure is logged and answered 500 "internal
error" (``http_errors``).
"""

from __future__ import annotations

from fastapi import FastAPI

from memory_pipeline.memory import Memory
from memory_pipeline.server import (
    episode_routes,
    observation_routes,
    quality_routes,
    reading_routes,
    writing_routes,
)
from memory_pipeline.server.api_docs import add_api_docs, add_openapi
from memory_pipeline.server.guard import Exposure, RequestGuard
from memory_pipeline.server.http_errors import add_error_handlers
from memory_pipeline.version import __version__


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
    app.state.memory = memory
    app.state.exposure = exposure
    add_api_docs(app)
    add_openapi(app)
    add_error_handlers(app)
    app.include_router(reading_routes.router)
    app.include_router(writing_routes.router)
    app.include_router(observation_routes.router)
    app.include_router(episode_routes.router)
    app.include_router(quality_routes.router)
    return RequestGuard(app, exposure, memory.tokens_configured)
