"""What the keyword channel's BM25 scores mean as evidence: the scale (``fusion.ChannelScale``)
fusion reads them against, so the channel's weight follows how much of the question its best
match covers.

Min-max normalization alone gives a channel's best candidate its whole weight however weakly it
matches: in a memory of a dozen notes, the one note that shares an incidental word with the
question ("work", "new") got the keyword channel's full weight and beat the note the vector
channel put first. The attainable BM25 of a query is what a chunk would score holding each of
its words once at average length: the sum of their idf (BM25's term weight is exactly idf there,
whatever k1 and b). Words no chunk of the memory holds count too, each at ``UNMATCHED_SHARE``
of the idf a word in no chunk has: a question asked in other words than the notes use is one
the keyword channel can say little about. The channel's scores are scaled by the strength of its
best one, 0 at ``KEYWORD_FLOOR`` of the attainable BM25 or below, rising in proportion to 1 at
``KEYWORD_REACH`` of it or above. In a large conversation a question's words are mostly there
and its best match usually covers three quarters or more of them (LoCoMo: median 0.97 where that
match holds the evidence), so the channel keeps its weight; a paraphrased question in a small
memory covers 0.1-0.3 and weighs a little.

The form and constants were chosen leave-one-memory-out over LoCoMo's conversations, the sample
corpus and the small memories together, with LoCoMo's recall on the training conversations held
at or above the old constants' (``benchmarks/fusion_loo.py``; figures in benchmarks/README.md).
The vector channel has no scale: the folds kept its min-max normalization.
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
