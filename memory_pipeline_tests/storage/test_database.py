"""Opening the database: migrations exactly once (also under a race), and plain failures."""

from __future__ import annotations

import multiprocessing
import select
import socket
import time

import psycopg
import pytest

from memory_pipeline.errors import DatabaseUnavailable, ExitCode
from memory_pipeline.storage.database import (
    CheckWhenIdle,
    Database,
    one_trip_transaction,
    redact,
)
from memory_pipeline.storage.migrations import apply_migrations, migration_files
from memory_pipeline_tests.conftest import create_database, drop_database
from memory_pipeline_tests.support.round_trips import counting


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
            version = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()[0]
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
    assert (
        redact("postgresql://postgres:@/db?host=/tmp") == "postgresql://postgres:***@/db?host=/tmp"
    )
    assert redact("postgresql://h/db") == "postgresql://h/db"


def _wait_until_gone(pg_server, pid: int) -> None:
    with psycopg.connect(pg_server.uri("postgres"), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 10
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, "the backend did not end"
            time.sleep(0.02)


def test_a_pooled_connection_the_server_ended_is_replaced_at_checkout_even_when_just_used(
    db, pg_server
):
    with db.connection() as conn:
        pid = conn.info.backend_pid
    _wait_until_gone(pg_server, pid)  # well within CheckWhenIdle's idle time
    with db.connection() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.info.backend_pid != pid


def test_checkout_checks_by_round_trip_only_idle_connections_or_ones_the_server_wrote_to(
    db_url, pg_server
):
    now = [0.0]
    trips = []
    check = CheckWhenIdle(
        5.0, clock=lambda: now[0], round_trip=lambda conn: trips.append(conn.info.backend_pid)
    )
    with psycopg.connect(db_url, autocommit=True) as conn:
        pid = conn.info.backend_pid
        check(conn)  # never seen: checked
        check.returned(conn)
        now[0] = 4.9
        check(conn)  # just used, nothing from the server: handed out as it is
        now[0] = 5.1
        check(conn)  # idle too long
        check.returned(conn)
        assert trips == [pid, pid]
        _wait_until_gone(pg_server, pid)
        deadline = time.monotonic() + 5
        while not select.select([conn.fileno()], [], [], 0.1)[0]:  # the server's goodbye arrives
            assert time.monotonic() < deadline
        check(conn)
        assert trips == [pid, pid, pid]


def test_one_trip_transaction_commits_in_one_round_trip_and_rolls_back_a_failure(db):
    with db.connection() as conn:
        conn.execute("CREATE TABLE trip_probe (x int)")
        with counting(conn) as trips, one_trip_transaction(conn):
            conn.execute("SET LOCAL synchronous_commit = off")
            seen = conn.execute("SELECT current_setting('synchronous_commit')")
            conn.execute("INSERT INTO trip_probe VALUES (1)")
        assert trips.count == 1 and seen.fetchall() == [("off",)]
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)  # local to it
        with pytest.raises(psycopg.errors.DivisionByZero), one_trip_transaction(conn):
            conn.execute("INSERT INTO trip_probe VALUES (2)")
            conn.execute("SELECT 1 / 0")
        with pytest.raises(RuntimeError), one_trip_transaction(conn):
            conn.execute("INSERT INTO trip_probe VALUES (3)")
            raise RuntimeError("the block failed")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert conn.execute("SELECT array_agg(x) FROM trip_probe").fetchone() == ([1],)
