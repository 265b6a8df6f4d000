"""The HTTP API's one error shape, ``{"error": "<plain message>"}``, and the status of each failure.

Every failure a route raises becomes that shape here (``add_error_handlers``): the pipeline's own
errors by their kind (``status_of``), a request FastAPI could not validate as a located 422, an
unknown route or method in plain words, and anything unexpected as a logged 500 "internal
error" that never carries a stack trace.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from memory_pipeline.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    EmbedderUnavailable,
    InputError,
    MemoryPipelineError,
    ModelRefused,
    UnknownPage,
)
from memory_pipeline.memory import UnknownEpisode, UnknownMemory, UnknownStatement
from memory_pipeline.server.access import Forbidden, NotFound, Unauthorized

log = logging.getLogger(__name__)


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


async def expected_failure(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemoryPipelineError)
    status = status_of(exc)
    if status == 500:
        log.error("unexpected failure on %s %s: %s", request.method, request.url.path, exc)
        return error(500, "internal error")
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return error(status, str(exc), headers)


async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """A parameter FastAPI could not validate, located: ``query parameter 'limit': <why>``."""
    assert isinstance(exc, RequestValidationError)
    problems = []
    for item in exc.errors()[:5]:
        where = " ".join(
            str(part) for part in item.get("loc", ()) if part not in ("query", "path", "body")
        )
        problems.append(
            f"{item.get('loc', ('?',))[0]} parameter {where!r}: {item.get('msg', 'invalid')}"
        )
    return error(422, "; ".join(problems) or "invalid request")


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = {404: "no such route", 405: f"method {request.method} is not allowed here"}.get(
        exc.status_code, str(exc.detail)
    )
    return error(exc.status_code, message, getattr(exc, "headers", None))


async def unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected failure on %s %s", request.method, request.url.path)
    return error(500, "internal error")


async def disconnected(request: Request, exc: Exception) -> Response:
    # The client left (or paused too long: the guard has answered 408): nobody to answer.
    return Response(status_code=400)


def add_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(MemoryPipelineError, expected_failure)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)
    app.add_exception_handler(ClientDisconnect, disconnected)
