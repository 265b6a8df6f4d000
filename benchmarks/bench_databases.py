"""Fresh databases for the benchmarks: on MEMORY_PIPELINE_DATABASE_URL's server, or on an embedded
PostgreSQL started in a temporary folder, and nothing left behind afterwards.

Shared by ``bench_indexing.py`` (a fresh database per run, cloned from a migrated template) and
``bench_search_latency.py`` (one database). Imported as a sibling module: running
``python benchmarks/bench_x.py`` puts this folder first on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memory_pipeline.storage.database import Database
from memory_pipeline.storage.embedded import ensure_embedded_server
from memory_pipeline.storage.migrations import apply_migrations


def wait_for_exit(pid: int | None, timeout: float = 15.0) -> bool:
    """Wait until a released server's postmaster has exited (scripts that must leave no process)."""
    if not pid:
        return True
    try:
        proc = psutil.Process(pid)
        deadline = time.monotonic() + timeout
        while (
            time.monotonic() < deadline
            and proc.is_running()
            and proc.status() != psutil.STATUS_ZOMBIE
        ):
            time.sleep(0.05)
        if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
            print(f"warning: the embedded PostgreSQL (pid {pid}) is still running", file=sys.stderr)
            return False
    except psutil.Error:
        pass
    return True


class Databases:
    """Fresh ``bench_*`` databases on one server, cloned from a migrated template."""

    def __init__(self, prefix: str = "mp_bench_", home: Path | None = None) -> None:
        """``home``: an embedded server in that folder, kept afterwards (a run that resumes);
        without it, a temporary folder deleted at ``close``."""
        self._server = None
        self._tmp: Path | None = None
        self._made: list[str] = []
        self._template: str | None = None
        self.migrations: list[str] = []  # applied to the template: the schema the figures are for
        external = os.environ.get("MEMORY_PIPELINE_DATABASE_URL")
        if external:
            self.where = "external server (MEMORY_PIPELINE_DATABASE_URL)"
            self._external = external
        else:
            self._external = None
            if home is None:
                self._tmp = home = Path(tempfile.mkdtemp(prefix=prefix))
            self._server = ensure_embedded_server(home)
            self.where = f"embedded PostgreSQL in {home}"

    @property
    def server_pid(self) -> int | None:
        """The embedded PostgreSQL's postmaster (None on an external server)."""
        return self._server.pid if self._server is not None else None

    def url(self, name: str) -> str:
        if self._server is not None:
            return self._server.uri(name)
        return make_conninfo(self._external, dbname=name)

    def _admin(self) -> psycopg.Connection:
        if self._server is not None:
            return psycopg.connect(self._server.uri("postgres"), autocommit=True)
        # The maintenance database of the same server, with the same credentials.
        params = conninfo_to_dict(self._external)
        for maintenance in ("postgres", "template1", params.get("dbname")):
            try:
                return psycopg.connect(
                    make_conninfo(self._external, dbname=maintenance), autocommit=True
                )
            except psycopg.OperationalError:
                continue
        raise SystemExit(
            "cannot reach a maintenance database on MEMORY_PIPELINE_DATABASE_URL's server"
        )

    def _create(self, name: str, template: str | None) -> None:
        with self._admin() as conn:
            if template:
                conn.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                        sql.Identifier(name), sql.Identifier(template)
                    )
                )
            else:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self._made.append(name)

    def fresh(self) -> str:
        """The URL of a new, migrated, empty database."""
        if self._template is None:
            self._template = "bench_tpl_" + uuid.uuid4().hex[:10]
            self._create(self._template, None)
            with psycopg.connect(self.url(self._template), autocommit=True) as conn:
                self.migrations = apply_migrations(conn)
        name = "bench_" + uuid.uuid4().hex[:12]
        self._create(name, self._template)
        return self.url(name)

    def kept(self, name: str) -> str:
        """The URL of database ``name``, created and migrated if missing, never dropped here: a
        run stopped part way finds it again."""
        with self._admin() as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        with psycopg.connect(self.url(name), autocommit=True) as conn:
            self.migrations = apply_migrations(conn)
        return self.url(name)

    def clone(self, url: str) -> str:
        """The URL of a new database copied from ``url``'s (nobody may be connected to it)."""
        name = "bench_" + uuid.uuid4().hex[:12]
        self._create(name, conninfo_to_dict(url)["dbname"])
        return self.url(name)

    def drop(self, url: str) -> None:
        name = conninfo_to_dict(url)["dbname"]
        with self._admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        if name in self._made:
            self._made.remove(name)

    def close(self) -> None:
        """Drop every database we made; stop the embedded server and delete its folder."""
        try:
            for name in list(self._made):
                with contextlib.suppress(Exception):
                    self.drop(self.url(name))
        finally:
            if self._server is not None:
                pid = self._server.pid
                self._server.release()
                self._server = None
                wait_for_exit(pid)
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None


@contextlib.contextmanager
def fresh_database(dbs: Databases) -> Iterator[Database]:
    url = dbs.fresh()
    db = Database.open(url)
    try:
        yield db
    finally:
        db.close()
        dbs.drop(url)
