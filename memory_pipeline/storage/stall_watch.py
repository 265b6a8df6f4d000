"""Cut pooled connections whose statements wait on a database server that no longer answers.

A frozen server (stalled disk, SIGSTOP, network partition) leaves open connections waiting
forever: it enforces no ``statement_timeout`` and its kernel still acknowledges TCP. So a
statement in progress longer than ``STALL_AFTER_S`` makes the watch ask ``ServerHealth`` whether
the server answers a fresh connection; when it does not, the waiting sockets are shut down and
their statements fail at once (``DatabaseUnavailable``). A long statement on a server that
answers is never cut.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
from psycopg.pq import TransactionStatus

# A statement running this long on a pooled connection makes the watch ask whether the server
# answers; with the probe's own wait (``PROBE_WAIT_S``) a frozen server is seen within 2 s.
STALL_AFTER_S = 0.5
# How often the watch looks at the connections in use.
LOOK_EVERY_S = 0.1


class StallWatch:
    """The connections in use, and a thread that cuts those stuck on a server gone silent."""

    def __init__(
        self,
        answers: Callable[[], bool],
        *,
        after_s: float = STALL_AFTER_S,
        every_s: float = LOOK_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._answers = answers
        self.after_s = after_s
        self.every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._in_use: dict[int, tuple[psycopg.Connection, float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self, conn: psycopg.Connection) -> Iterator[None]:
        """Watch ``conn`` while the block uses it."""
        key = id(conn)
        with self._lock:
            self._in_use[key] = (conn, self._clock())
            self._start()
        try:
            yield
        finally:
            with self._lock:
                self._in_use.pop(key, None)

    def _start(self) -> None:
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._run, name="stall-watch", daemon=True)
            self._thread.start()

    def stuck(self) -> list[psycopg.Connection]:
        """The watched connections with a statement in progress, in use longer than ``after_s``."""
        now = self._clock()
        with self._lock:
            held = [conn for conn, since in self._in_use.values() if now - since >= self.after_s]
        return [conn for conn in held if _in_progress(conn)]

    def look(self) -> int:
        """One look: cut the stuck connections if the server does not answer; how many."""
        stuck = self.stuck()
        if not stuck or self._answers():
            return 0
        for conn in stuck:
            cut(conn)
        return len(stuck)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.look()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.every_s + 5)


def _in_progress(conn: psycopg.Connection) -> bool:
    # libpq's transaction status is ACTIVE from sending a statement until its result is read.
    try:
        return conn.pgconn.transaction_status == TransactionStatus.ACTIVE
    except psycopg.Error:
        return False


def cut(conn: psycopg.Connection) -> None:
    """Shut the connection's socket down under the thread waiting on it: its wait wakes, libpq
    reads end-of-file, and the statement fails with ``OperationalError``. The descriptor stays
    libpq's (shutdown, not close), so nothing else can be handed the same number meanwhile."""
    try:
        fd = conn.pgconn.socket
    except psycopg.Error:
        return
    try:
        duplicate = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by the other side
    finally:
        duplicate.close()
