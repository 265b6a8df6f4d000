"""What is true now, in a search: the fused order's first results reordered by the time the query
asks about (``domain.supersession``), among those that tell one subject."""

from __future__ import annotations

import datetime as dt

import psycopg

from memory_pipeline.domain import supersession
from memory_pipeline.domain.fusion import Fused
from memory_pipeline.search.channels.run import Candidates
from memory_pipeline.storage import vector_store


def grouping_for(found: Candidates) -> supersession.Grouping:
    """The grouping with the same-subject cut of the profile the vector channel read (its
    calibration's medians; ``supersession.same_subject_cut``)."""
    medians = found.calibration.medians if found.calibration is not None else None
    return supersession.Grouping(same_subject=supersession.same_subject_cut(medians))


def reorder(
    conn: psycopg.Connection,
    memory: str,
    query: str,
    fused: list[Fused],
    found: Candidates,
    *,
    as_of: dt.datetime | None = None,
) -> list[Fused]:
    """``fused`` with the candidate the query's time wants first; ``fused`` itself when the query
    asks about no time, the vector channel did not run, the first result is part of a
    conversation (``supersession.TRANSCRIPT_KINDS``), or no other result tells its subject. Costs
    one round trip only when some result passes the query's side of the test. ``as_of``: the
    search's moment; a query naming no time then asks about it (the latest note then)."""
    vector = dict(found.ranked.get("vector", ()))
    stated = {
        k: row for k, row in found.rows.items() if row.kind not in supersession.TRANSCRIPT_KINDS
    }
    if not fused or not vector or fused[0].key not in stated:
        return fused
    if supersession.read_query_time(query).tense == "neutral" and as_of is None:
        return fused

    profile = found.profile  # read by the vector channel: no second round trip for it
    if profile is None:
        return fused

    def likeness(first: str, others: list[str]) -> dict[str, float]:
        chunks = [k for k in others if k in stated]
        return vector_store.cosines_to(conn, profile, memory, first, chunks)

    order = [f.key for f in fused]
    new = supersession.in_time(
        query,
        order,
        written={k: row.occurred_at for k, row in stated.items()},
        closeness=vector,
        scores={f.key: f.score for f in fused},
        likeness=likeness,
        grouping=grouping_for(found),
        as_of=as_of is not None,
    )
    if new == order:
        return fused
    by_key = {f.key: f for f in fused}
    return [by_key[k] for k in new]
