"""A loopback TCP port in front of the test PostgreSQL that a test can close and open again.

Closing it refuses new connections and cuts the open ones (what a stopped server does to its
clients); opening it again on the same port is the server coming back. The bytes are passed
through untouched, so the clients speak to the real server.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading

from psycopg.conninfo import conninfo_to_dict


def unix_socket_of(url: str) -> str:
    """The unix socket path of a ``postgresql://...?host=DIR`` URL (the embedded server's)."""
    params = conninfo_to_dict(url)
    return os.path.join(params["host"], f".s.PGSQL.{params.get('port') or 5432}")


class TcpForwarder:
    """127.0.0.1:``port`` -> the unix socket ``target``; ``close()`` and ``open()`` at will."""

    def __init__(self, target: str):
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.open()

    def url(self, db_url: str) -> str:
        """``db_url`` (the same database and user) through this port."""
        params = conninfo_to_dict(db_url)
        return f"postgresql://{params.get('user', 'postgres')}@127.0.0.1:{self.port}/{params['dbname']}"

    def open(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                server.connect(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with self._lock:
                    self._open.discard(sock)
            source.close()

    def __enter__(self) -> TcpForwarder:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
