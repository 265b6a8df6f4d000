"""The connection to PostgreSQL: where it is, checks, migrations and a psycopg 3 pool.

``Database.open()`` is the one way in: it resolves the URL (an external server from
``MEMORY_PIPELINE_DATABASE_URL``, else the embedded one), checks that pgvector >= 0.7 is
available, applies migrations, and opens a pool whose connections know the vector types.
Connection failures become ``DatabaseUnavailable`` so commands can tell them apart from
embedding failures, and come fast: with the server down a checkout fails within about a second
(``ServerHealth``, a probe that waits at most ``PROBE_WAIT_S``) instead of waiting out the pool's
timeout, and the pool reconnects by itself once the server is back. With the server frozen
rather than down, a statement already sent would wait forever: ``StallWatch`` cuts it.
"""

from __future__ import annotations

import contextlib
import re
import select
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector
from psycopg.abc import Params, QueryNoTemplate
from psycopg_pool import ConnectionPool, PoolTimeout

from memory_pipeline import config
from memory_pipeline.errors import ConfigurationError, DatabaseUnavailable, MissingExtension
from memory_pipeline.redaction import mask_secrets
from memory_pipeline.storage.embedded import EmbeddedServer, ensure_embedded_server
from memory_pipeline.storage.migrations import apply_migrations
from memory_pipeline.storage.stall_watch import StallWatch

MIN_PGVECTOR = (0, 7)
# libpq's shortest connect timeout: a server that does not answer within it is down for us.
CONNECT_TIMEOUT_S = 2
# How long a probe waits for a fresh connection before calling the server silent: a live server
# answers within milliseconds, and a frozen one (accepting into its backlog, never replying)
# must be seen well inside libpq's 2 s minimum connect timeout.
PROBE_WAIT_S = 0.9
# A checkout waits this long for a pooled connection before asking whether the server answers
# at all (``ServerHealth``): a busy pool then keeps waiting, a dead server is a failure at once.
CHECKOUT_SLICE_S = 0.5
# How long the pool retries a lost connection in the background before it gives up on it; the
# next checkout starts a fresh attempt, so after an outage the pool reconnects within seconds
# instead of after an exponential backoff of minutes.
RECONNECT_S = 5.0
# A pooled connection back in the pool for less than this is handed out without a round trip to
# the server, unless the server has written to it meanwhile (see ``CheckWhenIdle``).
CHECK_IDLE_S = 5.0


def redact(url: str) -> str:
    """The connection string (URL or key=value) without its password, for messages."""
    return mask_secrets(url)


def one_row(
    conn: psycopg.Connection, query: QueryNoTemplate, params: Params | None = None
) -> tuple:
    """The row of a query that always returns one (an aggregate, ``SELECT EXISTS``,
    ``INSERT ... RETURNING``); ``fetchone()`` is typed optional, for the queries that may not."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        raise RuntimeError("a query that always returns a row returned none")
    return row


@contextlib.contextmanager
def one_trip_transaction(conn: psycopg.Connection) -> Iterator[None]:
    """A transaction sent in one pipeline: BEGIN, the block's statements and COMMIT reach the
    server together and are answered after one Sync, one round trip (``conn.transaction()``
    inside a pipeline syncs when it begins, when it ends and when the pipeline ends: four). The
    block must not read results, which would sync; read them after it. A failed statement or
    block rolls the transaction back, and its error is raised."""
    try:
        with conn.pipeline():
            conn.execute("BEGIN")
            yield
            conn.execute("COMMIT")
    except BaseException:
        if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        raise


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextlib.contextmanager
def database_errors(where: str = "") -> Iterator[None]:
    """Turn connection-level failures into ``DatabaseUnavailable`` (other SQL errors stay bugs)."""
    try:
        yield
    except (psycopg.OperationalError, PoolTimeout) as exc:
        prefix = f"{where}: " if where else ""
        raise DatabaseUnavailable(prefix + first_line(exc)) from exc


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def check_pgvector(conn: psycopg.Connection, where: str) -> None:
    row = conn.execute(
        "SELECT default_version, installed_version FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if row is None:
        raise MissingExtension(
            f"the PostgreSQL server at {where} has no 'vector' extension (pgvector >= 0.7 is "
            "required): install pgvector on the server, or unset MEMORY_PIPELINE_DATABASE_URL "
            "to use the embedded server"
        )
    version = row[1] or row[0]
    if _version_tuple(version) < MIN_PGVECTOR:
        raise MissingExtension(
            f"the PostgreSQL server at {where} has pgvector {version}; the 'vector' extension "
            ">= 0.7 is required (halfvec and HNSW on halfvec): ALTER EXTENSION vector UPDATE"
        )


class CheckWhenIdle:
    """The pool's checkout check: a round trip (``ConnectionPool.check_connection``) only for a
    connection idle longer than ``idle_s``, or one the server wrote to while it sat in the pool.

    A search takes several connections at once; a round trip for each at every checkout was a
    measurable share of its latency. A server that ends a connection (restart, shutdown,
    ``pg_terminate_backend``) sends an error and closes the socket, so the socket turns readable:
    such a connection is still checked, fails the check, and the pool hands out a fresh one. One
    that dies unseen within ``idle_s`` fails its statement with ``OperationalError``, which
    ``database_errors`` turns into ``DatabaseUnavailable``; the pool then discards it.
    """

    def __init__(
        self,
        idle_s: float = CHECK_IDLE_S,
        *,
        clock=time.monotonic,
        round_trip=ConnectionPool.check_connection,
    ):
        self.idle_s = idle_s
        self._clock = clock
        self._round_trip = round_trip
        self._since: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def returned(self, conn: psycopg.Connection) -> None:
        """The pool's ``reset`` callback (and ``configure``'s: a new connection is fresh)."""
        with self._lock:
            self._since[conn] = self._clock()

    def __call__(self, conn: psycopg.Connection) -> None:
        with self._lock:
            since = self._since.get(conn)
        if since is None or self._clock() - since > self.idle_s or conn.closed or _has_input(conn):
            self._round_trip(conn)


def _has_input(conn: psycopg.Connection) -> bool:
    """Whether the server wrote to this idle connection (an error before closing it, or EOF).
    ``poll``, not ``select``: a long-lived process (a web server, Dagster's daemon) can hold file
    descriptors above select's limit of 1024, where ``select`` raises."""
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    return bool(poller.poll(0))


class ServerHealth:
    """Whether the database server answers, as the pool last saw it: the flag that lets every
    request fail within seconds while the server is down, and recover as soon as it is back.

    Up after any successful checkout; down when the pool gave up reconnecting
    (``reconnect_failed``) or a probe failed. A probe is one direct connection attempt with the
    short connect timeout, made by one caller at a time and at most every ``every_s`` seconds
    (others take its answer), so a crowd of waiting requests does not become a crowd of
    connection attempts.
    """

    def __init__(self, url: str, every_s: float = 1.0, *, clock=time.monotonic):
        self.url = url
        self.every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._probed_at = -float("inf")
        self.up = True
        self.reason = ""

    def saw_connection(self) -> None:
        self.up = True

    def lost(self, reason: str) -> None:
        self.up, self.reason = False, reason

    def reconnect_failed(self, _pool) -> None:
        self.lost("the pool could not reconnect")

    def answers(self) -> bool:
        """Whether the server accepts a connection now (the last probe's answer if recent)."""
        with self._lock:
            if self._clock() - self._probed_at >= self.every_s:
                reason = _probe(self.url, PROBE_WAIT_S)
                if reason is None:
                    self.up = True
                else:
                    self.lost(reason)
                self._probed_at = self._clock()
            return self.up


def _probe(url: str, wait_s: float) -> str | None:
    """None when a fresh connection to ``url`` opens within ``wait_s``, else why not. The attempt
    runs in a thread of its own, left to end by its connect timeout when the server is silent."""
    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S).close()
            outcome.append(None)
        except psycopg.Error as exc:
            outcome.append(first_line(exc))

    thread = threading.Thread(target=attempt, name="database-probe", daemon=True)
    thread.start()
    thread.join(wait_s)
    if not outcome:
        return f"the server accepts no connection within {wait_s:g} s (frozen or unreachable)"
    return outcome[0]


# One search runs its channel groups at the same time, each on its own pooled connection:
# vector, keyword, graph, date (when the query names one) and the statement channels (sharing
# one), as ``search.channels.run.channel_groups`` groups them. With fewer, a channel
# would wait for another's connection to be returned.
POOL_SIZE = 5


class Database:
    """A migrated database and a pool of connections to it."""

    def __init__(
        self,
        url: str,
        pool: ConnectionPool,
        embedded: EmbeddedServer | None = None,
        health: ServerHealth | None = None,
    ):
        self.url = url
        self.pool = pool
        self.embedded = embedded
        self.health = health or ServerHealth(url)
        self.watch = StallWatch(self.health.answers)

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        home: Path | None = None,
        environ: Mapping[str, str] | None = None,
        max_size: int = POOL_SIZE,
    ) -> Database:
        if url:
            config.check_database_url(url, "the database URL")
        else:
            url = config.database_url(environ)
        embedded = None
        if url is None:
            embedded = ensure_embedded_server(home or config.home_dir(environ), environ)
            url = embedded.uri()
        where = redact(url)
        with database_errors(f"cannot connect to {where}"):
            try:
                first = psycopg.connect(url, autocommit=True, connect_timeout=10)
            except psycopg.ProgrammingError as exc:  # libpq refused the string itself
                raise ConfigurationError(
                    f"invalid database URL {where}: {first_line(exc)}"
                ) from None
            with first as conn:
                check_pgvector(conn, where)
                apply_migrations(conn)
            health = ServerHealth(url)
            watch = StallWatch(health.answers)

            def round_trip(conn: psycopg.Connection) -> None:
                with watch.watching(conn):  # a frozen server must not hang the checkout itself
                    ConnectionPool.check_connection(conn)

            check = CheckWhenIdle(round_trip=round_trip)

            def configure(conn: psycopg.Connection) -> None:
                register_vector(conn)
                # psycopg prepares a statement after its fifth run, and PostgreSQL may then plan
                # it once for any values (a generic plan). The right plan depends on them: a
                # memory of 100 chunks among a million is read through its own rows, a large one
                # through the keyword index; planned blind, the keyword channel read every
                # memory's postings of a common word (benchmarks/README.md). The parse stays
                # cached; only the plan is made for each run's values.
                conn.execute("SET plan_cache_mode = force_custom_plan")
                check.returned(conn)

            pool = ConnectionPool(
                url,
                min_size=1,
                max_size=max_size,
                configure=configure,
                reset=check.returned,
                # autocommit: every ``conn.transaction()`` block is then a real transaction that
                # commits on exit, never a savepoint inside an implicit outer one.
                kwargs={
                    "connect_timeout": CONNECT_TIMEOUT_S,
                    "application_name": "memory_pipeline",
                    "autocommit": True,
                },
                timeout=30,
                # After a server restart pooled connections are dead; checking on checkout
                # hands out a fresh one, so the next run works without restarting the process.
                check=check,
                reconnect_timeout=RECONNECT_S,
                reconnect_failed=health.reconnect_failed,
                open=False,
            )
            pool.open(wait=True, timeout=15)
        db = cls(url, pool, embedded, health)
        db.watch = watch
        return db

    def _checkout(self) -> psycopg.Connection:
        """A pooled connection, waiting up to the pool's timeout while the server answers (a
        busy pool), but failing at once (``DatabaseUnavailable``) when it does not: at once
        while it is known down, else after a slice of waiting and a failed probe."""
        deadline = time.monotonic() + self.pool.timeout
        while True:
            if not self.health.up and not self.health.answers():
                raise DatabaseUnavailable(
                    f"cannot connect to {redact(self.url)}: {self.health.reason}"
                )
            left = deadline - time.monotonic()
            try:
                conn = self.pool.getconn(timeout=max(0.01, min(CHECKOUT_SLICE_S, left)))
            except PoolTimeout:
                if not self.health.answers():
                    raise DatabaseUnavailable(
                        f"cannot connect to {redact(self.url)}: {self.health.reason}"
                    ) from None
                if left <= CHECKOUT_SLICE_S:
                    raise PoolTimeout(
                        f"no pooled connection was free within {self.pool.timeout:g} s"
                    ) from None
                continue
            self.health.saw_connection()
            return conn

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        with database_errors(f"lost the connection to {redact(self.url)}"):
            conn = self._checkout()
            try:
                with self.watch.watching(conn), conn:  # as the pool's connection(): end a
                    yield conn  # transaction left open
            finally:
                self.pool.putconn(conn)

    @contextlib.contextmanager
    def spare_connection(self, timeout: float = 1.0) -> Iterator[psycopg.Connection | None]:
        """A pooled connection if the pool has one to spare within ``timeout`` seconds, else None:
        for work that is faster with one more connection but can do without (the index pass's
        second storing thread), so it never waits out the pool's timeout behind other users."""
        with database_errors(f"lost the connection to {redact(self.url)}"):
            try:
                conn = self.pool.getconn(timeout=timeout)
            except PoolTimeout:
                yield None
                return
            try:
                with self.watch.watching(conn), conn:  # as the pool's connection(): end a
                    yield conn  # transaction left open
            finally:
                self.pool.putconn(conn)

    def close(self) -> None:
        self.watch.close()
        self.pool.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
