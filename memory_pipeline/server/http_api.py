"""The HTTP API (``memory-pipeline serve``): FastAPI over one shared ``Memory``.

The routes are routers of their own modules (``reading_routes``, ``writing_routes``,
``observation_routes``, ``episode_routes``) over ``Memory`` and the caller's ``Access``
(``http_deps``); OpenAPI and its pages come offline from ``api_docs``. Every error is
``{"error": "<plain message>"}`` with its status (docs/http-api.md lists them); a response never
carries a stack trace: what is not an expected failure is logged and answered 500
(``http_errors``).
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
