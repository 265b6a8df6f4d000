"""StallWatch on real connections: a statement is cut only when the server does not answer."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from memory_pipeline.storage.stall_watch import StallWatch


def _sleep_watched(db_url: str, answers: bool) -> tuple[float, BaseException | None]:
    watch = StallWatch(lambda: answers, after_s=0.2, every_s=0.05)
    outcome: list = []
    with psycopg.connect(db_url, autocommit=True) as conn:

        def statement() -> None:
            started = time.monotonic()
            try:
                with watch.watching(conn):
                    conn.execute("SELECT pg_sleep(1.5)")
                outcome.append((time.monotonic() - started, None))
            except psycopg.OperationalError as exc:
                outcome.append((time.monotonic() - started, exc))

        thread = threading.Thread(target=statement)
        thread.start()
        thread.join(10)
    watch.close()
    return outcome[0]


def test_a_statement_on_a_silent_server_is_cut_and_one_on_a_live_server_runs_on(db_url):
    seconds, error = _sleep_watched(db_url, answers=False)
    assert isinstance(error, psycopg.OperationalError) and seconds < 1.0
    seconds, error = _sleep_watched(db_url, answers=True)
    assert error is None and seconds == pytest.approx(1.5, abs=1.0)
