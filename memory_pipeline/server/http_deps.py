"""What the HTTP API's routes depend on (FastAPI ``Depends``): the shared ``Memory`` and the
caller's ``Access``, decided from its bearer token before the route runs.

``create_app`` puts the ``Memory`` and the ``Exposure`` on ``app.state``. ``Caller`` is the
access a request's token grants (``access.access_of_token``: every request asks afresh, so a
token created or revoked counts at once); ``Writer`` is a caller that may write, else 403. The
``bearer`` security scheme is what the OpenAPI document declares; the token itself is read by
``access.bearer`` as before, so what counts as a token is unchanged.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memory_pipeline.memory import Memory
from memory_pipeline.server.access import Access, access_of_token, bearer

BEARER_SCHEME = "bearer"

bearer_scheme = HTTPBearer(
    scheme_name=BEARER_SCHEME,
    description="A token of `memory-pipeline tokens create` (scoped to memories, read or "
    "write). A loopback server with no token in its database needs none.",
    auto_error=False,  # the route's own 401 (access_of_token), in the API's error shape
)


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
