"""Counting a connection's round trips to the server from libpq's own protocol trace."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator

import psycopg


class Trips:
    """The round trips seen while ``counting``: each Sync (extended protocol) and each simple
    Query the client sent waits for the server's answer once."""

    def __init__(self) -> None:
        self.count = 0


@contextlib.contextmanager
def counting(conn: psycopg.Connection) -> Iterator[Trips]:
    trips = Trips()
    with tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield trips
        finally:
            conn.pgconn.untrace()
            trace.seek(0)
            sent = [line.split("\t") for line in trace.read().splitlines()]
            trips.count = sum(1 for f in sent if f[0] == "F" and f[2] in ("Sync", "Query"))
