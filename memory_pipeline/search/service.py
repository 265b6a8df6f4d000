"""Fused retrieval: run the channels, fuse their scores, adjust, optionally rerank.

One search, inside one memory:
1. validate the input and resolve the policy (kinds, time window, channels, limit);
2. channels, each a ranked list of chunk ids of this memory only:
   vector (HNSW, 100 by chunk vector re-scored by their best paragraph window, the best 50 kept),
   keyword (BM25 full text, up to 50, literal substring fallback),
   graph (entities named in the query -> up to 25 most recent chunks mentioning them),
   date (days and months named in the query, ``domain.dates`` -> up to 50 chunks of the
   episodes that occurred then, newest first, all alike),
   observation and belief (statements of the memory, ``storage.observations_store``: up to 25,
   their vector and word rankings merged by normalized scores (CombSUM); beliefs marked contested only
   when the policy's ``contested_beliefs`` says so); a statement that cites chunks of this
   memory among its passages ranks those chunks in its place (``domain.observations.
   ranked_with_sources``), one that cites none is a result of its own, and the vector and
   keyword channels also rank it among their chunks by the same measures (its cosine; its BM25
   on the memory's chunk statistics; ``domain.observations.join_chunk_channel``);
3. fusion (``domain.fusion``): CombSUM of each channel's min-max normalized scores with
   per-channel weights, the keyword channel's weighed by how much of the query its best match
   covers (``domain.evidence``), near-ties broken by salience and recency (a statement's
   confidence stands in for salience);
4. if a reranker is configured, the policy allows it and there are more candidates than
   wanted, the reranker orders the fused pool; any failure keeps the fused order;
5. adjacent chunks of one episode among the results are sewn into one passage
   (``domain.passages``); the limit counts passages;
6. the memory's newest episodes that no index pass has chunked yet (no channel can see them) are
   counted, and those holding a word of the query listed beside the results
   (``search_store.pending_in_memory``): nothing written is invisible; superseded revisions
   (DESIGN.md) are out of the index and never found, except with ``history``, which lists those
   holding the query's words after the results (``search.history``);
7. a telemetry row records candidates, ranks, scores, the reranker's outcome and latency.
Without a usable embedder the vector channel is skipped and the response says why; the query
embedding has its own short deadline and a circuit breaker (``search.query_embedding``), so a
hung model server costs one short wait, not every search.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from memory_pipeline.domain import evidence, fusion, passages
from memory_pipeline.domain.dates import named_periods
from memory_pipeline.domain.entities import EntityMatcher, entity_matcher
from memory_pipeline.domain.episodes import validate_memory_name
from memory_pipeline.domain.observations import (
    join_chunk_channel,
    merged_statements,
    ranked_with_sources,
)
from memory_pipeline.domain.policies import Policy, PolicyError
from memory_pipeline.domain.windows import window_focus
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import (
    EmbedderUnavailable,
    InputError,
    MemoryPipelineError,
    ModelRefused,
    UnknownMemory,
)
from memory_pipeline.rerankers.http import HttpReranker, RerankerFailed
from memory_pipeline.search.history import superseded_results
from memory_pipeline.search.query_embedding import QueryEmbeddingBreaker, QueryEmbeddingSkipped
from memory_pipeline.search.results import SearchResponse, SearchResult, make_snippet
from memory_pipeline.storage import episodes_store, observations_store, search_store
from memory_pipeline.storage.database import POOL_SIZE, Database
from memory_pipeline.storage.observations_store import StoredObservation
from memory_pipeline.storage.profiles_store import serving_in, serving_profile
from memory_pipeline.storage.search_store import Filters
from memory_pipeline.storage.vector_store import EXACT_MAX_ROWS, VectorHit, nearest_chunks

MAX_QUERY_CHARS = 4000
VECTOR_CANDIDATES = 50
# The HNSW scan fetches this many chunks by chunk vector; their paragraph windows re-score them
# and the best VECTOR_CANDIDATES go to fusion, so a chunk whose one turn matches can climb past
# chunks that match only on average. LoCoMo (memories of 41-83 chunks), fused recall@5/@8 with a
# pool of 50: 0.821 / 0.863; of 100: 0.826 / 0.871 (benchmarks/bench_locomo.py). hnsw.ef_search is
# already 100 (vector_store.MIN_EF_SEARCH), so the larger pool costs only the extra rows.
VECTOR_RESCORE_POOL = 100
KEYWORD_CANDIDATES = 50
GRAPH_CANDIDATES = 25
# The date channel: the newest chunks of the episodes of the days and months a query names.
DATE_CANDIDATES = 50
# A name in most of a memory's episodes (the owner, a chat partner) singles nothing out; the
# graph channel follows only names that narrow the memory down.
GRAPH_MAX_EPISODE_SHARE = 0.5
RERANK_POOL = 50
STATEMENT_CANDIDATES = 25
STATEMENT_CHANNELS = {"observation": "observation", "belief": "belief"}  # channel -> statement kind
# Memories whose entity matcher a service keeps (each rebuilt when its entities change).
CACHED_ENTITY_MATCHERS = 64
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


def followed_entities(
    conn, memory: str, query: str, matcher: EntityMatcher
) -> tuple[list[int], int, int]:
    """The graph channel's rule: the ids of the entities ``query`` names (``matcher``: the
    ``entity_matcher`` of the memory's entities) that it follows, with their mentions summed
    and the memory's indexed episodes (these two pick the graph query's plan)."""
    named = matcher.find(query)
    if not named:
        return [], 0, 0
    # Only now count mentions, for the few entities the query names, beside the memory's
    # episodes that have chunks, as the keyword statistics keep them (counting a large memory's
    # episodes on every search that named a recurring name cost more than the rest of the
    # channel): names are linked in indexed episodes, so those are the share's denominator.
    counts, episodes = search_store.graph_rule_counts(conn, memory, named)
    followed = [
        i
        for i in named
        if counts[i] > 0 and (episodes < 4 or counts[i] <= GRAPH_MAX_EPISODE_SHARE * episodes)
    ]
    return followed, sum(counts[i] for i in followed), episodes


CHUNK_CHANNELS = ("vector", "keyword", "graph", "date")


def channel_groups(channels) -> list[tuple[str, ...]]:
    """The groups of ``channels`` a search runs at the same time, each on one pooled connection:
    every chunk channel alone, the statement channels (small) together on one. The default
    policy's make five (four when the query names no date), storage.database.POOL_SIZE, so no
    channel waits for another's connection."""
    groups: list[tuple[str, ...]] = [(ch,) for ch in channels if ch in CHUNK_CHANNELS]
    if any(ch in STATEMENT_CHANNELS for ch in channels):
        groups.append(tuple(ch for ch in channels if ch in STATEMENT_CHANNELS))
    return groups


class _Once:
    """A value computed at most once, by whichever channel thread asks first (the query vector:
    the vector and statement channels share one model call)."""

    def __init__(self, compute: Callable[[], object]):
        self._compute = compute
        self._lock = threading.Lock()
        self._done = False
        self._value: object = None
        self._error: BaseException | None = None

    def get(self):
        with self._lock:
            if not self._done:
                try:
                    self._value = self._compute()
                except BaseException as error:  # re-raised to every caller, in its own thread
                    self._error = error
                self._done = True
        if self._error is not None:
            raise self._error
        return self._value


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
        self._executor = ThreadPoolExecutor(
            max_workers=POOL_SIZE, thread_name_prefix="search-channel"
        )
        # memory -> (entities_version, matcher, id -> name): building the matcher of thousands of
        # entities took longer than the rest of the graph channel; it is rebuilt when they change.
        self._matchers: OrderedDict[str, tuple[int | None, EntityMatcher, dict[int, str]]] = (
            OrderedDict()
        )
        self._matchers_lock = threading.Lock()

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

    # -- the search -------------------------------------------------------------------------
    def candidates(
        self,
        memory: str,
        query: str,
        *,
        policy: str | None = None,
        channels: tuple[str, ...] | None = None,
    ) -> dict[str, list[tuple[str, float]]]:
        """Each channel's ranked (key, score) candidates for ``query``, as ``search`` would fuse
        them (the benchmark tunes fusion on these); statements are keyed ``"<kind>:<id>"``.
        ``channels``: only these (default: the policy's). The vector and keyword lists hold the
        statements that cite no chunk only when a statement channel runs with them, so a list
        asked for alone can differ from the same channel's list in a full run."""
        memory = validate_memory_name(memory)
        chosen = self.resolve_policy(policy, limit=None, channels=channels)
        response = SearchResponse(
            memory, validate_query(query), chosen.name, chosen.limit, chosen.channels
        )
        ranked, _, _, _, _ = self._run_channels(
            chosen, memory, query, Filters(), response, with_rows=False
        )
        return ranked

    def search(
        self,
        memory: str,
        query: str,
        *,
        policy: str | None = None,
        limit: int | None = None,
        channels: tuple[str, ...] | None = None,
        sew: bool = True,
        contested_beliefs: bool | None = None,
        history: bool = False,
    ) -> SearchResponse:
        """Search one memory. ``sew=False`` returns chunks unsewn, one a result (benchmarks
        compare rankings at equal returned characters with it); ``contested_beliefs`` overrides
        the policy's; ``history`` adds the superseded revisions holding the query's words after
        the results, marked superseded (``search.history``)."""
        started = time.perf_counter()
        try:
            memory = validate_memory_name(memory)
        except ValueError as exc:
            raise InputError(f"memory {memory!r}: {exc}") from None
        query = validate_query(query)
        chosen = self.resolve_policy(
            policy, limit=limit, channels=channels, contested_beliefs=contested_beliefs
        )
        now = self.clock()
        filters = Filters(
            kinds=list(chosen.kinds) if chosen.kinds else None,
            since=now - dt.timedelta(days=chosen.window_days) if chosen.window_days else None,
        )
        response = SearchResponse(
            memory, query, chosen.name, chosen.limit, chosen.channels, history=history
        )
        ranked, best_window, rows, statements, scales = self._run_channels(
            chosen, memory, query, filters, response
        )
        with self.db.connection() as conn:
            # Only a search that found nothing asks whether the memory exists (one round trip
            # fewer for every other search); the channels find nothing in a memory that does not.
            if not any(ranked.values()) and not search_store.memory_exists(conn, memory):
                raise UnknownMemory(memory, episodes_store.memory_names(conn))
            # Every channel read its candidates' rows itself (a statement channel: those of the
            # chunks its statements cite). A chunk deleted after its channel listed it has no
            # row, so no facts: fusion leaves it out (``kept`` below).
            facts = {
                cid: fusion.ChunkFacts(salience=r.salience, occurred_at=r.occurred_at)
                for cid, r in rows.items()
            }
            facts.update(
                {
                    key: fusion.ChunkFacts(salience=o.confidence, occurred_at=o.observed_at)
                    for key, o in statements.items()
                }
            )
            kept = {
                ch: [(cid, score) for cid, score in hits if cid in facts]
                for ch, hits in ranked.items()
            }
            fused = fusion.fuse(
                {ch: [cid for cid, _ in hits] for ch, hits in kept.items()},
                facts,
                now=now,
                salience_weight=chosen.salience_weight,
                scores={ch: [score for _, score in hits] for ch, hits in kept.items()},
                scales=scales,
            )

            def texts(keys: list[str]) -> dict[str, str]:
                return {
                    **search_store.chunk_texts(
                        conn, memory, sorted({k for k in keys if k in rows})
                    ),
                    **{k: statements[k].text for k in keys if k in statements},
                }

            # Stored but not chunked yet: no channel can find it, so the answer says so (issue 27).
            pending = search_store.pending_in_memory(conn, memory, query, filters)
            response.pending_episodes = len(pending)
            response.pending_more = len(pending) >= search_store.PENDING_WINDOW
            response.pending_matches = [
                {
                    "episodeId": p.id,
                    "title": p.title,
                    "kind": p.kind,
                    "occurredAt": p.occurred_at.isoformat(),
                    "snippet": make_snippet(p.head, query),
                }
                for p in pending
                if p.matches
            ][: chosen.limit]
            final, scores, response.reranker = self._rerank(chosen, query, fused, texts)
            response.results = self._passages(
                final, scores, rows, statements, best_window, query, chosen, texts, sew=sew
            )
            if history:
                response.results += superseded_results(
                    conn, memory, query, filters, chosen.channels, limit=chosen.limit
                )
            response.latency_ms = (time.perf_counter() - started) * 1000
            if self.record:
                search_store.record_telemetry(conn, self._telemetry(response, ranked))
        return response

    @staticmethod
    def _passages(
        final,
        scores,
        rows,
        statements,
        best_window,
        query: str,
        chosen: Policy,
        texts: Callable[[list[str]], dict[str, str]],
        *,
        sew: bool = True,
    ) -> list[SearchResult]:
        """The ranked chunks sewn into at most ``chosen.limit`` passages (``domain.passages``);
        a statement is a result of its own (its own negative "episode": adjacent to nothing).
        ``texts`` reads the texts of the passages' chunks (only theirs: one query)."""
        hits = (
            passages.Hit(f.key, rows[f.key].episode_id, rows[f.key].start, rows[f.key].end)
            if f.key in rows
            else passages.Hit(f.key, -statements[f.key].id, 0, len(statements[f.key].text))
            for f in final
        )
        ranks = {f.key: f.ranks for f in final}
        sewn = passages.sew(hits, chosen.limit, join=sew)
        text = texts([key for passage in sewn for key in passage.keys if key not in statements])
        results = []
        for passage in sewn:
            key = passage.best.key
            if key in statements:
                results.append(
                    SearchService._statement_result(
                        key, statements[key], ranks[key], scores, chosen
                    )
                )
                continue
            best = rows[key]
            results.append(
                SearchResult(
                    episode_id=best.episode_id,
                    chunk_id=best.chunk_id,
                    title=best.title,
                    kind=best.kind,
                    occurred_at=best.occurred_at,
                    snippet=make_snippet(
                        text[key],
                        query,
                        focus=window_focus(text[key], best_window.get(best.chunk_id)),
                    ),
                    start=passage.start,
                    end=passage.end,
                    text="".join(text[k] for k in passage.keys),
                    score=scores[best.chunk_id],
                    ranks={ch: ranks[best.chunk_id].get(ch) for ch in chosen.channels},
                    chunk_ids=tuple(passage.keys),
                    anchor=rows[passage.keys[0]].anchor,
                )
            )
        return results

    @staticmethod
    def _statement_result(key: str, o, ranks, scores, chosen: Policy) -> SearchResult:
        return SearchResult(
            episode_id=o.episode_ids[0] if o.episode_ids else None,
            chunk_id=key,
            title=f"{o.kind} #{o.id}" + (f" ({o.status})" if o.status != "active" else ""),
            kind=o.kind,
            occurred_at=o.observed_at,
            snippet=make_snippet(o.text, ""),
            start=0,
            end=len(o.text),
            text=o.text,
            score=scores[key],
            ranks={ch: ranks.get(ch) for ch in chosen.channels},
            status=o.status,
            sources={"episodeIds": list(o.episode_ids), "passages": list(o.passages)},
        )

    # -- channels ---------------------------------------------------------------------------
    def _run_channels(
        self,
        policy: Policy,
        memory: str,
        query: str,
        filters: Filters,
        response: SearchResponse,
        *,
        with_rows: bool = True,
    ) -> tuple[
        dict[str, list[tuple[str, float]]],
        dict[str, int],
        dict[str, search_store.ChunkRow],
        dict[str, StoredObservation],
        dict[str, fusion.ChannelScale],
    ]:
        """Run the channels at the same time, vector, keyword and graph each on its own pooled
        connection, the statement channels on one; also return each vector candidate's best
        paragraph window (for its snippet), ``with_rows`` the rows of the channels' candidate
        chunks (texts unread), each channel reading its own right after its query (a statement
        channel: of the chunks its statements cite, which it reads anyway), the rows of the
        statements that are candidates themselves (``"observation:12"`` -> its row), and the
        scales fusion reads the channels' scores against (``domain.evidence``).

        They are independent until fusion, and each spends its time in PostgreSQL (or the model
        server), where the GIL is released: on two cores the search takes about as long as its
        slowest channel instead of the sum of all three. Reading the rows in the channels spares
        the search one round trip after the slowest channel, for all of them.
        """

        # Through the breaker: its own short deadline, and no wait at all while the model is known
        # to be down (search.query_embedding).
        query_vector = _Once(
            lambda: self._query_breaker.embed(
                self.embedder(), query, self.embedder().query_timeout_s
            )
        )

        def vector(conn):
            hits, status = self._vector(conn, memory, query_vector, filters)
            windows = {h.chunk_id: h.window for h in hits if h.window is not None}
            return [(h.chunk_id, 1.0 - h.distance) for h in hits], (status, windows)

        def keyword(conn):
            hits = search_store.keyword_hits(conn, memory, query, filters, limit=KEYWORD_CANDIDATES)
            # Substring matches all score 1.0: no BM25 to weigh against the query's reach.
            scale = (
                evidence.keyword_scale(hits.dfs, hits.chunks, hits.unmatched)
                if hits.method == "full_text"
                else None
            )
            return hits.rows, (hits.method, scale)

        def graph(conn):
            return self._graph(conn, memory, query, filters)

        periods = named_periods(query)

        def date(conn):
            return search_store.date_candidates(
                conn, memory, periods, filters, limit=DATE_CANDIDATES
            ), None

        statuses = {
            "observation": ("active",),
            "belief": ("active", "contested") if policy.contested_beliefs else ("active",),
        }

        def statements(channels: tuple[str, ...]):
            with self.db.connection() as conn:
                # Most memories hold no statements: one round trip says so for every channel.
                if len(channels) > 1 and not observations_store.any_statements(
                    conn,
                    memory,
                    kinds=[STATEMENT_CHANNELS[ch] for ch in channels],
                    statuses=sorted({status for ch in channels for status in statuses[ch]}),
                ):
                    return {ch: ([], ({}, {}), {}) for ch in channels}
                return {
                    ch: self._statements(
                        conn,
                        memory,
                        query,
                        query_vector,
                        STATEMENT_CHANNELS[ch],
                        statuses[ch],
                        filters,
                        chunk_channels,
                    )
                    for ch in channels
                }

        jobs = {"vector": vector, "keyword": keyword, "graph": graph, "date": date}
        wanted = [ch for ch in policy.channels if ch in jobs or ch in STATEMENT_CHANNELS]
        chunk_channels = tuple(
            ch for ch in ("vector", "keyword") if ch in wanted
        )  # what statements may join
        groups = channel_groups(wanted)

        def run(group: tuple[str, ...]) -> dict:
            if group[0] in STATEMENT_CHANNELS:
                return statements(group)
            channel = group[0]
            if (
                channel == "date" and not periods
            ):  # most queries name no date: no connection, no round trip
                return {channel: ([], None, {})}
            with self.db.connection() as conn:
                hits, extra = jobs[channel](conn)
                rows = (
                    search_store.chunk_rows(
                        conn, memory, sorted({cid for cid, _ in hits}), texts=False
                    )
                    if with_rows and hits
                    else {}
                )
            return {channel: (hits, extra, rows)}

        outcomes: dict = {}
        if len(groups) == 1:
            outcomes.update(run(groups[0]))
        else:
            for future in [self._executor.submit(run, group) for group in groups]:
                outcomes.update(future.result())
        ranked: dict[str, list[tuple[str, float]]] = {}
        best_window: dict[str, int] = {}
        rows: dict[str, search_store.ChunkRow] = {}
        statement_rows: dict[str, StoredObservation] = {}
        joining: dict[str, list[tuple[str, float]]] = {}
        scales: dict[str, fusion.ChannelScale] = {}
        for ch in wanted:
            hits, extra, read = outcomes[ch]
            ranked[ch] = hits
            rows.update(read)
            if ch == "vector":
                response.vector_status, best_window = extra
            elif ch == "keyword":
                response.keyword_method, scale = extra
                if scale is not None:
                    scales["keyword"] = scale
            elif ch == "graph":
                response.entities = extra
            elif ch in STATEMENT_CHANNELS:
                alone, as_chunks = extra
                statement_rows.update(alone)
                for target, hits in as_chunks.items():
                    joining.setdefault(target, []).extend(hits)
        for target, hits in joining.items():
            # The literal substring fallback's chunks (all scored 1.0, when full text matched no
            # chunk) are not on BM25's scale; when it found none either, the list holds only the
            # statements full text matched.
            if target == "keyword" and response.keyword_method == "substring":
                if ranked[target]:
                    continue
                if hits:
                    response.keyword_method = "full_text"
            ranked[target] = join_chunk_channel(ranked[target], hits)
        return ranked, best_window, rows, statement_rows, scales

    def _vector(
        self, conn, memory: str, query_vector: _Once, filters: Filters
    ) -> tuple[list[VectorHit], str]:
        profile, state, rows = serving_in(conn, memory)
        if profile is None:
            return [], "unavailable: nothing has been embedded yet (run memory-pipeline index)"
        if self._embedder is None:
            return [], "unavailable: no embedder is configured"
        if state is not None and state[0] == "stale":
            return [], (
                f"unavailable: the model behind {profile.name} changed ({state[1]}); run memory-pipeline reindex"
            )
        try:
            embedder = self.embedder()
            if embedder.profile.name != profile.name:
                return [], (
                    f"unavailable: the stored vectors are {profile.name} but the configured "
                    f"embedder is {embedder.profile.name}; vectors of two models are never compared"
                )
            vector = query_vector.get()
        except QueryEmbeddingSkipped as exc:  # slow or down: keyword and graph answer alone
            return [], f"unavailable: {exc}"
        except (EmbedderUnavailable, ModelRefused) as exc:
            return [], f"unavailable: {exc}"
        except MemoryPipelineError as exc:  # e.g. a configuration error in the embedder's settings
            return [], f"unavailable: {exc}"
        hits = nearest_chunks(
            conn,
            profile,
            memory,
            vector,
            limit=VECTOR_RESCORE_POOL,
            kinds=filters.kinds,
            since=filters.since,
            by_windows=True,
            exact=rows is not None and rows <= EXACT_MAX_ROWS,
        )
        return hits[:VECTOR_CANDIDATES], "ok"

    def _graph(
        self, conn, memory: str, query: str, filters: Filters
    ) -> tuple[list[tuple[str, float]], list[str]]:
        matcher, by_id = self._entity_matcher(conn, memory)
        followed, mentions, episodes = followed_entities(conn, memory, query, matcher)
        if not followed:
            return [], []
        hits = search_store.graph_candidates(
            conn,
            memory,
            followed,
            filters,
            limit=GRAPH_CANDIDATES,
            mentions=mentions,
            episodes=episodes,
        )
        return hits, [by_id[i] for i in followed]

    def _entity_matcher(self, conn, memory: str) -> tuple[EntityMatcher, dict[int, str]]:
        """The memory's entity matcher and names by id, kept while its entities stay the same.

        The version is read before the entities, so a change between the two reads leaves a
        newer matcher under an older version: the next search rebuilds it, never the reverse."""
        version = search_store.entities_version(conn, memory)
        with self._matchers_lock:
            cached = self._matchers.get(memory)
            if cached is not None and cached[0] == version:
                self._matchers.move_to_end(memory)
                return cached[1], cached[2]
        entities = search_store.memory_entities(conn, memory)
        matcher, by_id = entity_matcher(entities), {e.id: e.name for e in entities}
        with self._matchers_lock:
            self._matchers[memory] = (version, matcher, by_id)
            self._matchers.move_to_end(memory)
            while len(self._matchers) > CACHED_ENTITY_MATCHERS:
                self._matchers.popitem(last=False)
        return matcher, by_id

    def _statements(
        self,
        conn,
        memory: str,
        query: str,
        query_vector: _Once,
        kind: str,
        statuses: tuple[str, ...],
        filters: Filters,
        chunk_channels: tuple[str, ...],
    ) -> tuple[
        list[tuple[str, float]],
        tuple[dict[str, StoredObservation], dict[str, list[tuple[str, float]]]],
        dict[str, search_store.ChunkRow],
    ]:
        """One statement channel, as ``_run_channels`` returns a channel: the memory's statements
        of ``kind`` ranked by vector (when the serving profile's embedder is usable) and by words,
        the two lists merged by ``domain.observations.merged_statements``, keys ``"<kind>:<id>"``,
        with the chunks they cite; the rows of the statements left in that list (those that cite
        no chunk) with their scores as chunks for ``chunk_channels`` (``_as_chunks``); and the rows
        of the cited chunks. A memory without such statements answers at once, without waiting
        for the query's vector."""
        if not observations_store.any_statements(conn, memory, kinds=(kind,), statuses=statuses):
            return [], ({}, {}), {}
        lists: dict[str, list[tuple[int, float]]] = {}
        profile, state = serving_profile(conn)
        if (
            profile is not None
            and self._embedder is not None
            and (state is None or state[0] != "stale")
        ):
            try:
                if self.embedder().profile.name == profile.name:
                    vector = query_vector.get()
                    lists["vector"] = observations_store.by_vector(
                        conn,
                        profile,
                        memory,
                        vector,
                        kinds=(kind,),
                        statuses=statuses,
                        limit=STATEMENT_CANDIDATES,
                    )
            except MemoryPipelineError:
                pass  # the vector channel reports the embedder's state; words still find statements
        lists["keyword"] = observations_store.by_words(
            conn, memory, query, kinds=(kind,), statuses=statuses, limit=STATEMENT_CANDIDATES
        )
        merged = merged_statements(lists)
        order = sorted(merged, key=lambda i: (-merged[i], i))[:STATEMENT_CANDIDATES]
        keys = [f"{kind}:{i}" for i in order]
        stored = (
            {f"{kind}:{i}": o for i, o in observations_store.rows(conn, memory, order).items()}
            if order
            else {}
        )
        cited, rows = self._cited_chunks(conn, memory, stored, filters)
        ranked = ranked_with_sources(keys, cited, STATEMENT_CANDIDATES)
        # A source chunk takes the score of the best statement that cited it.
        score_of = {f"{kind}:{i}": merged[i] for i in order}
        for key in keys:
            for source in cited.get(key, ()):
                score_of.setdefault(source, score_of[key])
        alone = {key: stored[key] for key in ranked if key in stored}
        as_chunks = self._as_chunks(conn, memory, query, alone, lists, chunk_channels)
        return [(key, score_of[key]) for key in ranked], (alone, as_chunks), rows

    @staticmethod
    def _as_chunks(
        conn,
        memory: str,
        query: str,
        alone: dict[str, StoredObservation],
        lists: dict[str, list[tuple[int, float]]],
        chunk_channels: tuple[str, ...],
    ) -> dict[str, list[tuple[str, float]]]:
        """The statements that are results of their own, scored as the vector and keyword channels
        score chunks: their cosine to the query (the statement channel's own vector list, same
        profile) and their BM25 on the memory's chunk statistics; ``_run_channels`` places them
        among those channels' chunks (``domain.observations.join_chunk_channel``); only for the
        ``chunk_channels`` the policy runs."""
        out: dict[str, list[tuple[str, float]]] = {}
        if not alone:
            return out
        key_of = {o.id: key for key, o in alone.items()}
        if "vector" in chunk_channels:
            cosine = dict(lists.get("vector", ()))
            out["vector"] = [(key, cosine[i]) for i, key in key_of.items() if i in cosine]
        if "keyword" in chunk_channels:
            words = observations_store.on_chunk_scale(conn, memory, query, sorted(key_of))
            out["keyword"] = [(key_of[i], score) for i, score in words.items()]
        return out

    @staticmethod
    def _cited_chunks(
        conn,
        memory: str,
        stored: dict[str, StoredObservation],
        filters: Filters,
    ) -> tuple[dict[str, tuple[str, ...]], dict[str, search_store.ChunkRow]]:
        """Statement key -> the chunks of this memory it cites among its passages (those the
        policy's kinds and time window allow), in the order it cites them; and those chunks' rows."""
        if not stored:
            return {}, {}
        rows = search_store.chunk_rows(
            conn, memory, sorted({p for o in stored.values() for p in o.passages}), texts=False
        )
        allowed = {
            cid: r
            for cid, r in rows.items()
            if (not filters.kinds or r.kind in filters.kinds)
            and (filters.since is None or r.occurred_at >= filters.since)
        }
        return {
            key: tuple(p for p in o.passages if p in allowed) for key, o in stored.items()
        }, allowed

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
