"""The embedders' HTTP transport: one JSON POST per model call over kept-alive connections.

The client's CPU per call counts in an index pass (it shares the cores with the database and the
model server), and httpx costs several times the standard library's per call, so a plain
``http://`` server reached directly is called through ``LeanPoster`` (a pool of ``http.client``
connections). ``https://``, URLs with credentials and proxies from the environment keep httpx
(``HttpxPoster``). Both raise ``TransportTimeout`` or ``TransportFailed``, which the providers
turn into their plain messages.
"""

from __future__ import annotations

import http.client
import select
import threading
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

# Idle connections kept per poster; more calls than this in flight open and then close the rest.
MAX_IDLE = 64


class TransportTimeout(Exception):
    """No answer within the timeout (connecting, sending or reading)."""


class TransportFailed(Exception):
    """No connection could be made (``connecting``), or it broke during the exchange."""

    def __init__(self, reason: str, *, connecting: bool):
        super().__init__(reason)
        self.connecting = connecting


@dataclass(frozen=True)
class Answer:
    """The server's whole answer to one POST."""

    status: int
    reason: str
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


def lean_applies(url: str) -> bool:
    """Whether ``url`` can go through ``LeanPoster`` without changing what is sent where: plain
    http, no credentials in it, no proxy from the environment."""
    parts = urllib.parse.urlsplit(url)
    if (
        parts.scheme != "http"
        or not parts.hostname
        or parts.username is not None
        or parts.password is not None
    ):
        return False
    proxies = urllib.request.getproxies_environment()
    return not (proxies.get("http") or proxies.get("all"))


class LeanPoster:
    """POSTs bytes to one http:// URL over a pool of kept-alive ``http.client`` connections;
    thread-safe (each call takes a connection of its own)."""

    def __init__(self, url: str, *, timeout_s: float, headers: Mapping[str, str]):
        parts = urllib.parse.urlsplit(url)
        if not parts.hostname:  # lean_applies(url) was asked first: it refuses such a URL
            raise ValueError(f"no host in {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.timeout_s = timeout_s
        self.headers = dict(headers)
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def post(self, body: bytes) -> Answer:
        conn = self._take_idle()
        if conn is not None:
            try:
                return self._exchange(conn, body, reused=True)
            except _Stale:
                # The server closed the kept-alive connection as the request went out (an idle
                # timeout): nothing was answered, so the call is made again on a new connection.
                pass
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            conn.connect()
        except TimeoutError:
            conn.close()
            raise TransportTimeout(f"connecting to {self.host}:{self.port}") from None
        except OSError as exc:
            conn.close()
            raise TransportFailed(str(exc), connecting=True) from None
        return self._exchange(conn, body, reused=False)

    def _exchange(self, conn: http.client.HTTPConnection, body: bytes, *, reused: bool) -> Answer:
        response = None
        try:
            conn.request("POST", self.target, body=body, headers=self.headers)
            response = conn.getresponse()
            content = response.read()
        except _STALE as exc:
            conn.close()
            if reused and response is None:
                raise _Stale() from None
            raise TransportFailed(str(exc) or type(exc).__name__, connecting=False) from None
        except TimeoutError:
            conn.close()
            raise TransportTimeout("reading the answer") from None
        except (http.client.HTTPException, OSError) as exc:
            conn.close()
            raise TransportFailed(str(exc) or type(exc).__name__, connecting=False) from None
        except BaseException:
            conn.close()
            raise
        answer = Answer(response.status, response.reason, content)
        if response.will_close:
            conn.close()
        else:
            self._give_back(conn)
        return answer

    def _take_idle(self) -> http.client.HTTPConnection | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()  # the most recently used: the least likely to be stale
            if _still_open(conn):
                return conn
            conn.close()

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


# What a kept-alive connection the server already closed raises before any answer arrives.
_STALE = (
    http.client.RemoteDisconnected,
    ConnectionResetError,
    BrokenPipeError,
    ConnectionAbortedError,
)


class _Stale(Exception):
    """A reused connection was closed by the server before it answered."""


def _still_open(conn: http.client.HTTPConnection) -> bool:
    """An idle connection has nothing to read: readable means the server closed it (or sent
    something unasked), so it is not reused."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


class HttpxPoster:
    """The same interface over an ``httpx.Client`` (https, credentials, proxies)."""

    def __init__(self, client: httpx.Client, url: str, *, headers: Mapping[str, str]):
        self.client, self.url, self.headers = client, url, dict(headers)

    def post(self, body: bytes) -> Answer:
        try:
            response = self.client.post(self.url, content=body, headers=self.headers)
        except httpx.TimeoutException:
            raise TransportTimeout("waiting for the answer") from None
        except httpx.ConnectError as exc:
            raise TransportFailed(str(exc), connecting=True) from None
        except (httpx.TransportError, OSError) as exc:
            raise TransportFailed(str(exc) or type(exc).__name__, connecting=False) from None
        return Answer(response.status_code, response.reason_phrase, response.content)

    def close(self) -> None:
        self.client.close()
