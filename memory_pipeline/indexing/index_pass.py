"""One index pass: pending episodes -> chunks -> vectors, committed episode by episode.

``claims.Claimer`` claims pending episodes a round at a time (concurrent passes never embed the
same episode); the loop chunks them (``plan``) and cuts the chunks still lacking a vector, with
their paragraph windows, into full model calls run on worker threads (``model_calls``);
``proof.CanaryProof`` says which episodes a matching canary vouches for; ``committer.Committer``
commits the proven ones, each episode's chunks and vectors in one transaction. So the model
server, the database and this process overlap. A failure stops the pass; what was committed
stays, the rest stays pending.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing.canary import CANARY_TEXT
from memory_pipeline.indexing.claims import EVERYTHING, Claimer, Scope
from memory_pipeline.indexing.committer import STORE_THREADS, Committer, StatisticsBeside
from memory_pipeline.indexing.model_calls import model_calls
from memory_pipeline.indexing.plan import chunk_views, plan
from memory_pipeline.indexing.proof import CanaryProof
from memory_pipeline.indexing.report import IndexReport
from memory_pipeline.progress import Count, Progress, ProgressCallback
from memory_pipeline.storage import profiles_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.index_store import ChunkVectors, EpisodeWork

# A pass claims up to this many episodes (``claims.CLAIM_ROUND`` at a time). The list is ids
# only; each pass's end drains the pipeline (the model idles while the last calls return and the
# next pass lists its work and re-checks the canary), so a backlog is taken in few passes.
PASS_LIMIT = 100_000

# Vectors written by one pass after which the tables it wrote are ANALYZEd before the next pass
# lists what is pending. Autovacuum gets there eventually, but a listing planned on statistics
# from when the tables were nearly empty (a first bulk index, a database copied from a
# template) can be planned badly enough to run for many minutes (benchmarks/README.md). The
# pass runs it on a spare connection beside itself once it has also committed half of what it
# listed (statistics of half the rows plan the listing as well, and autovacuum's own threshold
# then sees the other half), so the command does not wait for it after the pass.
ANALYZE_AFTER = 10_000

# One model input of a pass: the episode's work, the chunk id, how many views the chunk has, text.
_View = tuple[EpisodeWork, str, int, str]


def index_pass(
    db: Database,
    embedder: Embedder,
    *,
    scope: Scope = EVERYTHING,
    limit: int = PASS_LIMIT,
    on_progress: ProgressCallback | None = None,
    on_committed: Callable[[list[int]], None] | None = None,
    analyze_after: int | None = ANALYZE_AFTER,
) -> IndexReport:
    """Index up to ``limit`` pending episodes of the ``scope`` (``claims.Scope``: everything
    pending, of one ingest day or all, or one day's stored chunks) with ``embedder``;
    ``on_committed`` gets the ids of each batch of episodes once its commit is done (on this
    thread; what it raises fails the pass). Once it has committed ``analyze_after`` vectors and
    half the episodes it listed, the pass ANALYZEs what it writes on a spare connection beside
    itself (``report.analyzed``; None: never). ``on_progress`` gets a ``Progress`` of stage
    "index" after each claim round and each model call (``_Figures.progress``).

    A vector is written only after a canary sent once its call had ended matched the
    generation's (``proof``): a model swapped at any moment, and still serving, writes nothing
    (``ModelRefused``).
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
        statistics = StatisticsBeside(db, analyze_after)
        target = profiles_store.writing_target(conn, embedder.profile)
        claimer = Claimer(conn, target, limit=limit, scope=scope)

        def committed(episode_ids: list[int]) -> None:
            statistics.committed(report, listed=claimer.listed or 0)
            claimer.release(episode_ids)
            if on_committed:
                on_committed(episode_ids)

        committer = Committer(store_conns, report, committed)
        try:
            _Pass(conn, embedder, report, claimer, committer, on_progress).execute()
        finally:
            committer.close()
            claimer.release_all()
            report.analyzed = statistics.join()
    report.seconds = time.perf_counter() - started
    return report


@dataclass
class _Figures:
    """What progress is measured by: model inputs (chunks and their windows) embedded of those
    planned, so it moves inside one long document; episodes are shown beside."""

    episodes_planned: int = 0
    views_planned: int = 0
    views_done: int = 0

    def progress(self, expected: int | None, committed: int, note: str = "") -> Progress:
        """Vectors embedded of those planned, the total extrapolated from the episodes planned
        so far while some of the ``expected`` are still unplanned; episodes ``committed`` of
        those the pass will do."""
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
            also=(Count("episodes", committed, expected),),
            note=note,
        )


class _Pass:
    """The loop that wires a pass's parts: the claimer's rounds planned into model calls, each
    call's vectors filed by episode, the canary's proof, the proven episodes committed."""

    def __init__(
        self,
        conn,
        embedder: Embedder,
        report: IndexReport,
        claimer: Claimer,
        committer: Committer,
        on_progress: ProgressCallback | None,
    ):
        self.conn, self.embedder, self.report = conn, embedder, report
        self.claimer, self.committer = claimer, committer
        self.proof = CanaryProof(embedder)
        self.figures = _Figures()
        self.on_progress = on_progress
        self.views: deque[_View] = deque()  # planned, not yet in a call
        # By call number: its views and whether the canary rides first (None once returned).
        self.batches: list[tuple[list[_View], bool] | None] = []
        self.received: dict[tuple[int, str], list[np.ndarray]] = {}
        self.ended: dict[int, float] = {}  # episode id -> the latest end of its calls so far

    def progress(self, note: str = "") -> Progress:
        listed = self.claimer.listed
        expected = None if listed is None else listed - self.claimer.gone
        return self.figures.progress(expected, self.report.episodes, note)

    def tell(self, note: str = "") -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress(note))

    def execute(self) -> None:
        calls = model_calls(self.embedder, self.next_inputs)
        try:
            for number, vectors, started, ended in calls:
                self.returned(number, vectors, started, ended)
        except Exception:
            if not self.committer.failed:
                self.committer.flush()  # what is complete (and proven) is kept
                self.committer.collect(ahead=0)
            raise
        finally:
            calls.close()  # a failure: no model call is left running or queued
        if self.proof.unproven:
            # The last calls' vectors: one more canary, sent after every call has ended.
            started = time.perf_counter()
            vector = self.embedder.embed_documents([CANARY_TEXT])[0]
            self.report.model_calls += 1
            self.prove(vector, started)
            self.committer.add(self.proof.proven())
        self.committer.flush()
        self.committer.collect(ahead=0)
        self.tell()

    def returned(self, number: int, vectors: np.ndarray, started: float, ended: float) -> None:
        """A model call came back: file its vectors, commit what is proven when it is time."""
        self.report.embed_seconds += ended - started
        self.report.model_calls += 1
        batch = self.batches[number]
        assert batch is not None  # each call's batch is read once, as its call returns
        views, with_canary = batch
        self.batches[number] = None
        if with_canary:
            self.prove(vectors[0], started)
            vectors = vectors[1:]
        # A call's own matching canary proves its vectors too (one request, one model).
        self.receive(views, vectors, float("-inf") if with_canary else ended)
        self.committer.add(self.proof.proven())
        if self.committer.due():
            self.committer.flush()
        self.committer.collect()
        self.tell()

    def prove(self, canary: np.ndarray, started: float) -> None:
        """Check a canary the model embedded in a call sent at ``started``: a mismatch stops the
        pass (the proven episodes are committed first, nothing else); a match proves every
        call that had ended before ``started``."""
        cosine = self.proof.mismatch(canary)
        if cosine is not None:
            # The unproven episodes are dropped; the committed ones are the original model's
            # (each was followed by a matching canary).
            self.committer.flush()
            self.committer.collect(ahead=0)  # every commit done: ``kept`` counts them all
            self.proof.refuse(self.conn, cosine, kept=self.report.vectors)
        self.proof.prove(started)

    def next_inputs(self) -> list[str] | None:
        """The inputs of the next model call (the canary first when it is due), claiming more
        work when the planned views run short; None when there is nothing left for this pass."""
        call, now = len(self.batches), time.perf_counter()
        with_canary = self.proof.due(call, now)
        size = max(1, self.embedder.batch_size - 1) if with_canary else self.embedder.batch_size
        while len(self.views) < size and not self.claimer.exhausted:
            self.views.extend(self.claim_round())
        if not self.views:
            return None
        views = [self.views.popleft() for _ in range(min(size, len(self.views)))]
        self.batches.append((views, with_canary))
        if with_canary:
            self.proof.sent(call, now)
        texts = [text for *_, text in views]
        return [CANARY_TEXT, *texts] if with_canary else texts

    def claim_round(self) -> list[_View]:
        """Claim and plan the next pending episodes; commit those that need no model; the model
        inputs (views) the others need."""
        pending = self.claimer.next_round()
        if not pending:
            return []
        if self.proof.profile is None:
            self.tell("checking the model (canary)")
            # The gate before any write (``CanaryProof.start``); from here on the pass claims
            # and writes the registered generation.
            profile = self.proof.start(self.conn, self.report)
            self.claimer.target = self.committer.profile = profile
        works = plan(self.conn, self.proof.profile, pending, anchors=self.embedder.heading_anchors)
        works = self.claimer.keep(works)
        self.figures.episodes_planned += len(works)
        self.committer.write([w for w in works if w.complete])  # only chunks missing
        self.committer.collect()
        # One model input per view (the chunk, then its windows); calls cut across chunks,
        # episodes and rounds, so every model call but the pass's last is full.
        queue = [view for work in works if not work.complete for view in self.views_of(work)]
        self.figures.views_planned += len(queue)
        self.tell()
        return queue

    def views_of(self, work: EpisodeWork) -> list[_View]:
        chunk_of = {c.chunk_id: c for c in work.chunks}
        out: list[_View] = []
        for cid in work.missing:
            chunk = chunk_of[cid]
            views = chunk_views(
                chunk.text,
                windows=self.embedder.paragraph_windows,
                anchor=chunk.anchor,
                title=work.episode.title,
            )
            out.extend((work, cid, len(views), text) for text in views)
        return out

    def receive(self, batch: list[_View], vectors: np.ndarray, ended: float) -> None:
        """File a call's vectors (``ended``: when it came back, -inf when its own canary proved
        it); an episode whose last vector came now waits for a canary sent after the latest end
        of its calls (``proof``)."""
        self.figures.views_done += len(batch)
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
                self.proof.wait(self.ended.pop(w.episode.id), w)  # the end of its last call
