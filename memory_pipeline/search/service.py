"""Fused retrieval: run the channels, fuse their scores, adjust, optionally rerank.

One search, inside one memory: resolve the policy; run its channels at once
(``search.channels``); fuse them (``domain.fusion``); put first, among results that tell one
subject, the one the query's time asks for (``search.in_time``); rerank the fused pool when a
reranker is configured (any failure keeps the fused order); sew adjacent chunks into passages and
grade them (``search.assembly``, ``search.grading``); list the newest episodes no index pass has
chunked yet that hold a query word, so nothing written is invisible; record telemetry. Without a
usable embedder the vector channel is skipped and the response says why; the query embedding has
its own deadline and circuit breaker (``search.query_embedding``). docs/retrieval.md has the
whole path.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time
from collections.abc import Callable

from memory_pipeline.domain import fusion
from memory_pipeline.domain.episodes import validate_memory_name
from memory_pipeline.domain.policies import Policy, PolicyError
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import InputError, UnknownMemory
from memory_pipeline.rerankers.http import HttpReranker, RerankerFailed
from memory_pipeline.search import in_time
from memory_pipeline.search.assembly import passages_of
from memory_pipeline.search.channels.base import ChannelQuery, Hits, Once
from memory_pipeline.search.channels.run import Candidates, ChannelRunner
from memory_pipeline.search.grading import grade_results
from memory_pipeline.search.history import superseded_results, superseded_statements
from memory_pipeline.search.query_embedding import QueryEmbeddingBreaker
from memory_pipeline.search.results import SearchResponse, SearchResult, make_snippet
from memory_pipeline.storage import episodes_store, search_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import StoredProfile
from memory_pipeline.storage.search_store import Filters

MAX_QUERY_CHARS = 4000
RERANK_POOL = 50
# UTF-8 (and PostgreSQL) cannot carry a lone surrogate: JSON's "\ud800" escape makes one, and so
# does Python for each byte of a command-line argument that is not UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def validate_query(query: object) -> str:
    if not isinstance(query, str):
        raise InputError("the query must be text")
    if "\x00" in query:
        raise InputError("the query contains a NUL character")
    surrogate = _SURROGATE.search(query)
    if surrogate:
        char = surrogate.group()
        if "\udc80" <= char <= "\udcff":  # how Python carries a byte of invalid UTF-8 (argv, files)
            raise InputError(f"the query is not valid UTF-8 (byte 0x{ord(char) - 0xDC00:02x})")
        raise InputError(
            f"the query contains a lone surrogate (\\u{ord(char):04x}), which is not text"
        )
    if not query.strip():
        raise InputError("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(
            f"the query is {len(query)} characters long; at most {MAX_QUERY_CHARS} are searched"
        )
    return query


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_as_of(value: object) -> tuple[dt.datetime, str]:
    """A search's ``as_of`` as the moment before which episodes count (exclusive) and as it is
    shown: a date means the end of that day (UTC), a date-time that moment (no offset: UTC).
    Accepts ISO 8601 text, a ``date`` or a ``datetime``; anything else is an InputError."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        try:
            moment = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" else text)
        except ValueError:
            raise InputError(
                f"as_of {value!r} is not a date: give YYYY-MM-DD or an ISO 8601 date-time"
            ) from None
        if _DAY.fullmatch(text):
            value = moment.date()
    else:
        raise InputError(f"as_of must be a date, got {type(value).__name__}")
    if moment.tzinfo is None or moment.tzinfo.utcoffset(moment) is None:
        moment = moment.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        try:
            return moment + dt.timedelta(days=1), value.isoformat()
        except OverflowError:
            raise InputError(f"as_of {value}: out of range") from None
    try:
        return moment.astimezone(dt.UTC) + dt.timedelta(microseconds=1), moment.isoformat()
    except OverflowError:
        raise InputError(f"as_of {value}: out of range") from None


def validate_memory(memory: object) -> str:
    """The one check of a searched memory's name, for every way in (``Memory``, benchmarks)."""
    try:
        return validate_memory_name(memory)
    except ValueError as exc:
        raise InputError(f"memory {memory!r}: {exc}") from None


class SearchService:
    """Searches over one database; the embedder and reranker are optional collaborators."""

    def __init__(
        self,
        db: Database,
        policies: dict[str, Policy],
        *,
        embedder: Callable[[], Embedder] | Embedder | None = None,
        reranker: HttpReranker | None = None,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        record: bool = True,
        breaker_clock: Callable[[], float] = time.monotonic,
    ):
        self.db = db
        self.policies = policies
        self._embedder = embedder
        self.reranker = reranker
        self.clock = clock
        self.record = record
        # One per service: a model that stopped answering is remembered across its searches.
        self._query_breaker = QueryEmbeddingBreaker(clock=breaker_clock)
        self.channels = ChannelRunner(db)

    # -- input ------------------------------------------------------------------------------
    def resolve_policy(
        self,
        name: str | None,
        *,
        limit: int | None,
        channels: tuple[str, ...] | None,
        contested_beliefs: bool | None = None,
    ) -> Policy:
        # Only a missing name means the default: "" is a mistake to report, not a request.
        name = "default" if name is None else name
        if not isinstance(name, str):
            raise InputError(f"the policy must be a name, got {type(name).__name__}")
        if name not in self.policies:
            known = ", ".join(sorted(self.policies))
            raise InputError(f"unknown policy {name!r} (known: {known})")
        try:
            return self.policies[name].with_overrides(
                channels=channels, limit=limit, contested_beliefs=contested_beliefs
            )
        except PolicyError as exc:
            raise InputError(str(exc)) from None

    def embedder(self) -> Embedder:
        if callable(self._embedder) and not isinstance(self._embedder, Embedder):
            self._embedder = self._embedder()
        return self._embedder  # type: ignore[return-value]

    def _channel_query(
        self,
        memory: str,
        query: str,
        filters: Filters,
        *,
        with_rows: bool,
        candidate: StoredProfile | None = None,
    ) -> ChannelQuery:
        def embed():
            # Through the breaker: its own short deadline, and no wait at all while the model
            # is known to be down (search.query_embedding).
            embedder = self.embedder()
            return self._query_breaker.embed(embedder, query, embedder.query_timeout_s)

        return ChannelQuery(
            memory=memory,
            query=query,
            filters=filters,
            embedder=None if self._embedder is None else self.embedder,
            query_vector=Once(embed),
            with_rows=with_rows,
            pending=with_rows,  # a search, which also lists the episodes not chunked yet
            candidate=candidate,
        )

    # -- the search -------------------------------------------------------------------------
    def candidates(
        self,
        memory: str,
        query: str,
        *,
        policy: str | None = None,
        channels: tuple[str, ...] | None = None,
        candidate: StoredProfile | None = None,
    ) -> dict[str, Hits]:
        """Each channel's ranked (key, score) candidates for ``query``, as ``search`` would fuse
        them (the benchmark tunes fusion on these); statements are keyed ``"<kind>:<id>"``.
        ``channels``: only these (default: the policy's). The vector and keyword lists hold the
        statements that cite no chunk only when a statement channel runs with them, so a list
        asked for alone can differ from the same channel's list in a full run. ``candidate``: a
        generation read instead of the serving one (``search``)."""
        memory, query = validate_memory(memory), validate_query(query)
        chosen = self.resolve_policy(policy, limit=None, channels=channels)
        q = self._channel_query(memory, query, Filters(), with_rows=False, candidate=candidate)
        found = self.channels.run(q, chosen.channels, contested_beliefs=chosen.contested_beliefs)
        return found.ranked

    def search(
        self,
        memory: str,
        query: str,
        *,
        policy: str | None = None,
        limit: int | None = None,
        channels: tuple[str, ...] | None = None,
        sew: bool = True,
        passages: bool = False,
        contested_beliefs: bool | None = None,
        history: bool = False,
        as_of: object = None,
        candidate: StoredProfile | None = None,
        channel_lists: dict[str, Hits] | None = None,
    ) -> SearchResponse:
        """Search one memory. ``sew=False``: chunks unsewn, one a result (benchmarks);
        ``passages``: one episode may hold several results (default: one an episode, its best
        passage); ``history``: superseded revisions holding the query's words, after the
        results (``search.history``); ``as_of``: what was in force then (``parse_as_of``,
        ``search.in_time``); ``candidate``: a generation not serving yet, read instead (the
        quality guard); ``channel_lists``: filled with each channel's ranked candidates."""
        started = time.perf_counter()
        memory, query = validate_memory(memory), validate_query(query)
        until, as_of_text = parse_as_of(as_of) if as_of is not None else (None, None)
        chosen = self.resolve_policy(
            policy, limit=limit, channels=channels, contested_beliefs=contested_beliefs
        )
        now = self.clock()
        filters = Filters(
            kinds=list(chosen.kinds) if chosen.kinds else None,
            since=now - dt.timedelta(days=chosen.window_days) if chosen.window_days else None,
            until=until,
        )
        q = self._channel_query(memory, query, filters, with_rows=True, candidate=candidate)
        found = self.channels.run(q, chosen.channels, contested_beliefs=chosen.contested_beliefs)
        if channel_lists is not None:
            channel_lists.update(found.ranked)
        response = SearchResponse(
            memory,
            query,
            chosen.name,
            chosen.limit,
            chosen.channels,
            vector_status=found.vector_status,
            keyword_method=found.keyword_method,
            entities=found.entities,
            history=history,
            as_of=as_of_text,
        )
        with self.db.connection() as conn:
            # Only a search that found nothing asks whether the memory exists (one round trip
            # fewer for every other search); the channels find nothing in a memory that does not.
            if not any(found.ranked.values()) and not search_store.memory_exists(conn, memory):
                raise UnknownMemory(memory, episodes_store.memory_names(conn))
            fused = in_time.reorder(
                conn, memory, query, self._fuse(found, chosen, until or now), found, as_of=until
            )

            def texts(keys: list[str]) -> dict[str, str]:
                chunk_ids = sorted({k for k in keys if k in found.rows})
                return {
                    **search_store.chunk_texts(conn, memory, chunk_ids),
                    **{k: found.statements[k].text for k in keys if k in found.statements},
                }

            self._add_pending(conn, response, filters, found.pending)
            final, scores, response.reranker = self._rerank(chosen, query, fused, texts)
            response.results = passages_of(
                final, scores, found.rows, found.statements, found.windows, query, chosen,
                texts, sew=sew, distinct=not passages,
            )  # fmt: skip
            response.results, match = grade_results(memory, response.results, found)
            response.match, response.match_reason = match.grade, match.reason
            response.results += self._superseded(conn, response, filters, chosen, history)
            response.latency_ms = (time.perf_counter() - started) * 1000
            if self.record:
                search_store.record_telemetry(conn, self._telemetry(response, found.ranked))
        return response

    @staticmethod
    def _fuse(found: Candidates, chosen: Policy, now: dt.datetime) -> list:
        """The channels' candidates fused into one ranking (``domain.fusion``). Every channel read
        its candidates' rows itself; a chunk deleted after its channel listed it has no row, so
        no facts, and fusion leaves it out."""
        facts = {
            cid: fusion.ChunkFacts(salience=r.salience, occurred_at=r.occurred_at)
            for cid, r in found.rows.items()
        }
        facts.update(
            {
                key: fusion.ChunkFacts(salience=o.confidence, occurred_at=o.observed_at)
                for key, o in found.statements.items()
            }
        )
        kept = {
            ch: [(cid, score) for cid, score in hits if cid in facts]
            for ch, hits in found.ranked.items()
        }
        return fusion.fuse(
            {ch: [cid for cid, _ in hits] for ch, hits in kept.items()},
            facts,
            now=now,
            salience_weight=chosen.salience_weight,
            scores={ch: [score for _, score in hits] for ch, hits in kept.items()},
            scales=found.scales,
        )

    @staticmethod
    def _superseded(
        conn, response: SearchResponse, filters: Filters, chosen: Policy, history: bool
    ) -> list[SearchResult]:
        """The superseded revisions a search lists after its results: as of a moment, those
        current then (out of the index now, matched by their words); with history, the others
        too (as of a moment: those that had occurred by then), then the statements a revision
        superseded (``search.history``)."""
        memory, query, limit = response.memory, response.query, chosen.limit
        found: list[SearchResult] = []
        if filters.until is not None:
            found = superseded_results(conn, memory, query, filters, chosen.channels, limit=limit)
        if not history:
            return found
        seen = {r.episode_id for r in found}
        wider = dataclasses.replace(filters, until=None)
        more = superseded_results(conn, memory, query, wider, chosen.channels, limit=limit)
        until = filters.until
        earlier = [
            r for r in more if r.episode_id not in seen and (until is None or r.occurred_at < until)
        ]
        return found + earlier + superseded_statements(conn, memory, query, chosen, until=until)

    @staticmethod
    def _add_pending(
        conn,
        response: SearchResponse,
        filters: Filters,
        pending: list[search_store.PendingEpisode] | None,
    ) -> None:
        """Stored but not chunked yet: no channel can find it, so the answer says so.
        ``pending``: as the channels read it (None: they did not, read it now)."""
        if pending is None:
            pending = search_store.pending_in_memory(conn, response.memory, response.query, filters)
        response.pending_episodes = len(pending)
        response.pending_more = len(pending) >= search_store.PENDING_WINDOW
        response.pending_matches = [
            {
                "episodeId": p.id,
                "title": p.title,
                "kind": p.kind,
                "occurredAt": p.occurred_at.isoformat(),
                "snippet": make_snippet(p.head, response.query),
            }
            for p in pending
            if p.matches
        ][: response.limit]

    def _rerank(
        self, policy: Policy, query: str, fused: list, texts: Callable[[list[str]], dict[str, str]]
    ) -> tuple[list, dict[str, float], str]:
        scores = {f.key: f.score for f in fused}
        if not policy.rerank or self.reranker is None:
            return fused, scores, "off"
        if len(fused) <= policy.limit:
            return fused, scores, "not needed"
        pool = fused[:RERANK_POOL]
        try:
            text = texts([f.key for f in pool])
            relevance = self.reranker.rerank(query, [text[f.key] for f in pool])
        except RerankerFailed as exc:
            return fused, scores, f"fallback: {exc.reason}"
        order = sorted(range(len(pool)), key=lambda i: (-relevance[i], i))
        reranked = [pool[i] for i in order]
        return reranked, {pool[i].key: float(relevance[i]) for i in order}, "ran"

    @staticmethod
    def _telemetry(response: SearchResponse, ranked: dict[str, list[tuple[str, float]]]) -> dict:
        return {
            "memory": response.memory,
            "query": response.query,
            "policy": response.policy,
            "result_limit": response.limit,
            "channels": list(response.channels),
            "latency_ms": response.latency_ms,
            "vector_status": response.vector_status,
            "reranker": response.reranker,
            "candidates": {
                ch: [
                    {"chunk_id": c, "rank": i + 1, "score": round(s, 6)}
                    for i, (c, s) in enumerate(hits)
                ]
                for ch, hits in ranked.items()
            },
            "results": [
                {
                    "chunk_id": r.chunk_id,
                    "chunk_ids": list(r.chunk_ids),
                    "rank": i + 1,
                    "score": round(r.score, 6),
                }
                for i, r in enumerate(response.results)
            ],
        }
