"""Running an ASGI app on a bound socket with uvicorn, with a deadline for each request's headers.

uvicorn times out only an idle keep-alive connection, and only after a first response: a client
that connects and sends nothing, or sends its headers a byte every few seconds, holds a
connection (and a file descriptor) for as long as it likes. Here the headers of each request
must be complete within the client timeout of its connection or of the previous response; the
connection is then closed. A stalled body is the guard's (``guard.RequestGuard``: 408).
"""

from __future__ import annotations

import logging
import socket


def _timed_protocol(header_timeout_s: float):
    """uvicorn's HTTP protocol class (httptools or h11, as it picks) with the header deadline."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HeaderDeadline(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _deadline = None

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _waiting_for_headers(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._deadline is not None and not self._waiting_for_headers():
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # A pipelined request may already have started in super(): then its headers are in.
            if not self.transport.is_closing() and self._waiting_for_headers():
                self._arm()

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _headers_too_slow(self) -> None:
            self._deadline = None
            if self._waiting_for_headers() and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline


def _plain_server_log() -> None:
    """The servers' own log lines (refusals, unexpected failures) on stderr, one line each,
    whatever handler a library installed at the root (the MCP SDK's wraps lines in boxes)."""
    logger = logging.getLogger("memory_pipeline.server")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("memory-pipeline: %(levelname)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def serve_asgi(app, sock: socket.socket, client_timeout_s: float) -> None:
    """Serve ``app`` on ``sock`` until SIGINT/SIGTERM (uvicorn's graceful shutdown, 5 s)."""
    import uvicorn

    from memory_pipeline.domain.documents.document import return_large_buffers

    _plain_server_log()
    return_large_buffers()  # uploads' memory returned when they end

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
        http=_timed_protocol(client_timeout_s),
    )
    uvicorn.Server(config).run(sockets=[sock])
