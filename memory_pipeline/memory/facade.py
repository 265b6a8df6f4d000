"""``Memory``, the face of the core (the package's ``__init__`` shows it in use).

Every setting is a keyword argument of ``Memory.open``; one left out comes from its environment
variable (``config.ENV_VARS``), so an application, a test or a Dagster resource passes exactly
what it means and nothing reads the environment behind its back. Expected failures raise the
``errors`` classes (``DatabaseUnavailable``, ``EmbedderUnavailable``, ``InputError``...).

This module imports no adapter: what an adapter must be told about the work done here (Dagster's
partitions after an ingest, a forgetting or an index run) goes to the ``reporting.Reporter`` it
passes to ``Memory.open``.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from memory_pipeline import config
from memory_pipeline.domain.episodes import validate_kind, validate_memory_name
from memory_pipeline.domain.policies import Policy
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.errors import InputError, UnknownMemory
from memory_pipeline.indexing.days import days_done_by_a_run
from memory_pipeline.indexing.estimate import Estimate
from memory_pipeline.indexing.report import IndexReport
from memory_pipeline.ingest import IngestReport, ingest_paths, utc_today
from memory_pipeline.memory import index_run, paging
from memory_pipeline.memory.access import Tokens
from memory_pipeline.memory.adding import AddReport, checked, drafts_of, upload_drafts
from memory_pipeline.memory.days import Days
from memory_pipeline.memory.demo import Demo
from memory_pipeline.memory.entities import Entities
from memory_pipeline.memory.models import Models
from memory_pipeline.memory.observing import Observing
from memory_pipeline.memory.opening import (
    DEFAULT_TELEMETRY,
    Settings,
    TelemetrySettings,
    environment,
)
from memory_pipeline.memory.paging import MAX_LIST, History, Page, UnknownEpisode
from memory_pipeline.memory.parts import Core
from memory_pipeline.memory.questions import Questions
from memory_pipeline.memory.status import Status, index_estimate, status_of
from memory_pipeline.memory.telling import Telling
from memory_pipeline.memory.upkeep import Upkeep
from memory_pipeline.progress import ProgressCallback
from memory_pipeline.reporting import Reporter
from memory_pipeline.search.results import SearchResponse
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import (
    champions_store,
    episodes_store,
    forget_store,
    revisions_store,
    search_store,
)
from memory_pipeline.storage.database import POOL_SIZE, Database
from memory_pipeline.storage.forget_store import ForgetCounts

# At most this many episodes in one ``add`` call: one transaction stores them all.
MAX_ADD_ITEMS = 1000
# Telemetry older than the retention is purged when a Memory opens and then at most this often.
PURGE_EVERY_S = 3600.0
__all__ = ["MAX_LIST", "AddReport", "Memory", "TelemetrySettings", "UnknownEpisode"]


class Memory(Observing, Entities, Tokens, Telling, Questions):
    """A memory store: episodes in, fused search out, and forgetting. Safe to share between threads.

    Build it with ``Memory.open(...)``; the constructor takes already-built parts (a ``Database``,
    settings objects) for callers that own them. ``days``, ``upkeep``, ``models`` and ``demo``
    are the work of the Dagster assets and the CLI's operations, so no adapter needs ``db``.
    """

    def __init__(
        self,
        db: Database,
        *,
        embed_settings: config.EmbedSettings,
        policies: dict[str, Policy],
        reranker=None,
        telemetry: TelemetrySettings = DEFAULT_TELEMETRY,
        home: Path | None = None,
        reporter: Reporter | None = None,
        record_in_dagster: bool = True,
        owns_db: bool = True,
    ):
        self.db = db
        self.embed_settings = embed_settings
        self.policies = policies
        self.telemetry = telemetry
        self.home = home
        # Told what this Memory stored, forgot and indexed (``reporting``); None: nobody.
        self.reporter = reporter if record_in_dagster else None
        self._owns_db = owns_db
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()
        self._report_lock = threading.Lock()  # one event at a time reaches the reporter
        self._purged_at = 0.0
        self.warnings: list[
            str
        ] = []  # problems that failed nothing (Dagster not told), oldest first
        self.search_service = SearchService(
            db,
            policies,
            embedder=lambda: self.embedder,
            reranker=reranker,
            record=telemetry.enabled,
        )
        # The parts: the work of the Dagster assets and the CLI's operations, through this face.
        core = Core(db, lambda: self.embedder, embed_settings)
        self.days = Days(core)
        self.upkeep = Upkeep(core)
        self.models = Models(core)
        self.demo = Demo(core, lambda: self.search_service)
        self.purge_telemetry()

    @classmethod
    def open(
        cls,
        url: str | None = None,
        *,
        home: str | os.PathLike | None = None,
        pool_size: int = POOL_SIZE,
        embed_provider: str | None = None,
        embed_model: str | None = None,
        embed_dim: int | None = None,
        embed_url: str | None = None,
        embed_batch_size: int | None = None,
        embed_timeout_s: float | None = None,
        paragraph_windows: bool | None = None,
        rerank_url: str | None = None,
        rerank_model: str | None = None,
        rerank_timeout_s: float | None = None,
        policies_path: str | os.PathLike | None = None,
        telemetry: bool | None = None,
        telemetry_days: int | None = None,
        reporter: Reporter | None = None,
        record_in_dagster: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> Memory:
        """Open (and migrate) the database and read the settings; nothing is embedded yet.

        ``url``: an external PostgreSQL (else MEMORY_PIPELINE_DATABASE_URL, else the embedded
        server in ``home``, else MEMORY_PIPELINE_HOME). ``embed_url`` is the openai provider's
        base URL, or the Ollama server for the ollama provider; with no provider, the wire
        format it speaks is detected (``embedders.detect``). ``environ`` replaces
        ``os.environ`` as the source of the settings not given. ``reporter`` is told what this
        Memory stores, forgets and indexes (``reporting``: the CLI passes one that records it
        in Dagster); ``record_in_dagster=False`` keeps it untold.
        """
        env = environment(
            environ,
            home=home,
            embed_provider=embed_provider,
            embed_model=embed_model,
            embed_dim=embed_dim,
            embed_url=embed_url,
            embed_batch_size=embed_batch_size,
            embed_timeout_s=embed_timeout_s,
            paragraph_windows=paragraph_windows,
            rerank_url=rerank_url,
            rerank_model=rerank_model,
            rerank_timeout_s=rerank_timeout_s,
            policies_path=policies_path,
            telemetry=telemetry,
            telemetry_days=telemetry_days,
        )
        # Every setting is checked before the database starts: a typo fails in milliseconds.
        settings = Settings.read(env)
        url = url or config.database_url(env)
        home_dir = None if url else config.home_dir(env)
        db = Database.open(url, home=home_dir, environ=env, max_size=pool_size)
        try:
            return cls(
                db,
                embed_settings=settings.embed,
                policies=settings.policies,
                reranker=settings.reranker,
                telemetry=settings.telemetry,
                home=home_dir,
                reporter=reporter,
                record_in_dagster=record_in_dagster,
            )
        except BaseException:
            db.close()
            raise

    # -- lifetime ---------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The configured embedder, built on first use (searching keyword-only never loads it)."""
        with self._lock:
            if self._embedder is None:
                self._embedder = build_embedder(self.embed_settings)
            return self._embedder

    def close(self) -> None:
        self._close(wait=True)

    def _close(self, *, wait: bool) -> None:
        """``wait`` False: closing on a failure (the reporter's work ahead is not waited for)."""
        with self._lock:
            if self._embedder is not None:
                self._embedder.close()
                self._embedder = None
        if self.reporter is not None:
            with self._report_lock:
                self.reporter.close(wait=wait)
        reranker = self.search_service.reranker
        if reranker is not None:
            reranker.close()
        if self._owns_db:
            self.db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._close(wait=exc_type is None)

    # -- memories ---------------------------------------------------------------------------
    def memories(self) -> list[episodes_store.MemoryCounts]:
        """Every memory that holds an episode or a statement, with its episode, chunk and
        statement counts."""
        with self.db.connection() as conn:
            return episodes_store.memory_counts(conn)

    def memory_names(self) -> list[str]:
        with self.db.connection() as conn:
            return episodes_store.memory_names(conn)

    def has_memory(self, name: str) -> bool:
        """Whether memory ``name`` has episodes (one index probe, unlike listing them all)."""
        with self.db.connection() as conn:
            return search_store.memory_exists(conn, name)

    def require_memory(self, memory: object) -> str:
        """``memory`` if it is a valid name with episodes, else InputError / UnknownMemory."""
        try:
            name = validate_memory_name(memory)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if not self.has_memory(name):
            raise UnknownMemory(name, self.memory_names())
        return name

    # -- adding -----------------------------------------------------------------------------
    def add(
        self,
        episodes: Iterable[Mapping[str, Any]],
        *,
        memory: str | None = None,
        kind: str | None = None,
        ingest_day: dt.date | None = None,
    ) -> AddReport:
        """Store episodes given as JSONL-shaped objects (``memory``, ``kind``, ``title``,
        ``occurred_at``, ``body``; optional ``salience``, ``source``, ``metadata``, ``id``), or
        documents as ``{"memory", "kind"?, "document": {"name", "content" (base64),
        "contentType"?, "modifiedAt"?}}`` (HTML, PDF, DOCX; ``domain.uploads``).

        The same rules as ``memory-pipeline ingest``: each rejected item is reported as
        ``episodes[i]`` with its reason (a document's starts with its name), the valid ones are
        stored (a body already in its memory counts as a duplicate). ``memory``/``kind`` fill
        items that leave them out.
        """
        if memory is not None:
            memory = checked(validate_memory_name, memory, "memory")
        if kind is not None:
            kind = checked(validate_kind, kind, "kind")
        items = list(episodes)
        if len(items) > MAX_ADD_ITEMS:
            raise InputError(f"{len(items)} episodes in one call; at most {MAX_ADD_ITEMS}")
        report = AddReport(ingest_day or utc_today())
        drafts = drafts_of(items, report, memory=memory, kind=kind)
        return self._store(drafts, report, "Memory.add")

    def add_document(
        self,
        data: bytes,
        name: str,
        *,
        memory: str,
        kind: str | None = None,
        content_type: str | None = None,
        modified_at: Any = None,
        ingest_day: dt.date | None = None,
    ) -> AddReport:
        """Store one HTML, PDF or DOCX document given as bytes, exactly as ``ingest FILE`` would
        (one ``doc`` episode; ``domain.uploads``): the format from ``name``'s suffix or
        ``content_type``, the date from the document's metadata, else ``modified_at``, else now.
        A bad document is reported as a rejection located at ``name``, never raised."""
        memory = checked(validate_memory_name, memory, "memory")
        if kind is not None:
            kind = checked(validate_kind, kind, "kind")
        report = AddReport(ingest_day or utc_today())
        drafts = upload_drafts(
            data,
            name,
            report,
            memory=memory,
            kind=kind,
            content_type=content_type,
            modified_at=modified_at,
        )
        return self._store(drafts, report, "Memory.add_document")

    def _store(self, drafts: list, report: AddReport, by: str) -> AddReport:
        if drafts:
            with self.db.connection() as conn:
                stored = episodes_store.store_episodes(conn, drafts, report.ingest_day)
            report.inserted_ids, report.duplicates = stored.inserted_ids, stored.duplicates
            report.revised, report.restored = stored.revised, stored.restored
            self._tell_dagster_ingested(
                report.ingest_day, report.inserted, report.duplicates, len(report.rejections), by
            )
        return report

    def ingest(
        self,
        paths: Iterable[str | os.PathLike],
        *,
        memory: str | None = None,
        kind: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Store episodes from JSONL, Markdown and text files or folders (``memory-pipeline ingest``);
        ``on_progress`` gets stage "ingest", counted in files."""
        if memory is not None:
            memory = checked(validate_memory_name, memory, "--memory")
        if kind is not None:
            kind = checked(validate_kind, kind, "--kind")
        report = ingest_paths(self.db, paths, memory=memory, kind=kind, on_progress=on_progress)
        self._tell_dagster_ingested(
            report.ingest_day,
            report.inserted,
            report.duplicates,
            len(report.rejections),
            "memory-pipeline ingest",
        )
        return report

    # -- indexing ---------------------------------------------------------------------------
    def index(
        self,
        *,
        day: dt.date | None = None,
        on_progress: ProgressCallback | None = None,
        on_committed: Callable[[list[int]], None] | None = None,
        keyword_lists: bool = True,
        accept_worse: bool = False,
    ) -> IndexReport:
        """Index everything pending (of one ingest ``day``) until done or something fails: the
        one index path of every writer (CLI, HTTP, MCP, this API; ``index_run``): chunks and
        vectors, the entity links, keyword lists (``keyword_lists``), the generation switch
        (refused when the new generation scores worse on the labelled questions, unless
        ``accept_worse``: ``report.quality_guard``), the calibration and the serving HNSW index
        (``report.search_ready``). ``on_committed`` gets each committed batch's ids; the
        reporter is told the days the run finished, as their partitions would record them."""
        report, finished, linked = index_run.run(
            self.db,
            self.embedder,
            day=day,
            on_progress=on_progress,
            on_committed=on_committed,
            keyword_lists=keyword_lists,
            guard=self.switch_guard(accept_worse=accept_worse),
        )
        if finished:
            self._tell(
                lambda reporter: reporter.days_indexed(
                    days_done_by_a_run(self.db, self.embedder, report, finished, linked),
                    "memory-pipeline index",
                ),
                failed="indexed, but could not record it",
            )
        self._tell_index_lag()
        return report

    def rebuild_keyword_lists(
        self, *, memory: str | None = None, stale_only: bool = False
    ) -> list[champions_store.ChampionBuild]:
        """Rebuild the keyword champion lists of every memory of more than ``keyword_store.CAP``
        chunk rows (``memory``: only that one; ``stale_only``: only lists that are missing or
        stale, ``champions_store.STALE_CHANGE``), one memory after the other, beside its writers;
        a memory at or under the cap has none (its keyword queries are exact)."""
        names = None if memory is None else [self.require_memory(memory)]
        with self.db.connection() as conn:
            return champions_store.refresh_all_champions(
                conn, stale_only=stale_only, memories=names
            )

    # -- searching --------------------------------------------------------------------------
    def search(
        self,
        memory: str,
        query: str,
        *,
        policy: str | None = None,
        limit: int | None = None,
        channels: tuple[str, ...] | None = None,
        contested_beliefs: bool | None = None,
        history: bool = False,
        as_of: Any = None,
        passages: bool = False,
    ) -> SearchResponse:
        """Fused search inside one memory (``search.service``); UnknownMemory names the others.
        ``contested_beliefs`` overrides the policy's: whether contested beliefs are returned;
        ``history`` adds superseded revisions holding the query's words, marked superseded;
        ``as_of`` (a date, date-time or ISO 8601 text) answers with what was in force then;
        ``passages`` lets one episode hold several results (default: one an episode)."""
        self._purge_if_due()
        return self.search_service.search(
            memory,
            query,
            policy=policy,
            limit=limit,
            channels=channels,
            contested_beliefs=contested_beliefs,
            history=history,
            as_of=as_of,
            passages=passages,
        )

    # -- reading (``paging``) ---------------------------------------------------------------
    def episodes(
        self, memory: str, *, limit: int = 100, before: int | None = None
    ) -> list[revisions_store.ListedEpisode]:
        """A memory's current episodes, newest first, each with its source and how many revisions
        it has (``before``: the page after that id); UnknownMemory if there is no such memory."""
        return paging.listing(self.db, self.require_memory(memory), limit=limit, before=before)

    def history(self, episode_id: int) -> History:
        """Every revision of ``episode_id``'s source (it may be any of them), newest first;
        UnknownEpisode if there is none."""
        return paging.history(self.db, episode_id)

    def episode(self, episode_id: int) -> dict:
        """One stored episode as a document (body, metadata, chunk count); UnknownEpisode if none."""
        return paging.episode(self.db, episode_id)

    def read(self, episode_id: int, *, page: int = 1) -> Page:
        """Page ``page`` (from 1) of an episode (``paging.read``); reading pages 1 to ``pages``
        reads the whole body. UnknownEpisode, or UnknownPage for a page it does not have."""
        return paging.read(self.db, episode_id, page=page)

    # -- forgetting -------------------------------------------------------------------------
    def forget(self, memory: str, *, episode_id: int | None = None) -> ForgetCounts:
        """Forget one episode of ``memory`` (``episode_id``) or the whole memory: the episodes,
        their chunks, vectors of every generation, entity mentions, keyword statistics, labelled
        questions and telemetry rows (``forget_store``); search never returns them again. The
        affected ingest days' ``episodes`` partitions get a new materialization in Dagster."""
        memory = self.require_memory(memory)
        with self.db.connection() as conn:
            counts = forget_store.forget(conn, memory, None if episode_id is None else [episode_id])
        if episode_id is not None and counts.episodes == 0:
            raise UnknownEpisode(episode_id)
        self._tell_dagster_forgotten(memory, counts)
        return counts

    # -- status (``status``) -----------------------------------------------------------------
    def status(self) -> Status:
        """Counts, pending work per day, profiles, the HNSW index; where the data lives."""
        return status_of(
            self.db,
            self.embed_settings,
            home=str(self.home) if self.home else None,
            telemetry_enabled=self.telemetry.enabled,
            telemetry_retention_days=self.telemetry.retention_days,
        )

    def index_estimate(self, day: dt.date | None = None) -> Estimate | None:
        """How long indexing what is pending (of one ingest day) takes with the configured
        model, from its measured speed (``indexing.estimate``); None when the model cannot be
        told (detection failed)."""
        return index_estimate(self.db, self.embed_settings, day)

    # -- telemetry --------------------------------------------------------------------------
    def purge_telemetry(self) -> int:
        """Delete search telemetry older than the retention; the number of rows deleted."""
        self._purged_at = time.monotonic()
        with self.db.connection() as conn:
            return search_store.purge_telemetry(conn, self.telemetry.retention_days)

    def _purge_if_due(self) -> None:
        if time.monotonic() - self._purged_at >= PURGE_EVERY_S:
            self.purge_telemetry()

    def take_warnings(self) -> list[str]:
        taken, self.warnings = self.warnings, []
        return taken
