"""What the HTTP API's routes depend on (FastAPI ``Depends``): the shared ``Memory`` and the
caller's ``Access``, decided from its bearer token before the route runs.

``create_app`` puts the ``Memory`` and the ``Exposure`` on ``app.state``. ``Caller`` is the
access a request's token grants (``access.access_of_token``: every request asks afresh, so a
token created or revoked counts at once); ``Writer`` is a caller that may write, else 403. The
``bearer`` security scheme is what the OpenAPI document declares; the token itself is read by
``access.bearer`` as before, so what counts as a token is unchanged. ``SearchQuery`` is a
search's ``SearchOptions`` read from its query parameters; ``routes`` the router of a module's
routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memory_pipeline.domain.policies import MAX_LIMIT
from memory_pipeline.memory import Memory
from memory_pipeline.server.access import Access, SearchOptions, access_of_token, bearer
from memory_pipeline.server.http_models import COMMON_ERRORS, errors

BEARER_SCHEME = "bearer"

bearer_scheme = HTTPBearer(
    scheme_name=BEARER_SCHEME,
    description="A token of `memory-pipeline tokens create` (scoped to memories, read or "
    "write). A loopback server with no token in its database needs none.",
    auto_error=False,  # the route's own 401 (access_of_token), in the API's error shape
)


def routes(tag: str) -> APIRouter:
    """The router of a module's routes, under ``tag`` in the OpenAPI document; each route
    documents ``COMMON_ERRORS`` (the guard's refusals, the outages) besides its own answers."""
    return APIRouter(tags=[tag], responses=errors(*COMMON_ERRORS))


def memory_of(request: Request) -> Memory:
    return request.app.state.memory


def caller(
    request: Request,
    memory: Annotated[Memory, Depends(memory_of)],
    _: Annotated[HTTPAuthorizationCredentials | None, Security(bearer_scheme)],
) -> Access:
    """The access of the token the request presents (401 if it needs one and has none)."""
    return access_of_token(
        memory,
        bearer(request.headers.get("authorization")),
        loopback=request.app.state.exposure.loopback,
    )


def writer(access: Annotated[Access, Depends(caller)]) -> Access:
    """The caller, if its token may write (403 otherwise)."""
    access.require_write()
    return access


MemoryDep = Annotated[Memory, Depends(memory_of)]
Caller = Annotated[Access, Depends(caller)]
Writer = Annotated[Access, Depends(writer)]


@dataclass(frozen=True)
class SearchQuery(SearchOptions):
    """``SearchOptions`` as a search request's query parameters (``Depends()``), each as the
    OpenAPI document describes it."""

    policy: Annotated[
        str | None,
        Query(
            description="A named search policy: default, recent, journal, work, exact, ...",
            examples=["default"],
        ),
    ] = None
    # Bounds checked here, so the error names this query parameter, not the CLI's flag.
    limit: Annotated[
        int | None,
        Query(
            ge=1,
            le=MAX_LIMIT,
            description="How many results (default: the policy's)",
            examples=[3],
        ),
    ] = None
    channels: Annotated[
        str | None,
        Query(
            description="Comma-separated channels: vector, keyword, graph, date, observation, "
            "belief"
        ),
    ] = None
    contested: Annotated[
        bool | None,
        Query(description="Include contested beliefs or not, whatever the policy says"),
    ] = None
    history: Annotated[
        bool, Query(description="Also superseded revisions holding the query's words, marked")
    ] = False
    as_of: Annotated[
        str | None,
        Query(
            description="What was in force then: a date (YYYY-MM-DD, its end) or an ISO 8601 "
            "date-time; episodes occurred by then, revisions current and statements valid then",
            examples=["2024-12-31"],
        ),
    ] = None
    passages: Annotated[
        bool,
        Query(description="Let one episode hold several results (default: each episode once)"),
    ] = False
