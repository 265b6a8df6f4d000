"""Opening the database: migrations exactly once (also under a race), and plain failures."""

from __future__ import annotations

import multiprocessing
import socket

import psycopg
import pytest

from memory_pipeline.errors import DatabaseUnavailable, ExitCode
from memory_pipeline.storage.database import Database, redact
from memory_pipeline.storage.migrations import apply_migrations, migration_files

from memory_pipeline_tests.conftest import create_database, drop_database


def _apply(url: str, queue) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        queue.put(apply_migrations(conn))


def test_migrations_apply_once_even_when_processes_race(pg_server):
    name = create_database(pg_server, template=None)
    url = pg_server.uri(name)
    try:
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        procs = [ctx.Process(target=_apply, args=(url, queue)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
            assert p.exitcode == 0
        applied = [queue.get(timeout=5) for _ in procs]
        expected = [stem for _, stem, _ in migration_files()]
        # Exactly one process applied everything; the others found nothing to do.
        assert sorted(applied, key=len) == [[], [], [], expected]
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        assert [r[0] for r in rows] == [v for v, _, _ in migration_files()]
        with psycopg.connect(url, autocommit=True) as conn:
            assert apply_migrations(conn) == []
    finally:
        drop_database(pg_server, name)


def test_open_fresh_database_migrates_and_registers_vector_types(pg_server):
    name = create_database(pg_server, template=None)
    try:
        with Database.open(pg_server.uri(name)) as db, db.connection() as conn:
            version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
            assert tuple(int(x) for x in version.split(".")[:2]) >= (0, 7)
            value = conn.execute("SELECT '[1,2,3]'::halfvec").fetchone()[0]
            assert list(value.to_list()) == [1.0, 2.0, 3.0]
    finally:
        drop_database(pg_server, name)


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_is_a_plain_database_error():
    url = f"postgresql://someone:secret@127.0.0.1:{_unused_port()}/nothing"
    with pytest.raises(DatabaseUnavailable) as info:
        Database.open(url)
    message = str(info.value)
    assert message.startswith("the database is unavailable: cannot connect to")
    assert "secret" not in message and "***" in message
    assert info.value.exit_code == ExitCode.DATABASE_UNAVAILABLE


def test_redact_hides_passwords_only():
    assert redact("postgresql://u:pw@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact("postgresql://postgres:@/db?host=/tmp") == "postgresql://postgres:***@/db?host=/tmp"
    assert redact("postgresql://h/db") == "postgresql://h/db"
