"""The keyword channel's query: BM25 that stays fast in large memories.

It plans with the statistics of ``keyword_stats_store`` and reads the lists of
``champions_store``. When at most ``cap`` chunks can match, every matching chunk is scored
(``keyword_exact.sql``); otherwise at most ``cap`` candidates come through the GIN index in tiers
of rarer to commoner lexemes (``keyword_capped.sql``, ``_gates``), or, for one common word with a
champion list, from that list; a memory without a statistics row is scored by
``keyword_bm25.sql``. When full text finds nothing, the query as a literal substring.
``scored_candidates`` also returns the statistics the plan read, which fusion weighs the BM25
scores against (``domain.evidence``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import psycopg

from memory_pipeline.domain.evidence import idf
from memory_pipeline.storage.paths import query

# Candidate budget of the capped path. A query is scored exactly when at most this many chunks
# can match it (its lexemes' summed df, or the memory's chunk count, is within it), so memories
# of up to CAP chunks always are. Scoring costs ~20 us a candidate (heap row, TOASTed tsvector)
# on 2 cores at 100,000 chunks: 500 keeps the channel's p95 under ~20 ms there.
CAP = 500


@dataclass(frozen=True)
class Bm25:
    """BM25's two constants, passed to ``bm25_weight`` (migration 0017) by every keyword query.

    k1: how fast a lexeme's repeats stop adding (term-frequency saturation); b: how much a long
    document is marked down (length normalisation, 0 none, 1 full)."""

    k1: float
    b: float

    def params(self) -> dict[str, float]:
        return {"k1": self.k1, "b": self.b}


# The keyword and statement channels' BM25 (benchmarks/README.md: chosen leave-one-out on LoCoMo).
BM25 = Bm25(k1=1.2, b=0.75)


def or_tsquery(lexemes: list[str]) -> str:
    """A tsquery matching any lexeme. Lexemes are quoted, so nothing in them is syntax."""
    quoted = ["'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes]
    return " | ".join(quoted)


# The capped path's "enough common lexemes together" gate considers at most this many of them
# (the rarest), so the tsquery (every combination of m of them) stays small.
COMMON_TERMS = 6


@dataclass(frozen=True)
class Plan:
    """How one query is scored: the path, the lexemes kept (rarest first), the gates (tsquery)."""

    path: str  # "none" (no lexeme), "unmatched", "exact", "capped", "counted"
    lexemes: tuple[str, ...] = ()
    dfs: tuple[int, ...] = ()
    gate: str | None = None  # tsqueries of the tiers (see keyword_capped.sql)
    common: tuple[str, ...] | None = None  # any of them (see _at_least_led)
    common_limit: int = 0
    fill: str | None = None
    champion: str | None = None  # the one common lexeme, read from its champion list
    chunks: int = 0
    total_lexemes: int = 0
    unmatched: int = 0  # query lexemes no chunk of the memory holds (dropped from the rest)
    # The document frequencies of the lexemes beyond the gate's (``beyond_gate``): a chunk holding
    # none of the gate's scores at most their idf x (k1 + 1) (see keyword_capped.sql).
    beyond: tuple[int, ...] = ()


def _quote(lexeme: str) -> str:
    return or_tsquery([lexeme])


def _at_least(m: int, lexemes: Sequence[str]) -> str:
    """A tsquery matching chunks holding at least ``m`` of ``lexemes``."""
    if m <= 1:
        return or_tsquery(list(lexemes))
    return " | ".join(
        "(" + " & ".join(_quote(lex) for lex in combo) + ")" for combo in combinations(lexemes, m)
    )


def _at_least_led(m: int, lexemes: Sequence[str]) -> tuple[str, ...]:
    """``_at_least(m, lexemes)`` as tsqueries each led by a lexeme every match of it holds: the
    chunks holding the i-th of ``lexemes`` and m - 1 of the ones after it, for each i that leaves
    enough after it. Together they match the same chunks, but each GIN scan (``tsv @@
    ANY(...)``, one index search apiece, OR-ed into one bitmap) skips through the other posting
    lists by its leading lexeme's: a single "at least m" tsquery has no lexeme every match holds
    and decodes every posting list of the words whole (benchmarks/README.md)."""
    if m <= 1:
        return (or_tsquery(list(lexemes)),)
    return tuple(_with_rarest(m, lexemes[i:]) for i in range(len(lexemes) - m + 1))


def _with_rarest(m: int, lexemes: Sequence[str]) -> str:
    """A tsquery matching chunks holding the first (rarest) of ``lexemes`` and at least ``m`` - 1
    of the others: a lexeme every match holds, which GIN's scan skips through the other,
    longer posting lists by (a plain "at least m" has none and reads them all)."""
    if m <= 1 or len(lexemes) < 2:
        return _quote(lexemes[0])
    return f"{_quote(lexemes[0])} & ({_at_least(m - 1, lexemes[1:])})"


def _gates(
    kept: Sequence[tuple[str, int]], n: int, cap: int, listed: frozenset[str] = frozenset()
) -> tuple[str | None, tuple[str, ...] | None, int, str | None, str | None]:
    """(gate, common, its limit, fill, champion) of the capped path for ``kept`` (lexeme, df),
    rarest first; ``listed``: the lexemes with a champion list.

    A chunk holding a rare lexeme, or several common ones, is where the top BM25 scores are: a
    chunk holding one common lexeme only scores less than (k1 + 1) x its low idf (``BM25.k1``;
    term frequency saturates there).

    gate: the rare lexemes, the rarest ones while their summed df stays within ``cap`` (every
    chunk holding one is a candidate). common: chunks holding at least m of the (up to
    COMMON_TERMS rarest) other lexemes, m the smallest (>= 2) for which their expected number,
    were the lexemes independent, fits what is left of the budget (all of them at most), at most
    that many (``_at_least_led``'s tsqueries). fill: chunks holding the rarest of them and m - 2
    others (m - 1 in all; with a single common lexeme: that lexeme). Holding it, they score more
    than the other chunks of m - 1 common lexemes on average (its idf is the highest), and the
    fill reads the rarest one's posting list instead of every common lexeme's.
    champion: a single common lexeme with a list, whose best rows replace the common tier (the
    fill then only runs when filters or deletions left fewer than ``limit`` candidates).
    """
    rare, used = [], 0
    for lexeme, df in kept:
        if used + df > cap:
            break
        rare.append(lexeme)
        used += df
    common = kept[len(rare) :][:COMMON_TERMS]
    names = [lexeme for lexeme, _ in common]
    gate = or_tsquery(rare) if rare else None
    left = cap - used
    if len(names) == 1:
        if names[0] in listed:
            return gate, None, left, _quote(names[0]), names[0]
        return (
            (gate, None, 0, _quote(names[0]), None)
            if rare
            else (None, _at_least_led(1, names), cap, None, None)
        )
    exactly = [1.0]  # exactly[j]: probability that a chunk holds j of the common lexemes
    for _, df in common:
        p = min(df / max(n, 1), 1.0)
        exactly = [
            (exactly[j] if j < len(exactly) else 0.0) * (1 - p) + (exactly[j - 1] * p if j else 0.0)
            for j in range(len(exactly) + 1)
        ]
    m = next((m for m in range(2, len(names)) if n * sum(exactly[m:]) <= left), len(names))
    return gate, (_at_least_led(m, names) if left else None), left, _with_rarest(m - 1, names), None


def plan(conn: psycopg.Connection, memory: str, text: str, *, cap: int = CAP) -> Plan:
    rows = conn.execute(query("keyword_lexemes"), {"memory": memory, "text": text}).fetchall()
    if not rows:
        return Plan("none")
    if rows[0][2] is None:  # no statistics for this memory: count as keyword_bm25.sql does
        return Plan("counted", tuple(sorted(r[0] for r in rows)))
    chunks, total = rows[0][2], int(rows[0][3])
    kept = [(lexeme, df) for lexeme, df, _, _, _ in rows if df]  # rarest first
    unmatched = len(rows) - len(kept)
    if not kept:
        return Plan("unmatched", chunks=chunks, total_lexemes=total, unmatched=unmatched)
    lexemes, dfs = tuple(lex for lex, _ in kept), tuple(d for _, d in kept)
    if sum(dfs) <= cap or chunks <= cap:  # at most cap chunks match: score them all
        return Plan(
            "exact",
            lexemes,
            dfs,
            or_tsquery(list(lexemes)),
            chunks=chunks,
            total_lexemes=total,
            unmatched=unmatched,
        )
    listed = frozenset(lexeme for lexeme, _, _, _, has_list in rows if has_list)
    gate, common, common_limit, fill, champion = _gates(kept, chunks, cap, listed)
    return Plan(
        "capped",
        lexemes,
        dfs,
        gate,
        common,
        common_limit,
        fill,
        champion,
        chunks,
        total,
        unmatched,
        beyond=beyond_gate(kept, cap),
    )


def beyond_gate(kept: Sequence[tuple[str, int]], cap: int) -> tuple[int, ...]:
    """The dfs of ``kept``'s lexemes (rarest first) after the gate's: the rarest ones while their
    summed df stays within ``cap``, as ``_gates`` chooses them."""
    used = 0
    for i, (_, df) in enumerate(kept):
        if used + df > cap:
            return tuple(d for _, d in kept[i:])
        used += df
    return ()


def ceiling(n: int, dfs: Sequence[int], bm25: Bm25) -> float:
    """The highest BM25 score a chunk holding only lexemes of these ``dfs`` can reach: each one's
    idf x (k1 + 1), the weight's limit as its term frequency grows."""
    return sum(idf(df, n) for df in dfs) * (bm25.k1 + 1)


def planned_query(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    filters,
    *,
    limit: int = 50,
    cap: int = CAP,
    bm25: Bm25 | None = None,
    planned: Plan | None = None,
) -> tuple[str, str | None, dict]:
    """The path full-text search takes for ``text`` and the named query and parameters it runs
    (None when there is nothing to run). ``ranked`` runs it; the latency benchmark EXPLAINs it.
    ``planned``: the query's ``plan``, when the caller has read it already."""
    p = planned or plan(conn, memory, text, cap=cap)
    if p.path in ("none", "unmatched"):
        return p.path, None, {}
    params = {
        "memory": memory,
        "lexemes": list(p.lexemes),
        "limit": limit,
        **filters.params(),
        **(bm25 or BM25).params(),
    }
    if p.path == "counted":
        return (
            p.path,
            "keyword_bm25",
            {**params, "tsquery": or_tsquery(list(p.lexemes))},
        )
    if p.path == "exact":
        return p.path, "keyword_exact", {**params, "tsquery": p.gate, "n": p.chunks}
    return (
        p.path,
        "keyword_capped",
        {
            **params,
            "dfs": list(p.dfs),
            "gate": p.gate,
            "common": list(p.common) if p.common else None,
            "common_limit": p.common_limit,
            "fill": p.fill,
            "champion": p.champion,
            "cap": cap,
            "common_bound": ceiling(p.chunks, p.beyond, bm25 or BM25),
            "n": p.chunks,
            "avgdl": max(p.total_lexemes / p.chunks, 1.0),
        },
    )


def ranked(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    filters,
    *,
    limit: int = 50,
    cap: int = CAP,
    bm25: Bm25 | None = None,
    planned: Plan | None = None,
) -> tuple[list[tuple[str, float]], str]:
    """Full-text BM25 only: ((chunk_id, score) best first, the path taken)."""
    path, name, params = planned_query(
        conn, memory, text, filters, limit=limit, cap=cap, bm25=bm25, planned=planned
    )
    if name is None:
        return [], path
    return [(c, float(s)) for c, s in conn.execute(query(name), params).fetchall()], path


@dataclass(frozen=True)
class KeywordHits:
    """The keyword channel's answer: its ranked (chunk_id, score) rows, how it found them
    ("full_text" or "substring"), and the document frequency of each query lexeme the memory's
    chunks hold among its ``chunks`` rows (what fusion weighs the BM25 scores against,
    ``domain.evidence.keyword_scale``; empty without statistics)."""

    rows: list[tuple[str, float]]
    method: str
    dfs: tuple[int, ...] = ()
    chunks: int = 0
    unmatched: int = 0  # query lexemes no chunk holds


def scored_candidates(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    filters,
    limit: int = 50,
    *,
    cap: int = CAP,
    bm25: Bm25 | None = None,
) -> KeywordHits:
    """(ranked (chunk_id, score) rows, method): BM25 full text, else the literal substring; with
    the statistics of the query's lexemes it read on the way."""
    p = plan(conn, memory, text, cap=cap)
    rows, _path = ranked(conn, memory, text, filters, limit=limit, cap=cap, bm25=bm25, planned=p)
    if rows:
        return KeywordHits(rows, "full_text", p.dfs, p.chunks, p.unmatched)
    needle = text.strip()
    found = conn.execute(
        query("keyword_substring"),
        {"memory": memory, "needle": needle, "limit": limit, **filters.params()},
    ).fetchall()
    return KeywordHits([(c, float(s)) for c, s in found], "substring")
