"""Run a policy's channels at the same time and gather their results into ``Candidates``.

The channels are independent until fusion and each spends its time in PostgreSQL (or the model
server), where the GIL is released: on two cores a search takes about as long as its slowest
channel instead of the sum. Each channel reads its candidates' rows right after its query (the
vector channel in the same statement), on its own pooled connection, which spares the search one
round trip after the slowest channel.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.domain.fusion import ChannelScale
from memory_pipeline.domain.observations import join_chunk_channel
from memory_pipeline.search.channels.base import ChannelQuery, ChannelResult, Hits
from memory_pipeline.search.channels.date import date_channel, names_a_date
from memory_pipeline.search.channels.graph import GraphChannel, GraphResult
from memory_pipeline.search.channels.keyword import KeywordResult, keyword_channel
from memory_pipeline.search.channels.statements import (
    STATEMENT_CHANNELS,
    StatementResult,
    any_statements,
    statement_channel,
)
from memory_pipeline.search.channels.vector import VectorChannel, VectorResult
from memory_pipeline.storage import search_store
from memory_pipeline.storage.database import POOL_SIZE, Database
from memory_pipeline.storage.observations_store import StoredObservation
from memory_pipeline.storage.profiles_store import StoredProfile

CHUNK_CHANNELS = ("vector", "keyword", "graph", "date")
# The chunk channels whose measures can also score a statement that cites no chunk.
JOINABLE = ("vector", "keyword")


@dataclass
class Candidates:
    """Every channel's candidates for one search, as fusion reads them.

    ``ranked``: channel -> (key, score) best first, statements keyed ``"<kind>:<id>"`` and those
    citing no chunk also placed in the vector and keyword lists; ``rows``: the candidate chunks'
    rows (texts unread); ``statements``: the rows of the statements that are results of their
    own; ``scales``: what a channel's scores mean as evidence (``domain.evidence``); ``windows``:
    each vector candidate's best paragraph window; ``calibration`` (the serving profile's) and
    ``keyword_attainable`` (the query's attainable BM25): what grades the results; ``profile``:
    the serving profile the vector channel read (None when it had no vector); ``pending``: the
    memory's episodes not chunked yet when the query asked and a statement channel ran (None:
    not read)."""

    ranked: dict[str, Hits] = field(default_factory=dict)
    rows: dict[str, search_store.ChunkRow] = field(default_factory=dict)
    statements: dict[str, StoredObservation] = field(default_factory=dict)
    scales: dict[str, ChannelScale] = field(default_factory=dict)
    windows: dict[str, int] = field(default_factory=dict)
    vector_status: str = "off"
    keyword_method: str | None = None
    entities: list[str] = field(default_factory=list)
    calibration: Calibration | None = None
    keyword_attainable: float | None = None
    profile: StoredProfile | None = None
    pending: list[search_store.PendingEpisode] | None = None


def channel_groups(channels) -> list[tuple[str, ...]]:
    """The groups of ``channels`` a search runs at the same time, each on one pooled connection:
    every chunk channel alone, the statement channels (small) together on one. The default
    policy's make five (four when the query names no date), storage.database.POOL_SIZE, so no
    channel waits for another's connection."""
    groups: list[tuple[str, ...]] = [(ch,) for ch in channels if ch in CHUNK_CHANNELS]
    if any(ch in STATEMENT_CHANNELS for ch in channels):
        groups.append(tuple(ch for ch in channels if ch in STATEMENT_CHANNELS))
    return groups


class ChannelRunner:
    """Runs channels on a database's pool; one per search service (its threads, its caches)."""

    def __init__(self, db: Database):
        self.db = db
        self.graph = GraphChannel()
        self.vector = VectorChannel()
        self._executor = ThreadPoolExecutor(max_workers=POOL_SIZE, thread_name_prefix="channel")

    def run(
        self, q: ChannelQuery, channels: tuple[str, ...], *, contested_beliefs: bool
    ) -> Candidates:
        wanted = tuple(ch for ch in channels if ch in CHUNK_CHANNELS or ch in STATEMENT_CHANNELS)
        joinable = tuple(ch for ch in JOINABLE if ch in wanted)

        pending: list[list[search_store.PendingEpisode]] = []

        def run_group(group: tuple[str, ...]) -> dict[str, ChannelResult]:
            if group[0] in STATEMENT_CHANNELS:
                return self._statements(q, group, contested_beliefs, joinable, pending)
            return {group[0]: self._chunk_channel(q, group[0])}

        groups = channel_groups(wanted)
        results: dict[str, ChannelResult] = {}
        if len(groups) == 1:
            results.update(run_group(groups[0]))
        else:
            for future in [self._executor.submit(run_group, group) for group in groups]:
                results.update(future.result())
        found = gather(results, wanted)
        found.pending = pending[0] if pending else None
        return found

    def _chunk_channel(self, q: ChannelQuery, channel: str) -> ChannelResult:
        if channel == "date" and not names_a_date(q):
            return ChannelResult()  # no connection, no round trip
        with self.db.connection() as conn:
            result = self._chunk_channel_of(channel)(conn, q)
            # The vector channel reads its candidates' rows in its own statement.
            if q.with_rows and result.hits and not isinstance(result, VectorResult):
                ids = sorted({cid for cid, _ in result.hits})
                result.rows = search_store.chunk_rows(conn, q.memory, ids, texts=False)
        return result

    def _chunk_channel_of(self, channel: str) -> Callable[..., ChannelResult]:
        # Looked up at each call, so a profiler that wraps this module's functions sees them.
        channels = {"keyword": keyword_channel, "date": date_channel}
        if channel in ("vector", "graph"):
            return self.vector if channel == "vector" else self.graph
        return channels[channel]

    def _statements(
        self,
        q: ChannelQuery,
        channels: tuple[str, ...],
        contested: bool,
        joinable: tuple[str, ...],
        pending: list[list[search_store.PendingEpisode]],
    ) -> dict[str, ChannelResult]:
        """The statement channels, on one connection; first, when ``q.pending``, the memory's
        episodes not chunked yet (into ``pending``): most memories hold no statements, so this
        connection is otherwise idle while the chunk channels run."""
        with self.db.connection() as conn:
            if q.pending:
                pending.append(search_store.pending_in_memory(conn, q.memory, q.query, q.filters))
            if len(channels) > 1 and not any_statements(conn, q, channels, contested):
                return {ch: StatementResult() for ch in channels}
            return {
                ch: statement_channel(
                    conn, q, ch, contested_beliefs=contested, chunk_channels=joinable
                )
                for ch in channels
            }


def gather(results: dict[str, ChannelResult], channels: tuple[str, ...]) -> Candidates:
    """The channels' results as one ``Candidates``: each channel's hits and rows, what only it
    knows in its field, and the statements that cite no chunk placed among the vector and
    keyword channels' chunks (``domain.observations.join_chunk_channel``)."""
    out = Candidates()
    joining: dict[str, Hits] = {}
    for ch in channels:
        result = results[ch]
        out.ranked[ch] = result.hits
        out.rows.update(result.rows)
        if isinstance(result, VectorResult):
            out.vector_status, out.windows = result.status, result.windows
            out.calibration, out.profile = result.calibration, result.profile
        elif isinstance(result, KeywordResult):
            out.keyword_method, out.keyword_attainable = result.method, result.attainable
            if result.scale is not None:
                out.scales["keyword"] = result.scale
        elif isinstance(result, GraphResult):
            out.entities = result.entities
        elif isinstance(result, StatementResult):
            out.statements.update(result.alone)
            for target, hits in result.as_chunks.items():
                joining.setdefault(target, []).extend(hits)
    for target, hits in joining.items():
        # The literal substring fallback's chunks (all scored 1.0, when full text matched no
        # chunk) are not on BM25's scale; when it found none either, the list holds only the
        # statements full text matched.
        if target == "keyword" and out.keyword_method == "substring":
            if out.ranked[target]:
                continue
            if hits:
                out.keyword_method = "full_text"
        out.ranked[target] = join_chunk_channel(out.ranked[target], hits)
    return out
