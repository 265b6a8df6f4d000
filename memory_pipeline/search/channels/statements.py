"""The statement channels (observation, belief): statements ranked by vector and by words.

A statement that cites chunks of this memory among its passages ranks those chunks in its place
(``domain.observations.ranked_with_sources``); one that cites none is a result of its own, and the
vector and keyword channels also rank it among their chunks by their own measures (its cosine;
its BM25 on the memory's chunk statistics), joined by ``run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_pipeline.domain.observations import merged_statements, ranked_with_sources
from memory_pipeline.search.channels.base import ChannelQuery, ChannelResult, Hits, query_vector_for
from memory_pipeline.storage import observations_store, search_store
from memory_pipeline.storage.observations_store import StoredObservation
from memory_pipeline.storage.profiles_store import generation_state, serving_profile

STATEMENT_CANDIDATES = 25
STATEMENT_CHANNELS = {"observation": "observation", "belief": "belief"}  # channel -> statement kind


@dataclass
class StatementResult(ChannelResult):
    """``alone``: the rows of the candidate statements that cite no chunk (results of their
    own), by key ``"<kind>:<id>"``; ``as_chunks``: those statements scored as the chunk channel
    of that name scores chunks, for ``run`` to place among its candidates."""

    alone: dict[str, StoredObservation] = field(default_factory=dict)
    as_chunks: dict[str, Hits] = field(default_factory=dict)


def statuses_of(channel: str, contested_beliefs: bool) -> tuple[str, ...]:
    """The statuses a statement channel returns: contested beliefs only when the policy says so."""
    return ("active", "contested") if channel == "belief" and contested_beliefs else ("active",)


def any_statements(conn, q: ChannelQuery, channels: tuple[str, ...], contested: bool) -> bool:
    """Most memories hold no statements: one round trip says so for every statement channel."""
    return observations_store.any_statements(
        conn,
        q.memory,
        kinds=[STATEMENT_CHANNELS[ch] for ch in channels],
        statuses=sorted(
            {s for ch in channels for s in statuses_of(ch, contested)}
            | ({"retired"} if q.filters.until is not None else set())
        ),
    )


def statement_channel(
    conn,
    q: ChannelQuery,
    channel: str,
    *,
    contested_beliefs: bool,
    chunk_channels: tuple[str, ...],
) -> StatementResult:
    """The memory's statements of the channel's kind, their vector and word rankings merged
    (``domain.observations.merged_statements``), with the rows of the chunks they cite.
    ``chunk_channels``: the chunk channels the search runs, which these statements may join.
    A memory without such statements answers at once, without waiting for the query's vector."""
    kind, statuses = STATEMENT_CHANNELS[channel], statuses_of(channel, contested_beliefs)
    until = q.filters.until
    if until is not None:  # as of a moment: a statement revised since was the one in force then
        statuses = (*statuses, "retired")
    if not observations_store.any_statements(conn, q.memory, kinds=(kind,), statuses=statuses):
        return StatementResult()
    lists: dict[str, list[tuple[int, float]]] = {}
    profile, state = (
        serving_profile(conn)
        if q.candidate is None
        else (q.candidate, generation_state(conn, q.candidate.id, q.candidate.generation))
    )
    vector, _ = query_vector_for(profile, state, q)
    if vector is not None and profile is not None:
        lists["vector"] = observations_store.by_vector(
            conn, profile, q.memory, vector, kinds=(kind,), statuses=statuses,
            limit=STATEMENT_CANDIDATES,
        )  # fmt: skip
    lists["keyword"] = observations_store.by_words(
        conn, q.memory, q.query, kinds=(kind,), statuses=statuses, limit=STATEMENT_CANDIDATES
    )
    merged = merged_statements(lists)
    order = sorted(merged, key=lambda i: (-merged[i], i))[:STATEMENT_CANDIDATES]
    found = observations_store.rows(conn, q.memory, order) if order else {}
    if until is not None:
        order = [i for i in order if i in found and found[i].in_force(until)]
    keys = [f"{kind}:{i}" for i in order]
    stored = {f"{kind}:{i}": found[i] for i in order if i in found}
    cited, rows = _cited_chunks(conn, q, stored)
    ranked = ranked_with_sources(keys, cited, STATEMENT_CANDIDATES)
    # A source chunk takes the score of the best statement that cited it.
    score_of = {f"{kind}:{i}": merged[i] for i in order}
    for key in keys:
        for source in cited.get(key, ()):
            score_of.setdefault(source, score_of[key])
    alone = {key: stored[key] for key in ranked if key in stored}
    return StatementResult(
        hits=[(key, score_of[key]) for key in ranked],
        rows=rows,
        alone=alone,
        as_chunks=_as_chunks(conn, q, alone, lists, chunk_channels),
    )


def _as_chunks(
    conn,
    q: ChannelQuery,
    alone: dict[str, StoredObservation],
    lists: dict[str, list[tuple[int, float]]],
    chunk_channels: tuple[str, ...],
) -> dict[str, Hits]:
    """The statements that are results of their own, scored as the vector and keyword channels
    score chunks: their cosine to the query (the statement channel's own vector list, same
    profile) and their BM25 on the memory's chunk statistics; only for the ``chunk_channels``
    the search runs."""
    out: dict[str, Hits] = {}
    if not alone:
        return out
    key_of = {o.id: key for key, o in alone.items()}
    if "vector" in chunk_channels:
        cosine = dict(lists.get("vector", ()))
        out["vector"] = [(key, cosine[i]) for i, key in key_of.items() if i in cosine]
    if "keyword" in chunk_channels:
        words = observations_store.on_chunk_scale(conn, q.memory, q.query, sorted(key_of))
        out["keyword"] = [(key_of[i], score) for i, score in words.items()]
    return out


def _cited_chunks(
    conn, q: ChannelQuery, stored: dict[str, StoredObservation]
) -> tuple[dict[str, tuple[str, ...]], dict[str, search_store.ChunkRow]]:
    """Statement key -> the chunks of this memory it cites among its passages (those the
    policy's kinds and time window allow), in the order it cites them; and those chunks' rows."""
    if not stored:
        return {}, {}
    rows = search_store.chunk_rows(
        conn, q.memory, sorted({p for o in stored.values() for p in o.passages}), texts=False
    )
    kinds, since, until = q.filters.kinds, q.filters.since, q.filters.until
    allowed = {
        cid: r
        for cid, r in rows.items()
        if (not kinds or r.kind in kinds)
        and (since is None or r.occurred_at >= since)
        and (until is None or r.occurred_at < until)
    }
    return {key: tuple(p for p in o.passages if p in allowed) for key, o in stored.items()}, allowed
