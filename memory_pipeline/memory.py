"""The Python API: one ``Memory``, the face of the core, that the CLI, the HTTP and MCP servers and
Dagster's resource use.

    from memory_pipeline import Memory

    with Memory.open() as mem:                      # the embedded server under MEMORY_PIPELINE_HOME
        mem.add([{"memory": "me", "kind": "note", "title": "Bread",
                  "occurred_at": "2026-05-01", "body": "Sourdough needs a warm kitchen."}])
        mem.index()
        for hit in mem.search("me", "how do I bake bread?").results:
            print(hit.title, hit.score)

Every setting is a keyword argument of ``Memory.open``; one left out comes from its environment
variable (``config.ENV_VARS``), so an application, a test or a Dagster resource passes exactly
what it means and nothing reads the environment behind its back. Expected failures raise the
``errors`` classes (``DatabaseUnavailable``, ``EmbedderUnavailable``, ``InputError``...).

This module imports no adapter: what an adapter must be told about the work done here (Dagster's
partitions after an ingest, a forgetting or an index run) goes to the ``reporting.Reporter`` it
passes to ``Memory.open``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline import config, statements, tokens
from memory_pipeline.domain import calibration
from memory_pipeline.domain.documents import DocumentRejected
from memory_pipeline.domain.episodes import validate_kind, validate_memory_name
from memory_pipeline.domain.jsonl import LineRejected
from memory_pipeline.domain.policies import Policy, default_policies_path, load_policies
from memory_pipeline.domain.sources import Rejection, episode_from_object
from memory_pipeline.domain.uploads import episode_from_document_item, episode_from_upload
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.embedders.factory import build_embedder, describe
from memory_pipeline.errors import ConfigurationError, InputError, UnknownMemory
from memory_pipeline.indexing import linking
from memory_pipeline.indexing.days import days_done_by_a_run
from memory_pipeline.indexing.estimate import Estimate, estimate
from memory_pipeline.indexing.keyword_lists import ListsBeside
from memory_pipeline.indexing.pending import pending_by_day, pending_of
from memory_pipeline.indexing.report import IndexReport
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import IngestReport, ingest_paths, utc_today
from memory_pipeline.progress import ProgressCallback
from memory_pipeline.reporting import Reporter
from memory_pipeline.search import quality
from memory_pipeline.search.quality_guard import SwitchGuard
from memory_pipeline.search.questions import QuestionReport, save_questions
from memory_pipeline.search.results import SearchResponse
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import (
    champions_store,
    entities_store,
    episodes_store,
    forget_store,
    questions_store,
    revisions_store,
    search_store,
    tokens_store,
)
from memory_pipeline.storage.database import POOL_SIZE, Database, redact
from memory_pipeline.storage.forget_store import ForgetCounts
from memory_pipeline.version import __version__

# At most this many episodes in one ``add`` call: one transaction stores them all.
MAX_ADD_ITEMS = 1000
# At most this many statements in one listing.
MAX_LIST_STATEMENTS = 1000
# At most this many episodes in one listing (``episodes``; page on with ``before``).
MAX_LIST = 1000
# Telemetry older than the retention is purged when a Memory opens and then at most this often.
PURGE_EVERY_S = 3600.0


class UnknownEpisode(InputError):
    def __init__(self, episode_id: object):
        super().__init__(f"no episode {episode_id}")
        self.episode_id = episode_id


@dataclass
class AddReport:
    """What ``add`` stored: new episode ids, bodies already stored, and located rejections."""

    ingest_day: dt.date
    inserted_ids: list[int] = field(default_factory=list)
    duplicates: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    revised: int = 0  # of the new episodes, new revisions of a stored source (their "id")
    restored: int = 0  # earlier revisions whose body came back, current again

    @property
    def inserted(self) -> int:
        return len(self.inserted_ids)

    def to_json(self) -> dict:
        return {
            "ingestDay": self.ingest_day.isoformat(),
            "inserted": self.inserted,
            "episodeIds": self.inserted_ids,
            "revised": self.revised,
            "restored": self.restored,
            "duplicates": self.duplicates,
            "rejected": [{"location": r.location, "reason": r.reason} for r in self.rejections],
        }


@dataclass(frozen=True)
class TelemetrySettings:
    enabled: bool = True
    retention_days: int = 90

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> TelemetrySettings:
        return cls(
            enabled=config.switch(environ, "MEMORY_PIPELINE_TELEMETRY", True),
            retention_days=config.env_int(
                environ, "MEMORY_PIPELINE_TELEMETRY_DAYS", 90, maximum=36500
            ),
        )


def _overridden(environ: Mapping[str, str] | None, overrides: Mapping[str, Any]) -> dict[str, str]:
    merged = dict(os.environ if environ is None else environ)
    for name, value in overrides.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "on" if value else "off"
        merged[name] = str(value)
    return merged


def _load_policies(path: str | os.PathLike) -> dict[str, Policy]:
    try:
        return load_policies(path)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"MEMORY_PIPELINE_POLICIES: {exc}") from None


class Memory:
    """A memory store: episodes in, fused search out, and forgetting. Safe to share between threads.

    Build it with ``Memory.open(...)``; the constructor takes already-built parts (a ``Database``,
    settings objects) for callers that own them.
    """

    def __init__(
        self,
        db: Database,
        *,
        embed_settings: config.EmbedSettings,
        policies: dict[str, Policy],
        reranker=None,
        telemetry: TelemetrySettings = TelemetrySettings(),
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
        provider = (embed_provider or "").strip().lower() or None
        env = _overridden(
            environ,
            {
                "MEMORY_PIPELINE_HOME": os.fspath(home) if home is not None else None,
                "MEMORY_PIPELINE_EMBED_PROVIDER": provider,
                "MEMORY_PIPELINE_EMBED_MODEL": embed_model,
                "MEMORY_PIPELINE_EMBED_DIM": embed_dim,
                "MEMORY_PIPELINE_EMBED_BATCH": embed_batch_size,
                "MEMORY_PIPELINE_EMBED_TIMEOUT": embed_timeout_s,
                "MEMORY_PIPELINE_PARAGRAPH_WINDOWS": paragraph_windows,
                "MEMORY_PIPELINE_RERANK_URL": rerank_url,
                "MEMORY_PIPELINE_RERANK_MODEL": rerank_model,
                "MEMORY_PIPELINE_RERANK_TIMEOUT": rerank_timeout_s,
                "MEMORY_PIPELINE_POLICIES": os.fspath(policies_path)
                if policies_path is not None
                else None,
                "MEMORY_PIPELINE_TELEMETRY": telemetry,
                "MEMORY_PIPELINE_TELEMETRY_DAYS": telemetry_days,
            },
        )
        if embed_url:
            env["MEMORY_PIPELINE_EMBED_URL"] = embed_url
            env["OLLAMA_HOST"] = embed_url
        from memory_pipeline.rerankers.http import reranker_from_env

        # Every setting is checked before the database starts: a typo fails in milliseconds.
        embed_settings = config.EmbedSettings.from_env(env)
        telemetry_settings = TelemetrySettings.from_env(env)
        policies = _load_policies(env.get("MEMORY_PIPELINE_POLICIES") or default_policies_path())
        reranker = reranker_from_env(env)
        url = url or config.database_url(env)
        home_dir = None if url else config.home_dir(env)
        db = Database.open(url, home=home_dir, environ=env, max_size=pool_size)
        try:
            return cls(
                db,
                embed_settings=embed_settings,
                policies=policies,
                reranker=reranker,
                telemetry=telemetry_settings,
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
            memory = self._checked(validate_memory_name, memory, "memory")
        if kind is not None:
            kind = self._checked(validate_kind, kind, "kind")
        items = list(episodes)
        if len(items) > MAX_ADD_ITEMS:
            raise InputError(f"{len(items)} episodes in one call; at most {MAX_ADD_ITEMS}")
        report = AddReport(ingest_day or utc_today())
        drafts = []
        for i, item in enumerate(items):
            location = f"episodes[{i}]"
            try:
                if isinstance(item, Mapping) and "document" in item:
                    drafts.append(episode_from_document_item(dict(item), memory=memory, kind=kind))
                else:
                    drafts.append(
                        episode_from_object(
                            item,
                            location,
                            memory=memory,
                            kind=kind,
                            memory_hint=" (or pass memory)",
                        )
                    )
            except LineRejected as rejected:
                report.rejections.append(Rejection(location, rejected.reason))
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
        memory = self._checked(validate_memory_name, memory, "memory")
        if kind is not None:
            kind = self._checked(validate_kind, kind, "kind")
        report = AddReport(ingest_day or utc_today())
        try:
            drafts = [
                episode_from_upload(
                    data,
                    name,
                    memory=memory,
                    kind=kind,
                    content_type=content_type,
                    modified_at=modified_at,
                )
            ]
        except DocumentRejected as rejected:
            report.rejections.append(Rejection(name or "document", rejected.reason))
            drafts = []
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
            memory = self._checked(validate_memory_name, memory, "--memory")
        if kind is not None:
            kind = self._checked(validate_kind, kind, "--kind")
        report = ingest_paths(self.db, paths, memory=memory, kind=kind, on_progress=on_progress)
        self._tell_dagster_ingested(
            report.ingest_day,
            report.inserted,
            report.duplicates,
            len(report.rejections),
            "memory-pipeline ingest",
        )
        return report

    @staticmethod
    def _checked(validate: Callable[[Any], str], value: Any, what: str) -> str:
        try:
            return validate(value)
        except ValueError as exc:
            raise InputError(f"{what} {value!r}: {exc}") from None

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
        one index path of every writer (``memory-pipeline index``, ``POST /v1/index``, the MCP
        server's adds, this API), doing what a day's partitions and the global assets do
        between them: chunks, vectors (``indexing.until_done.index_pending``), the entity links
        of the episodes it commits and of any an earlier run committed but did not link
        (``indexing.linking``: in a worker process beside the pass, or after it for a few),
        keyword lists (``keyword_lists``: no memory's left missing or stale, built beside the
        pass once most of its episodes are committed, ``keyword_lists.ListsBeside``; builds in
        ``report.keyword_lists``), the generation switch (refused when the new generation scores
        worse on the labelled questions, unless ``accept_worse``: ``report.quality_guard``), the
        model's calibration and the
        serving HNSW index (``report.search_ready``). ``on_committed`` also gets the ids of each
        committed batch. A failure of the pass or the linking is raised at once; no worker
        outlives this call. The reporter is told the days the run finished (every episode of the
        day chunked, embedded and linked), as their partitions would record them."""
        before = pending_by_day(self.db, self.embedder)
        planned = pending_of(before, day)
        lists = ListsBeside(self.db, planned) if keyword_lists else None
        guard = self.switch_guard(accept_worse=accept_worse)

        def committed(episode_ids: list[int]) -> None:
            linker.link(episode_ids)
            if lists is not None:
                lists.committed(episode_ids)
            if on_committed is not None:
                on_committed(episode_ids)

        with linking.linker_for(self.db, planned) as linker, contextlib.ExitStack() as stack:
            if lists is not None:
                stack.enter_context(lists)
            report = index_pending(
                self.db,
                self.embedder,
                day=day,
                on_progress=on_progress,
                on_committed=committed,
                lists=lists,
                keyword_lists=keyword_lists,
                guard=guard.allows,
            )
            linked = linker.finish()
        report.quality_guard = guard.verdict.to_json() if guard.verdict else None
        after = report.pending_days or {}  # counted by the run once it was done
        finished = [d for d in before if d not in after and (day is None or d == day.isoformat())]
        if finished:
            self._tell(
                lambda reporter: reporter.days_indexed(
                    days_done_by_a_run(self.db, self.embedder, report, finished, linked),
                    "memory-pipeline index",
                ),
                failed="indexed, but could not record it",
            )
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

    # -- entities ---------------------------------------------------------------------------
    def import_entities(self, pairs: Iterable[tuple[str, Any]]) -> entities_store.EntityReport:
        """Store entities given as (memory, ``domain.entities.Entity``) pairs (what
        ``parse_entity_import`` reads), merging those a memory knows already by name or alias,
        and link each touched memory's episodes that mention them (the graph channel)."""
        report = entities_store.EntityReport()
        with self.db.connection() as conn:
            touched = entities_store.import_entities(conn, list(pairs), report)
            for memory in sorted(touched):
                entities_store.link_mentions(conn, memory, report)
        return report

    def entities(self, memory: str, *, limit: int = 10) -> list[dict]:
        """A memory's entities with their aliases, source and episode count, most mentioned
        first; UnknownMemory when it has no episodes."""
        memory = self.require_memory(memory)
        with self.db.connection() as conn:
            return entities_store.top_entities(conn, [memory], limit=limit)

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
    ) -> SearchResponse:
        """Fused search inside one memory (``search.service``); UnknownMemory names the others.
        ``contested_beliefs`` overrides the policy's: whether contested beliefs are returned;
        ``history`` adds superseded revisions holding the query's words, marked superseded."""
        self._purge_if_due()
        return self.search_service.search(
            memory,
            query,
            policy=policy,
            limit=limit,
            channels=channels,
            contested_beliefs=contested_beliefs,
            history=history,
        )

    # -- observations and beliefs -----------------------------------------------------------
    def observe(
        self,
        memory: str,
        text: str,
        *,
        kind: str = "observation",
        status: str = "active",
        confidence: float = 1.0,
        episode_ids: Iterable[int] = (),
        passages: Iterable[str] = (),
        author: str = "",
        observed_at: Any = None,
        decision: str = "ask",
        revise_id: int | None = None,
        force: bool = False,
    ) -> statements.SaveOutcome:
        """Save an observation or a belief, showing close existing ones first (``statements``):
        ``decision`` "ask" saves only when nothing is close, "add" saves anyway, "revise" replaces
        ``revise_id`` (kept as history); a near-exact duplicate is refused unless ``force``."""
        from memory_pipeline.domain.observations import InvalidObservation, make_observation

        try:
            draft = make_observation(
                memory=memory,
                text=text,
                kind=kind,
                status=status,
                confidence=confidence,
                episode_ids=list(episode_ids),
                passages=list(passages),
                author=author,
                observed_at=observed_at,
            )
        except InvalidObservation as exc:
            raise InputError(str(exc)) from None
        return statements.save(
            self.db,
            draft,
            embedder=self._statement_embedder(),
            decision=decision,
            revise_id=revise_id,
            force=force,
        )

    def import_observations(
        self, path: str | os.PathLike, *, memory: str | None = None, force: bool = False
    ) -> tuple[list[statements.SaveOutcome], list[str]]:
        """Save every statement of a JSONL file (``domain.observations.JSONL_FIELDS``) next to the
        close ones ("add"); near-exact duplicates are refused unless ``force``. Returns the outcomes
        and ``FILE:LINE: reason`` for each rejected line (bad fields, a cited episode of another
        memory, or a duplicate)."""
        from memory_pipeline.domain.observations import parse_observation_lines

        display = os.fspath(path)
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"{display}: cannot read: {exc.strerror or exc}") from None
        drafts, rejections = parse_observation_lines(data, display, memory=memory)
        outcomes = []
        embedder = self._statement_embedder() if drafts else None
        for line, draft in drafts:
            try:
                outcome = statements.save(
                    self.db, draft, embedder=embedder, decision="add", force=force
                )
            except InputError as exc:  # e.g. an episode of another memory: this line only
                rejections.append((line, f"{display}:{line}: {exc}"))
                continue
            if outcome.action == "refused":
                rejections.append(
                    (
                        line,
                        f"{display}:{line}: near-exact duplicate of statement "
                        f"#{outcome.duplicate_of} (force saves it anyway)",
                    )
                )
            outcomes.append(outcome)
        return outcomes, [text for _, text in sorted(rejections)]

    def observations(
        self, memory: str, *, kind: str | None = None, with_retired: bool = False, limit: int = 100
    ) -> list:
        """A memory's statements, newest first (retired versions only ``with_retired``)."""
        from memory_pipeline.storage import observations_store

        memory = self._checked(validate_memory_name, memory, "memory")
        if kind is not None and kind not in ("observation", "belief"):
            raise InputError(f"unknown kind {kind!r} (expected observation or belief)")
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_LIST_STATEMENTS
        ):
            raise InputError(f"limit {limit!r}: expected 1 to {MAX_LIST_STATEMENTS}")
        with self.db.connection() as conn:
            return observations_store.listing(
                conn, memory, kind=kind, with_retired=with_retired, limit=limit
            )

    def set_observation_status(self, memory: str, observation_id: int, status: str) -> None:
        """Mark a statement active, contested or retired."""

        statements.set_status(
            self.db, self._checked(validate_memory_name, memory, "memory"), observation_id, status
        )

    def _statement_embedder(self) -> Embedder | None:
        """The embedder for close-by-vector, or None when it cannot even be built (words only)."""
        try:
            return self.embedder
        except Exception as exc:  # noqa: BLE001 - a provider that cannot start leaves the words
            self.warnings.append(f"close statements by words only: {exc}")
            return None

    # -- reading ----------------------------------------------------------------------------
    def episodes(
        self, memory: str, *, limit: int = 100, before: int | None = None
    ) -> list[revisions_store.ListedEpisode]:
        """A memory's current episodes, newest first, each with its source and how many revisions
        it has (``before``: the page after that id); UnknownMemory if there is no such memory."""
        memory = self.require_memory(memory)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
            raise InputError(f"limit {limit!r}: expected 1 to {MAX_LIST}")
        with self.db.connection() as conn:
            return revisions_store.listing(conn, memory, limit=limit, before=before)

    def history(self, episode_id: int) -> dict:
        """Every revision of ``episode_id``'s source (it may be any of them), newest first:
        ``{"memory", "sourceId", "revisions": [...]}``; UnknownEpisode if there is none."""
        if isinstance(episode_id, bool) or not isinstance(episode_id, int):
            raise UnknownEpisode(episode_id)
        with self.db.connection() as conn:
            rows = revisions_store.history(conn, episode_id) if 1 <= episode_id < 2**63 else []
        if not rows:
            raise UnknownEpisode(episode_id)
        return {
            "memory": rows[0].memory,
            "sourceId": rows[0].source_key.partition(":")[2] if rows[0].source_key else None,
            "revisions": [r.to_json() for r in rows],
        }

    def episode(self, episode_id: int) -> dict:
        """One stored episode as a document (body, metadata, chunk count); UnknownEpisode if none."""
        with self.db.connection() as conn:
            document = episodes_store.get_episode(conn, episode_id)
        if document is None:
            raise UnknownEpisode(episode_id)
        return document

    def read(self, episode_id: int, *, page: int = 1) -> dict:
        """Page ``page`` (from 1) of an episode (``domain.pages``): its fields without the body,
        ``page``, ``pages``, the page's ``start``/``end`` in the body, its ``chunkIds`` and its
        ``text``; reading pages 1 to ``pages`` reads the whole body. UnknownEpisode if there is
        no such episode, UnknownPage for a page it does not have."""
        from memory_pipeline.domain.chunking import chunk_body
        from memory_pipeline.domain.pages import NoSuchPage
        from memory_pipeline.domain.pages import page as page_of
        from memory_pipeline.errors import UnknownPage

        if (
            isinstance(episode_id, bool)
            or not isinstance(episode_id, int)
            or not 1 <= episode_id <= 2**63 - 1  # a bigint: a larger number names no episode
        ):
            raise UnknownEpisode(episode_id)
        with self.db.connection() as conn:
            document = episodes_store.episode_header(conn, episode_id)
            if document is None:
                raise UnknownEpisode(episode_id)
            spans = episodes_store.chunk_spans(conn, episode_id)
            body = None
            if not spans:  # not indexed yet: the chunks the index pass will store
                body = episodes_store.body_text(conn, episode_id)
                if body is None:  # forgotten meanwhile
                    raise UnknownEpisode(episode_id)
                spans = [
                    (c.start, c.end, c.chunk_id) for c in chunk_body(body, document["contentHash"])
                ]
            try:
                chosen, pages = page_of([(start, end) for start, end, _ in spans], page)
            except NoSuchPage as exc:
                raise UnknownPage(episode_id, page, exc.pages) from None
            if body is None:
                text = episodes_store.body_text(conn, episode_id, chosen.start, chosen.end)
            else:
                text = body[chosen.start : chosen.end]
        if text is None:  # forgotten meanwhile
            raise UnknownEpisode(episode_id)
        del document["contentHash"]
        return {
            **document,
            "page": chosen.number,
            "pages": pages,
            "start": chosen.start,
            "end": chosen.end,
            "chunkIds": [chunk_id for _, _, chunk_id in spans[chosen.first : chosen.last + 1]],
            "text": text,
        }

    # -- forgetting -------------------------------------------------------------------------
    def forget(self, memory: str, *, episode_id: int | None = None) -> ForgetCounts:
        """Forget one episode of ``memory`` (``episode_id``) or the whole memory.

        Removes the episodes, their chunks, their vectors of every profile and generation, entity
        mentions, keyword statistics and the telemetry rows that name them (``forget_store``);
        search never returns them again. The affected ingest days' ``episodes`` partitions get a
        new materialization in Dagster, so the UI shows them as changed.
        """
        memory = self.require_memory(memory)
        with self.db.connection() as conn:
            counts = forget_store.forget(conn, memory, None if episode_id is None else [episode_id])
        if episode_id is not None and counts.episodes == 0:
            raise UnknownEpisode(episode_id)
        self._tell_dagster_forgotten(memory, counts)
        return counts

    # -- status -----------------------------------------------------------------------------
    def status(self) -> dict:
        """Counts, pending work per day, profiles, the HNSW index; where the data lives."""
        from memory_pipeline.storage import hnsw_store, index_store, profiles_store

        configured, embedding = describe(self.embed_settings)  # may detect the wire format
        with self.db.connection() as conn:
            profile = profiles_store.active_profile(conn)
            counts = index_store.count_summary(conn, profile)
            target = (
                profiles_store.get_profile(conn, configured) if configured else None
            ) or profile
            by_day = index_store.pending_by_day(conn, target.writing() if target else None)
            serving = (
                profiles_store.get_generation(conn, profile.id, profile.generation)
                if profile
                else None
            )
            building = (
                profiles_store.get_generation(conn, target.id, target.building_generation)
                if target and target.building_generation
                else None
            )
            index = hnsw_store.inspect(conn, profile) if profile else None
            memories = episodes_store.memory_counts(conn)
            scored = questions_store.latest(conn)  # each memory's latest labelled-question figures
            measured = (
                profiles_store.stored_calibration(conn, profile.id, profile.generation)
                if profile
                else None
            )
        return {
            "version": __version__,
            "dataFolder": str(self.home) if self.home else None,
            "database": redact(self.db.url)
            if self.db.embedded is None
            else f"embedded ({redact(self.db.url)})",
            "memories": len(memories),
            "episodes": counts["episodes"],
            "chunks": counts["chunks"],
            "vectors": counts["vectors"],
            "vectorsWithWindows": counts["vectors_with_windows"],
            "pendingEpisodes": sum(by_day.values()),
            "activeProfile": (
                {
                    "name": profile.name,
                    "provider": profile.provider,
                    "model": profile.model,
                    "dim": profile.dim,
                    "generation": profile.generation,
                }
                if profile
                else None
            ),
            "pendingByDay": by_day,
            "configuredProfile": configured.name if configured else None,
            "embedding": embedding,
            "canary": (
                {
                    "state": serving.state,
                    "reason": serving.stale_reason,
                    "recorded": serving.canary_vector is not None,
                }
                if serving
                else None
            ),
            "building": (
                {
                    "profile": target.name,
                    "generation": target.building_generation,
                    "state": building.state,
                }
                if target and building
                else None
            ),
            "index": index,
            # The serving generation's similarity cut-offs (domain.calibration), or the defaults
            # and why they hold.
            "calibration": (measured or calibration.DEFAULT).to_json() if profile else None,
            "telemetry": {
                "enabled": self.telemetry.enabled,
                "retentionDays": self.telemetry.retention_days,
            },
            # How long indexing the pending episodes takes with the configured model.
            "pendingEstimate": (
                estimate(self.db, configured).to_json() if configured and by_day else None
            ),
            "quality": scored,
        }

    def index_estimate(self, day: dt.date | None = None) -> Estimate | None:
        """How long indexing what is pending (of one ingest day) takes with the configured
        model, from its measured speed (``indexing.estimate``); None when the model cannot be
        told (detection failed)."""
        configured, _ = describe(self.embed_settings)
        return estimate(self.db, configured, day) if configured else None

    # -- access tokens (the HTTP and MCP servers check them) -------------------------------------
    def create_token(
        self, name: str, memories: list[str], access: str
    ) -> tuple[str, tokens_store.StoredToken]:
        """A new bearer token for ``memories`` (``["*"]``: all) with ``access`` "read" or "write";
        returns the token itself (shown once, only its hash is stored) and its record."""
        return tokens.create(self.db, name, memories, access)

    def tokens(self) -> list[tokens_store.StoredToken]:
        with self.db.connection() as conn:
            return tokens_store.list_tokens(conn)

    def revoke_token(self, name: str) -> None:
        with self.db.connection() as conn:
            if not tokens_store.revoke(conn, name):
                raise InputError(f"no token named {name!r}")

    def token_access(self, token: str) -> tokens_store.StoredToken | None:
        """The record of a presented token, or None when it is unknown or revoked."""
        with self.db.connection() as conn:
            return tokens_store.find(conn, token)

    def tokens_configured(self) -> bool:
        with self.db.connection() as conn:
            return tokens_store.any_tokens(conn)

    # -- telemetry --------------------------------------------------------------------------
    def purge_telemetry(self) -> int:
        """Delete search telemetry older than the retention; the number of rows deleted."""
        self._purged_at = time.monotonic()
        with self.db.connection() as conn:
            return search_store.purge_telemetry(conn, self.telemetry.retention_days)

    def _purge_if_due(self) -> None:
        if time.monotonic() - self._purged_at >= PURGE_EVERY_S:
            self.purge_telemetry()

    # -- telling the reporter ---------------------------------------------------------------
    def _tell_dagster_ingested(
        self, day: dt.date, inserted: int, duplicates: int, rejected: int, by: str
    ) -> None:
        if not inserted:
            return
        self._report_days(
            [day],
            {"ingested_by": by, "new": inserted, "duplicates": duplicates, "rejected": rejected},
            what="the ingest",
        )

    def _tell_dagster_forgotten(self, memory: str, counts: ForgetCounts) -> None:
        if counts.episodes:
            self._report_days(
                counts.ingest_days,
                {"forgotten_by": "Memory.forget", "forgotten_episodes": counts.episodes},
                what="the forgetting",
            )

    def _report_days(self, days: list[dt.date], details: dict, *, what: str) -> None:
        """Tell the reporter each day's episodes changed, with the episodes it now holds."""

        def tell(reporter: Reporter) -> None:
            for day in days:
                with self.db.connection() as conn:
                    rows = sum(r["episodes"] for r in episodes_store.day_summary(conn, day))
                reporter.episodes_changed(day.isoformat(), rows, details)

        self._tell(tell, failed=f"done, but could not record {what}")

    def _tell(self, tell: Callable[[Reporter], None], *, failed: str) -> None:
        """``tell(reporter)``, best effort. The data is already stored (or deleted); failing to
        tell only costs the reporter's view (a square of Dagster's UI), so a problem here
        becomes a warning in ``self.warnings``, never a failure."""
        if self.reporter is None:
            return
        try:
            with self._report_lock:
                tell(self.reporter)
        except Exception as exc:  # noqa: BLE001 - reported, never fatal (see docstring)
            self.warnings.append(f"{failed} in {self.reporter.name}: {exc}")

    def take_warnings(self) -> list[str]:
        taken, self.warnings = self.warnings, []
        return taken

    # -- labelled questions and retrieval quality (search.questions, search.quality) --------
    def add_questions(
        self,
        items: Iterable[Mapping[str, Any] | tuple[str, object]],
        *,
        memory: str | None = None,
        author: str = "",
    ) -> QuestionReport:
        """Save labelled questions: objects with ``question``, ``memory`` (else ``memory``) and
        ``expect`` (an episode id, ``source:KEY``, ``observation:ID`` or ``belief:ID``) or
        ``expect_title``; (location, object) pairs keep their locations in the rejections."""
        pairs = [
            item if isinstance(item, tuple) else (f"item {n}", item)
            for n, item in enumerate(items, start=1)
        ]
        return save_questions(self.db, pairs, memory=memory, author=author)

    def questions(self, memory: str | None = None) -> list[questions_store.StoredQuestion]:
        """The labelled questions of ``memory`` (None: of every memory), oldest first."""
        with self.db.connection() as conn:
            return questions_store.list_questions(conn, memory)

    def remove_questions(self, memory: str, question_ids: list[int]) -> list[int]:
        """Delete these questions of ``memory``; the ids that were deleted."""
        with self.db.connection() as conn:
            return questions_store.remove(conn, memory, list(question_ids))

    def score_questions(
        self, memory: str | None = None, *, record: bool = True
    ) -> list[quality.MemoryQuality]:
        """Search every labelled question of ``memory`` (None: of each memory that has some) as
        ``search`` does and compute the figures (``search.quality``); ``record`` stores them as
        the latest that ``quality()`` and ``status`` report."""
        with self.db.connection() as conn:
            names = questions_store.memories_with_questions(conn)
        if memory is not None:
            memory = self.require_memory(memory)
            names = [memory] if memory in names else []
        scored = [quality.score_memory(self.search_service, name) for name in names]
        if record:
            for one in scored:
                quality.record(self.search_service, one)
        return scored

    def switch_guard(self, *, accept_worse: bool = False) -> SwitchGuard:
        """The guard a generation switch asks first (``search.quality_guard``): it scores the new
        generation beside the serving one on the labelled questions; ``accept_worse`` lets a
        worse one serve, knowingly."""
        return SwitchGuard(self.search_service, accept_worse=accept_worse)

    def questions_changed_since(self, since: dt.datetime | None) -> list[str]:
        """The memories whose questions or episodes changed after ``since`` (None: all with
        questions): the ones a new scoring would move."""
        with self.db.connection() as conn:
            return questions_store.memories_changed_since(conn, since)

    def quality(self, memory: str | None = None) -> list[dict]:
        """The latest recorded figures of each memory (or of ``memory``)."""
        with self.db.connection() as conn:
            return questions_store.latest(conn, memory)
