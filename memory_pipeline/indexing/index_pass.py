"""One index pass: pending episodes -> chunks -> vectors, committed episode by episode.

A pass lists up to ``PASS_LIMIT`` pending episodes, oldest occurrence first, and claims them
``CLAIM_ROUND`` at a time while the model works on the previous round (an advisory lock each,
given back once the episode is written: concurrent passes, in this process or others, never
embed the same episode), chunks them (pure, see ``domain.chunking``), embeds the chunks that
still lack a vector for the active profile, each with its paragraph windows (``domain.windows``,
stored in the same row), in model-sized batches (several episodes share a batch so the model
always sees full batches), and commits the episodes whose vectors are all there every 500
vectors or 2 seconds: each episode's chunks and vectors land in one transaction or not at all.

Model calls run on worker threads, up to ``Embedder.in_flight`` at once
(MEMORY_PIPELINE_EMBED_PARALLEL); commits run on ``STORE_THREADS`` storing threads, each with its
own connection, so two commits' database work overlaps; this thread claims, chunks and plans the
next rounds and collects the vectors meanwhile. So the model server, the database and this
process's own work all overlap.

The canary phrase (``canary``) proves where vectors come from. By default (``Embedder.canary_every`` 1,
MEMORY_PIPELINE_CANARY_EVERY) every model call carries it as its first input and a call's
vectors are used only when its own canary matches the generation's stored canary: one request,
one model, so a model swapped at any moment writes nothing, whichever server of several behind
one URL answers. With ``canary_every`` N > 1 (one server behind the URL), one call in N carries
it (at least every ``CANARY_EVERY_SECONDS``), plus one after the pass's last call, and a vector
is committed only once a canary call that *started after its own call had ended* came back
matching: the server embedded that canary after the vector, so a model swapped before the
vector was made, and still serving, fails that canary, the pass stops and the vector is never
written. What N > 1 cannot see: a model swapped and swapped back between two canaries (a
fraction of a second apart), and, behind a load balancer, a server that answered the vectors
but none of the canaries: hence the default of 1.

A failure (model down, model changed, database gone) stops the pass; what was committed stays,
everything else stays pending for the next pass.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

import numpy as np
import psycopg

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing.canary import (
    CANARY_MIN_COSINE,
    CANARY_TEXT,
    check_canary,
    cosine_of,
    refuse,
    stored_canary,
)
from memory_pipeline.indexing.plan import chunk_views, plan
from memory_pipeline.indexing.report import IndexReport, count
from memory_pipeline.progress import Count, Progress, ProgressCallback
from memory_pipeline.storage import index_store, profiles_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.index_store import ChunkVectors, EpisodeWork, WriteReport
from memory_pipeline.storage.profiles_store import StoredProfile

# A pass claims up to this many episodes, CLAIM_ROUND at a time: the next round is claimed
# and planned while the model embeds the last one, so the model is not idle between rounds, and
# a pass holds at most a few rounds of claims (advisory locks) at once. The list is ids only;
# each pass's end drains the pipeline (the model idles while the last calls return and the next
# pass lists its work and re-checks the canary), so a backlog is taken in few passes.
PASS_LIMIT = 100_000

# Vectors written by one pass after which the tables it wrote are ANALYZEd before the next pass
# lists what is pending. Autovacuum gets there eventually, but a listing planned on statistics
# from when the tables were nearly empty (a first bulk index, a database copied from a
# template) can be planned badly enough to run for many minutes (benchmarks/README.md). The
# pass runs it on a spare connection beside itself once it has also committed half of what it
# listed (statistics of half the rows plan the listing as well, and autovacuum's own threshold
# then sees the other half), so the command does not wait for it after the pass.
ANALYZE_AFTER = 10_000
CLAIM_ROUND = 500
# Model calls submitted beyond those in flight (their inputs are prepared, their episodes claimed).
QUEUED_CALLS = 32
# Complete episodes are committed together once they hold this many new vectors, or when this
# long has passed since the last commit (a slow model still commits every few seconds), and
# before a model failure ends the pass. Per-batch commits paid a transaction's fixed cost
# (lock, re-check, two COPYs, keyword statistics) for every ~100 chunks once paragraph windows
# filled the model batches: a quarter of the store path's speed (benchmarks/bench_indexing.py).
WRITE_EVERY_CHUNKS = 500
WRITE_EVERY_SECONDS = 2.0
# Storing threads, each committing on its own connection. With one, the database worked on one
# commit at a time and was the pass's bottleneck against a fast model server (the storing thread
# busy ~96% of the pass: benchmarks/README.md); two commits of different episodes overlap up to
# the keyword statistics rows of their memory, which they take last, in one order
# (keyword_stats_record.sql). A second connection the pool cannot spare at once is done without.
STORE_THREADS = 2
# Commits handed to the storing threads and not finished yet, at most: when the database is the
# slower side, the pass waits here instead of holding ever more embedded work in memory.
WRITES_AHEAD = STORE_THREADS + 1

# With ``Embedder.canary_every`` above 1, the canary still rides at least this often, so
# vectors wait little for the canary that proves them (module docstring).
CANARY_EVERY_SECONDS = 0.25

log = logging.getLogger(__name__)


# One model input of a pass: the episode's work, the chunk id, how many views the chunk has, text.
_View = tuple[EpisodeWork, str, int, str]


def index_pass(
    db: Database,
    embedder: Embedder,
    *,
    limit: int = PASS_LIMIT,
    day: dt.date | None = None,
    on_progress: ProgressCallback | None = None,
    chunked_only: bool = False,
    on_committed: Callable[[list[int]], None] | None = None,
    analyze_after: int | None = ANALYZE_AFTER,
) -> IndexReport:
    """Index up to ``limit`` pending episodes (optionally of one ingest day) with ``embedder``;
    ``chunked_only`` leaves episodes without stored chunks to the ``chunks`` stage;
    ``on_committed`` gets the ids of each batch of episodes once its commit is done (on this
    thread; what it raises fails the pass). Once it has committed ``analyze_after`` vectors and
    half the episodes it listed, the pass ANALYZEs what it writes on a spare connection beside
    itself (``report.analyzed``; None: never). ``on_progress`` gets a ``Progress`` of stage
    "index" after each claim round and each model call (``_Pass.progress``).

    Pending episodes are listed once, then claimed ``CLAIM_ROUND`` at a time while the model
    works on the previous ones (``index_store.claim_episodes``): passes running at once, in this
    process or others, never embed the same episode. A vector is written only after a canary
    sent once its call had ended matched the generation's (module docstring): a model swapped
    at any moment, and still serving, writes nothing (``ModelRefused``).
    """
    started = time.perf_counter()
    report = IndexReport(profile=embedder.profile.name, passes=1)
    # Claims (session advisory locks) and reads on ``conn``, commits on the storing threads'
    # connections (a psycopg connection runs one query at a time).
    with db.connection() as conn, contextlib.ExitStack() as stack:
        store_conns = [stack.enter_context(db.connection())]
        for _ in range(STORE_THREADS - 1):
            spare = stack.enter_context(db.spare_connection())
            if spare is not None:
                store_conns.append(spare)
        statistics = _StatisticsBeside(db, analyze_after)
        run = _Pass(
            conn,
            store_conns,
            embedder,
            report,
            limit=limit,
            day=day,
            chunked_only=chunked_only,
            on_committed=on_committed,
            statistics=statistics,
            on_progress=on_progress,
        )
        try:
            run.execute()
        finally:
            run.close()
            report.analyzed = statistics.join()
    report.seconds = time.perf_counter() - started
    return report


class _Pass:
    """One index pass: claims and plans on ``conn``, model calls in flight on worker threads,
    commits on ``store_conns`` from as many storing threads (claims released, in the order the
    commits were handed over, once each is done)."""

    def __init__(
        self,
        conn,
        store_conns: list,
        embedder: Embedder,
        report: IndexReport,
        *,
        limit: int,
        day: dt.date | None,
        chunked_only: bool = False,
        on_committed: Callable[[list[int]], None] | None = None,
        statistics: _StatisticsBeside | None = None,
        on_progress: ProgressCallback | None = None,
    ):
        self.on_progress = on_progress
        # What progress is measured by: model inputs (chunks and their windows) embedded of
        # those planned, so it moves inside one long document; episodes are shown beside.
        self.episodes_gone = 0  # listed, then found done or held by another pass, or left out
        self.episodes_planned = 0
        self.views_planned = 0
        self.views_done = 0
        self.conn, self.embedder, self.report, self.limit, self.day = (
            conn,
            embedder,
            report,
            limit,
            day,
        )
        self.statistics = statistics
        self.free_conns: queue.SimpleQueue = (
            queue.SimpleQueue()
        )  # a storing thread takes one per commit
        for store_conn in store_conns:
            self.free_conns.put(store_conn)
        self.store = ThreadPoolExecutor(max_workers=len(store_conns), thread_name_prefix="store")
        self.writing: deque[tuple[Future, list[EpisodeWork]]] = (
            deque()
        )  # commits in order, with their work
        self.store_failed = False
        self.chunked_only = chunked_only
        self.on_committed = on_committed
        self.target = profiles_store.writing_target(conn, embedder.profile)
        self.profile: StoredProfile | None = None  # registered at the first claim that finds work
        self.canary: np.ndarray | None = None
        self.claimed: set[int] = set()  # held now
        self.candidates: list[int] | None = None  # pending ids, listed at the first claim
        self.cursor = 0  # candidates before it were tried
        self.exhausted = False
        self.views: deque[_View] = deque()  # planned, not yet in a call
        self.batches: list[
            tuple[list[_View], bool] | None
        ] = []  # by call number: views, canary first?
        self.next_call = 0
        # The last call that carried the canary: the pass's probe (``check_canary``) counts as call -1.
        self.canary_call, self.canary_sent = -1, time.perf_counter()
        self.received: dict[tuple[int, str], list[np.ndarray]] = {}
        self.ended: dict[int, float] = {}  # episode id -> the latest end of its calls so far
        # Embedded episodes wait in ``unproven`` (with the end of their last call) until a canary
        # sent after that end matches (``proven_until``: the latest such canary's start).
        self.unproven: list[tuple[float, EpisodeWork]] = []
        self.proven_until = float("-inf")
        self.complete: list[
            EpisodeWork
        ] = []  # embedded and proven, not yet handed to the storing thread
        self.complete_vectors = 0  # the chunk vectors they hold
        self.last_write = time.perf_counter()

    def progress(self, note: str = "") -> Progress:
        """Where the pass is: vectors embedded of those planned, the total extrapolated from the
        episodes planned so far while some listed are still unplanned; episodes committed of
        those the pass will do."""
        listed = len(self.candidates) if self.candidates is not None else None
        expected = None if listed is None else listed - self.episodes_gone
        total: float | None = self.views_planned
        estimated = False
        if expected is None:
            total = None
        elif self.episodes_planned < expected:
            if self.episodes_planned and self.views_planned:
                unplanned = expected - self.episodes_planned
                total = self.views_planned + unplanned * self.views_planned / self.episodes_planned
                estimated = True
            else:
                total = None
        return Progress(
            "index",
            self.views_done,
            total,
            "vectors",
            estimated=estimated,
            also=(Count("episodes", self.report.episodes, expected),),
            note=note,
        )

    def tell(self, note: str = "") -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress(note))

    def execute(self) -> None:
        report = self.report
        calls = model_calls(self.embedder, self.next_inputs)
        try:
            for number, vectors, started, ended in calls:
                report.embed_seconds += ended - started
                report.model_calls += 1
                batch = self.batches[number]
                assert batch is not None  # each call's batch is read once, as its call returns
                views, with_canary = batch
                self.batches[number] = None
                if with_canary:
                    self.prove(vectors[0], started)
                    vectors = vectors[1:]
                # A call's own matching canary proves its vectors too (one request, one model).
                self.receive(views, vectors, float("-inf") if with_canary else ended)
                self.promote()
                if (
                    self.complete_vectors >= WRITE_EVERY_CHUNKS
                    or time.perf_counter() - self.last_write >= WRITE_EVERY_SECONDS
                ):
                    self.flush()
                self.collect(ahead=WRITES_AHEAD)
                self.tell()
        except Exception:
            if not self.store_failed:
                self.flush()  # what is complete (and proven) is kept
                self.collect(ahead=0)
            raise
        finally:
            calls.close()  # a failure: no model call is left running or queued
        if self.unproven:
            # The last calls' vectors: one more canary, sent after every call has ended.
            started = time.perf_counter()
            vector = self.embedder.embed_documents([CANARY_TEXT])[0]
            report.model_calls += 1
            self.prove(vector, started)
            self.promote()
        self.flush()
        self.collect(ahead=0)
        self.tell()

    def prove(self, canary: np.ndarray, started: float) -> None:
        """Check a canary the model embedded in a call sent at ``started``: a mismatch stops the
        pass (the proven episodes are committed first, nothing else); a match proves every
        call that had ended before ``started`` (``promote``)."""
        assert self.profile is not None and self.canary is not None  # set by the first claim
        cosine = cosine_of(canary, self.canary)
        if cosine < CANARY_MIN_COSINE:
            # The unproven episodes are dropped; the committed ones are the original model's
            # (each was followed by a matching canary).
            self.flush()
            self.collect(ahead=0)  # every commit done: ``kept`` counts them all
            refuse(self.conn, self.profile, cosine, kept=self.report.vectors)
        self.proven_until = max(self.proven_until, started)

    def promote(self) -> None:
        """Move the embedded episodes whose calls are all proven to ``complete``."""
        waiting = []
        for ended, work in self.unproven:
            if ended <= self.proven_until:
                self.complete.append(work)
                self.complete_vectors += len(work.missing)
            else:
                waiting.append((ended, work))
        self.unproven = waiting

    def next_inputs(self) -> list[str] | None:
        """The inputs of the next model call (the canary first when it is due), claiming more
        work when the planned views run short; None when there is nothing left for this pass."""
        now = time.perf_counter()
        with_canary = (
            self.next_call - self.canary_call >= self.embedder.canary_every
            or now - self.canary_sent >= CANARY_EVERY_SECONDS
        )
        size = max(1, self.embedder.batch_size - 1) if with_canary else self.embedder.batch_size
        while len(self.views) < size and not self.exhausted:
            self.views.extend(self.claim_round())
        if not self.views:
            return None
        views = [self.views.popleft() for _ in range(min(size, len(self.views)))]
        self.batches.append((views, with_canary))
        if with_canary:
            self.canary_call, self.canary_sent = self.next_call, now
        self.next_call += 1
        texts = [text for *_, text in views]
        return [CANARY_TEXT, *texts] if with_canary else texts

    def claim_round(self) -> list[_View]:
        """Claim and plan the next pending episodes; write those that need no model; the model
        inputs (views) the others need."""
        if self.candidates is None:
            # One scan for the pass; rounds then claim from this list (another pass may hold
            # some, or have finished them: both are skipped).
            self.candidates = index_store.pending_ids(
                self.conn, self.target, limit=self.limit, day=self.day
            )
        if self.cursor >= len(self.candidates):
            self.exhausted = True
            return []
        ids = self.candidates[self.cursor : self.cursor + CLAIM_ROUND]
        self.cursor += len(ids)
        pending, finished = index_store.claim_episodes(self.conn, self.target, ids)
        self.release(finished)
        self.claimed.update(p.id for p in pending)
        self.episodes_gone += len(ids) - len(pending)
        if not pending:
            return []
        if self.profile is None:
            self.tell("checking the model (canary)")
            self.profile = self.target = profiles_store.register_profile(
                self.conn, self.embedder.profile
            ).writing()
            # The gate: a wrong dimension, an unreachable server or a changed model stops the
            # pass before any write; it also records the canary of a new generation.
            self.report.canary_cosine = check_canary(self.conn, self.embedder, self.profile)
            self.report.canary_checked = True
            self.report.model_calls += 1
            self.canary = stored_canary(self.conn, self.profile)
        works = plan(self.conn, self.profile, pending, anchors=self.embedder.heading_anchors)
        if self.chunked_only:
            # Unchunked episodes stay claimed (so this pass does not claim them again) and are
            # released with the pass's other claims when it ends.
            kept = [w for w in works if w.has_stored_chunks]
            self.episodes_gone += len(works) - len(kept)
            works = kept
        self.episodes_planned += len(works)
        self.write([w for w in works if w.complete])  # nothing to embed (only chunks missing)
        self.collect(ahead=WRITES_AHEAD)
        # One model input per view (the chunk, then its windows); calls cut across chunks,
        # episodes and rounds, so every model call but the pass's last is full.
        queue: list[_View] = []
        for work in works:
            if work.complete:
                continue
            chunk_of = {c.chunk_id: c for c in work.chunks}
            for cid in work.missing:
                views = chunk_views(
                    chunk_of[cid].text,
                    windows=self.embedder.paragraph_windows,
                    anchor=chunk_of[cid].anchor,
                )
                queue.extend((work, cid, len(views), text) for text in views)
        self.views_planned += len(queue)
        self.tell()
        return queue

    def receive(self, batch: list[_View], vectors: np.ndarray, ended: float) -> None:
        """File a call's vectors (``ended``: when it came back, -inf when its own canary proved
        it); an episode whose last vector came now waits in ``unproven`` for a canary sent after
        the latest end of its calls (``prove``)."""
        self.views_done += len(batch)
        for (work, cid, n_views, _), vector in zip(batch, vectors):
            last = self.ended.get(work.episode.id)
            self.ended[work.episode.id] = ended if last is None else max(last, ended)
            got = self.received.setdefault((work.episode.id, cid), [])
            got.append(vector)
            if len(got) == n_views:
                del self.received[(work.episode.id, cid)]
                work.vectors[cid] = ChunkVectors(got[0], np.stack(got[1:]) if n_views > 1 else None)
                self.report.windows += n_views - 1
        for w in {id(w): w for w, *_ in batch}.values():
            if w.complete and w.missing:  # ``missing`` is not empty: its last vector came now
                self.unproven.append((self.ended.pop(w.episode.id), w))  # the end of its last call

    def flush(self) -> None:
        """Hand the complete episodes to the storing thread."""
        self.write(self.complete)
        self.complete, self.complete_vectors, self.last_write = [], 0, time.perf_counter()

    def write(self, works: list[EpisodeWork]) -> None:
        """Commit ``works`` on the storing thread (``collect`` releases their claims when done)."""
        if works:
            self.writing.append((self.store.submit(self._commit, self.profile, works), works))

    def _commit(
        self, profile: StoredProfile | None, works: list[EpisodeWork]
    ) -> tuple[WriteReport, float]:
        """On a storing thread: ``works`` committed on a free store connection; what was written
        and the seconds it took (added to the report by ``collect``, on the pass's thread)."""
        conn = self.free_conns.get()
        try:
            t0 = time.perf_counter()
            return index_store.write_episodes(conn, profile, works), time.perf_counter() - t0
        finally:
            self.free_conns.put(conn)

    def collect(self, *, ahead: int) -> None:
        """Release the claims of the finished commits; wait until at most ``ahead`` are still
        running or queued. A failed commit raises here (its episodes stay pending)."""
        while self.writing and (self.writing[0][0].done() or len(self.writing) > ahead):
            future, works = self.writing.popleft()
            try:
                written, seconds = future.result()
            except BaseException:
                self.store_failed = True
                raise
            count(self.report, works, written, seconds)
            if self.statistics is not None:
                self.statistics.committed(self.report, listed=len(self.candidates or ()))
            episode_ids = [w.episode.id for w in works]
            self.release(episode_ids)
            if self.on_committed:
                self.on_committed(episode_ids)

    def close(self) -> None:
        """Wait for the commits in flight (their failures are already reported, or the pass is
        failing anyway), stop the storing thread, give back every claim still held."""
        for future, _ in self.writing:
            try:
                future.result()
            except BaseException:  # noqa: BLE001 - see above
                pass
        self.writing.clear()
        self.store.shutdown(wait=True)
        self.release(list(self.claimed))

    def release(self, episode_ids: list[int]) -> None:
        """Give back claims (their episodes are written, or the pass ends)."""
        if not episode_ids:
            return
        self.claimed.difference_update(episode_ids)
        try:
            index_store.release_claims(self.conn, episode_ids)
        except psycopg.Error:
            pass  # the connection is gone, and its claims with it


class _StatisticsBeside:
    """``index_store.analyze_written`` on a thread and a spare connection, started by
    ``committed`` once the pass has committed ``threshold`` vectors and half of the ``listed``
    episodes; ``join`` waits for it and says whether it ran (without a spare connection, or
    failing, it did not: ``index_until_done`` then runs it after the pass)."""

    def __init__(self, db: Database, threshold: int | None):
        self.db, self.threshold = db, threshold
        self.thread: threading.Thread | None = None
        self.done = False

    def committed(self, report: IndexReport, *, listed: int) -> None:
        if (
            self.thread is None
            and self.threshold is not None
            and report.vectors + report.windows >= self.threshold
            and 2 * report.episodes >= listed
        ):
            self.thread = threading.Thread(target=self._analyze, name="analyze", daemon=True)
            self.thread.start()

    def _analyze(self) -> None:
        try:
            with self.db.spare_connection() as conn:
                if conn is not None:
                    index_store.analyze_written(conn)
                    self.done = True
        except Exception:  # noqa: BLE001 - a lost database fails the pass itself; the ANALYZE is redone after it
            log.debug("ANALYZE beside the pass failed", exc_info=True)

    def join(self) -> bool:
        if self.thread is not None:
            self.thread.join()
        return self.done


def model_calls(
    embedder: Embedder, next_inputs: Callable[[], list[str] | None]
) -> Generator[tuple[int, np.ndarray, float, float], None, None]:
    """Embed each list of texts ``next_inputs()`` gives (until it gives None) in one model call,
    up to ``embedder.in_flight`` calls at once on worker threads, yielding (call number, vectors,
    started, ended) as the calls complete (``time.perf_counter`` when the worker sent the call and
    when its answer was decoded); call numbers count from 0 in the order the inputs were given.

    The caller stores (and ``next_inputs`` claims more work) while the next calls run: the model
    server is never idle waiting for the database, and with several calls in flight it is never
    idle waiting for this process. Closing the generator cancels the calls not yet started and
    waits for the running ones. When a call fails, no further call starts; the calls already
    running are waited for and those that succeeded are still yielded (their vectors are valid
    and the caller keeps them), then the first failure is raised.
    """

    def one(number: int, texts: list[str]) -> tuple[int, np.ndarray, float, float]:
        t0 = time.perf_counter()
        vectors = embedder.embed_documents(texts)
        return number, vectors, t0, time.perf_counter()

    in_flight = max(1, embedder.in_flight)
    submitted = 0
    with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="embed") as pool:
        running: set = set()
        try:
            # More submitted than run: a worker that finishes starts the next call at once, and the
            # queue outlasts the caller's pauses (a commit of 500 chunks, a claim round).
            while True:
                while len(running) < in_flight + QUEUED_CALLS:
                    texts = next_inputs()
                    if texts is None:
                        break
                    running.add(pool.submit(one, submitted, texts))
                    submitted += 1
                if not running:
                    return
                done, running = wait(running, return_when=FIRST_COMPLETED)
                failed = next((f.exception() for f in done if f.exception() is not None), None)
                if failed is not None:
                    started = {f for f in running if not f.cancel()}  # queued calls never start
                    running = set()
                    wait(started)
                    kept = [f for f in done | started if f.exception() is None]
                    for future in sorted(kept, key=lambda f: f.result()[0]):
                        yield future.result()
                    raise failed
                for future in done:
                    yield future.result()
        finally:
            for future in running:
                future.cancel()
