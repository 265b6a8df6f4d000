"""What the keyword channel's BM25 scores mean as evidence: the scale (``fusion.ChannelScale``)
fusion reads them against, so the channel's weight follows how much of the question its best
match covers.

Min-max normalization alone gives the best candidate the whole weight however weakly it matches.
The attainable BM25 of a query is the sum of its words' idf (a chunk holding each word once at
average length), words no chunk holds counting at ``UNMATCHED_SHARE``; the channel's strength is
0 at ``KEYWORD_FLOOR`` of it, 1 at ``KEYWORD_REACH``, linear between. Chosen leave-one-memory-out
by ``benchmarks/fusion_loo.py`` (figures in benchmarks/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memory_pipeline.domain.fusion import ChannelScale

KEYWORD_FLOOR = 0.1
KEYWORD_REACH = 0.75
UNMATCHED_SHARE = 0.75


def idf(df: float, chunks: float) -> float:
    """BM25's idf (migration 0017's ``bm25_weight``): ln(1 + (n - df + 0.5) / (df + 0.5))."""
    return math.log(1.0 + (chunks - df + 0.5) / (df + 0.5))


def attainable_bm25(
    dfs: Sequence[int], chunks: int, unmatched: int = 0, *, unmatched_share: float = UNMATCHED_SHARE
) -> float:
    """The BM25 of a chunk holding each query lexeme once at average length: the idf of the
    lexemes the memory holds (document frequencies ``dfs`` among its ``chunks`` rows), and
    ``unmatched_share`` of a lexeme in no chunk's idf for each of the ``unmatched`` others."""
    return math.fsum(idf(df, chunks) for df in dfs) + unmatched_share * unmatched * idf(0, chunks)


def keyword_scale(
    dfs: Sequence[int],
    chunks: int,
    unmatched: int = 0,
    *,
    floor: float = KEYWORD_FLOOR,
    reach: float = KEYWORD_REACH,
    unmatched_share: float = UNMATCHED_SHARE,
) -> ChannelScale | None:
    """The keyword channel's scale for a query (its plan's statistics: ``keyword_store.Plan``);
    None without statistics (the channel is then min-max normalized alone)."""
    if not dfs or chunks <= 0 or not reach > floor >= 0:
        return None
    attainable = attainable_bm25(dfs, chunks, unmatched, unmatched_share=unmatched_share)
    if not attainable > 0:
        return None
    return ChannelScale(floor * attainable, reach * attainable)
