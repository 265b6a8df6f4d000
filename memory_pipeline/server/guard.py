"""The checks every request to ``serve`` and ``mcp --http`` passes before any route runs.

``Exposure`` says where a server listens and which names it answers to; ``RequestGuard`` (ASGI
middleware) applies it: on loopback a foreign ``Host`` is 421 (DNS rebinding); a foreign
``Origin`` is 403 (cross-site writes); beyond loopback every request is 401 while no token
exists; a request body that stalls past the client timeout is 408.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import anyio
from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from memory_pipeline import config
from memory_pipeline.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

ALLOWED_HOSTS_VAR = "MEMORY_PIPELINE_ALLOWED_HOSTS"
LOOPBACK_NAMES = frozenset({"localhost"})


def split_host(value: str) -> tuple[str, str | None]:
    """``(host, port)`` of a ``Host`` value or an origin's authority: ``"[::1]:80"`` gives
    ``("::1", "80")``, ``"localhost"`` gives ``("localhost", None)``; host names lowercased."""
    value = value.strip()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
        if rest and (port is None or not port.isdigit()):
            # "[::1]evil", "[::1]:x": not an authority; a name no allow-list holds.
            return value.lower(), None
        return host.lower(), port
    if value.count(":") == 1:
        host, _, port = value.partition(":")
        if not port.isdigit():
            return value.lower(), None
        return host.lower(), port
    return value.lower(), None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, brackets allowed) is this machine's loopback."""
    host = host.strip().strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Exposure:
    """Where a server listens (``bound``, the socket's address) and what it answers to."""

    bound: str
    extra_hosts: frozenset[str] = frozenset()
    client_timeout_s: float = config.DEFAULT_CLIENT_TIMEOUT_S

    @classmethod
    def of(cls, bound: str, environ: Mapping[str, str]) -> Exposure:
        """``MEMORY_PIPELINE_ALLOWED_HOSTS`` and ``MEMORY_PIPELINE_CLIENT_TIMEOUT`` applied."""
        names = frozenset(_normal(name) for name in config.allowed_hosts(environ))
        return cls(bound, names, config.client_timeout(environ))

    @property
    def loopback(self) -> bool:
        return is_loopback(self.bound)

    def _named(self, authority: str) -> bool:
        """Whether ``authority`` (``host`` or ``host:port``) is an allowed name: an entry
        without a port allows every port, one with a port only that one."""
        host, port = split_host(authority)
        shown = f"[{host}]" if ":" in host else host
        return shown in self.extra_hosts or (
            port is not None and f"{shown}:{port}" in self.extra_hosts
        )

    def host_refusal(self, host: str | None) -> str | None:
        """Why a ``Host`` header is refused (None: accepted). Only a loopback server checks it:
        beyond loopback every request needs a token anyway, and clients use many names."""
        if not self.loopback:
            return None
        if not host:
            return "a Host header is required"
        name, _ = split_host(host)
        if is_loopback(name) or self._named(host):
            return None
        return (
            f"this server answers to its loopback names only, not to Host {host[:100]!r} "
            f"(a reverse proxy's names go in {ALLOWED_HOSTS_VAR})"
        )

    def origin_refusal(self, origin: str | None, host: str | None) -> str | None:
        """Why an ``Origin`` header is refused (None: absent, or accepted)."""
        if origin is None:
            return None
        parts = urllib.parse.urlsplit(origin.strip())
        authority = parts.netloc
        if parts.scheme in ("http", "https") and authority and "@" not in authority:
            if (
                is_loopback(split_host(authority)[0])
                or self._named(authority)
                or (host is not None and authority.lower() == host.strip().lower())
            ):
                return None
        return (
            f"requests from web pages of other origins are refused (Origin {origin[:100]!r}; "
            f"a reverse proxy's names go in {ALLOWED_HOSTS_VAR})"
        )


def _normal(entry: str) -> str:
    host, port = split_host(entry)
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port else shown


class _Throttled:
    """One log line per reason per minute: a flood of refused requests must not flood the log."""

    def __init__(self, every_s: float = 60.0):
        self.every_s = every_s
        self._last: dict[str, float] = {}

    def warning(self, reason: str, message: str, *args) -> None:
        now = time.monotonic()
        if now - self._last.get(reason, -math.inf) >= self.every_s:
            self._last[reason] = now
            log.warning(message, *args)


class RequestGuard:
    """ASGI middleware applying ``exposure`` to every HTTP request before ``app`` sees it.

    ``tokens_exist`` asks the database whether any token exists (``Memory.tokens_configured``);
    it is called for each request of a server bound beyond loopback. ``json_posts``: every POST
    body must be ``application/json`` (the MCP endpoint; the HTTP API checks per route, since
    a document upload has its own types). ``buffer_body``: read the whole body (at most that
    many bytes) before the app runs, for an app that reads it whole anyway (the MCP SDK) and
    would log a stalled one as a crash; else the app streams it, bounded as it reads."""

    def __init__(
        self,
        app,
        exposure: Exposure,
        tokens_exist: Callable[[], bool],
        *,
        json_posts: bool = False,
        buffer_body: int | None = None,
    ):
        self.app = app
        self.exposure = exposure
        self.tokens_exist = tokens_exist
        self.json_posts = json_posts
        self.buffer_body = buffer_body
        self._log = _Throttled()
        self._closed: bool | None = None

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            # No route speaks WebSocket (or anything but HTTP): refused before any check could
            # be skipped for it.
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        refusal = await self._refusal(scope)
        if refusal is not None:
            status, message = refusal
            headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            await JSONResponse({"error": message}, status, headers)(scope, receive, send)
            return
        if self.buffer_body is not None:
            await self._buffered(scope, receive, send)
        else:
            await self._with_body_timeout(scope, receive, send)

    async def _refusal(self, scope) -> tuple[int, str] | None:
        headers = Headers(scope=scope)
        for name in ("host", "origin"):
            if len(headers.getlist(name)) > 1:
                # Which of two would a proxy or the app read? Neither is trusted.
                self._log.warning(name, "refused a request with more than one %s header", name)
                return 400, f"more than one {name.capitalize()} header"
        host = headers.get("host")
        reason = self.exposure.host_refusal(host)
        if reason is not None:
            self._log.warning("host", "refused a request: %s", reason)
            return 421, reason
        reason = self.exposure.origin_refusal(headers.get("origin"), host)
        if reason is not None:
            self._log.warning("origin", "refused a request: %s", reason)
            return 403, reason
        if not self.exposure.loopback:
            try:
                closed = not await anyio.to_thread.run_sync(self.tokens_exist)
            except DatabaseUnavailable as exc:
                return 503, str(exc)
            if closed != self._closed:
                self._closed = closed
                if closed:
                    log.warning(
                        "no token exists: this server listens on %s beyond loopback and answers "
                        "401 to every request until `memory-pipeline tokens create` makes one",
                        self.exposure.bound,
                    )
            if closed:
                return 401, (
                    "this server listens beyond loopback and no token exists yet: it answers "
                    "no request until one is created (memory-pipeline tokens create)"
                )
        if self.json_posts and scope["method"] == "POST":
            media = media_type(headers.get("content-type"))
            if media != "application/json":
                return 415, unsupported_media(media)
        return None

    async def _buffered(self, scope, receive, send) -> None:
        timeout = self.exposure.client_timeout_s
        limit = self.buffer_body
        assert limit is not None  # only a guard that buffers bodies calls this
        body = bytearray()
        while True:
            with anyio.move_on_after(timeout) as waited:
                message = await receive()
            if waited.cancelled_caught:
                self._log.warning("slow", "ended a request whose body paused over %.0f s", timeout)
                await _too_slow(timeout)(scope, _nothing, send)
                return
            if message["type"] != "http.request":
                return  # the client left
            body += message.get("body", b"")
            if len(body) > limit:
                error = {
                    "error": f"the body is larger than {self.buffer_body} bytes, the most accepted"
                }
                await JSONResponse(error, 413, {"Connection": "close"})(scope, _nothing, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _with_body_timeout(self, scope, receive, send) -> None:
        """Run the app with ``receive`` bounded: while the body is incomplete, each part must
        arrive within the client timeout, else the answer is 408 and the app's own is dropped."""
        timeout = self.exposure.client_timeout_s
        body_done = False
        timed_out = False

        async def bounded_receive():
            nonlocal body_done, timed_out
            if body_done or timed_out:
                return await receive()
            with anyio.move_on_after(timeout) as scope_:
                message = await receive()
            if scope_.cancelled_caught:
                timed_out = True
                self._log.warning("slow", "ended a request whose body paused over %.0f s", timeout)
                await _too_slow(timeout)(scope, _nothing, send)
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def guarded_send(message) -> None:
            if not timed_out:
                await send(message)

        await self.app(scope, bounded_receive, guarded_send)


def _too_slow(timeout: float) -> JSONResponse:
    return JSONResponse(
        {"error": f"the request body paused for more than {timeout:g} s"},
        408,
        {"Connection": "close"},
    )


async def _nothing():
    return {"type": "http.disconnect"}


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value, without parameters, lowercased ("" if none)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def unsupported_media(media: str) -> str:
    given = f"Content-Type {media!r}" if media else "no Content-Type"
    return f"a JSON body must be sent as Content-Type application/json (got {given})"
