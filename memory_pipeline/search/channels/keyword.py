"""The keyword channel: chunks by BM25 full text, a literal substring match as fallback."""

from __future__ import annotations

from dataclasses import dataclass

from memory_pipeline.domain import evidence
from memory_pipeline.domain.fusion import ChannelScale
from memory_pipeline.search.channels.base import ChannelQuery, ChannelResult
from memory_pipeline.storage import search_store

KEYWORD_CANDIDATES = 50


@dataclass
class KeywordResult(ChannelResult):
    """``method``: "full_text" or "substring"; ``scale``: what the BM25 scores mean as evidence
    for this query (``domain.evidence``), None for substring matches, which all score 1.0;
    ``attainable``: the query's attainable BM25 on the same statistics (None with no scale),
    against which a result's keyword evidence is graded (``domain.grades``)."""

    method: str | None = None
    scale: ChannelScale | None = None
    attainable: float | None = None


def keyword_channel(conn, q: ChannelQuery) -> KeywordResult:
    found = search_store.keyword_hits(conn, q.memory, q.query, q.filters, limit=KEYWORD_CANDIDATES)
    if found.method != "full_text":
        return KeywordResult(hits=found.rows, method=found.method)
    scale = evidence.keyword_scale(found.dfs, found.chunks, found.unmatched)
    attainable = (
        None
        if scale is None
        else evidence.attainable_bm25(found.dfs, found.chunks, found.unmatched)
    )
    return KeywordResult(hits=found.rows, method=found.method, scale=scale, attainable=attainable)
