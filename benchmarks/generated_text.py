#!/usr/bin/env python
"""Generated English-like text for ``bench_million.py``'s corpus, and its search timings.

``TextGenerator`` / ``iter_corpus``: episodes of words drawn from the most frequent English words
at their real frequencies (``wordfreq``, the ``bench`` extra) or a Zipf vocabulary of real common
words and pseudo-words, chats of short turns, recurring proper names, cut by the product's
chunker; ``bench_million.py`` writes them as JSONL for ``memory-pipeline ingest``. ``time_rows``
and ``vector_recall`` time the channels and measure the HNSW index's recall@10 against an exact
scan on a build the console script made. (The latency benchmark itself is
``bench_search_latency.py``, on ``user_path``'s notes.)
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import sql

from memory_pipeline.domain.chunking import (
    MAX_CHUNK_CHARS,
    Chunk,
    chunk_body,
    content_hash,
)
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.search.channels.vector import VECTOR_RESCORE_POOL
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import (
    hnsw_store,
)
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import (
    StoredProfile,
)
from memory_pipeline.storage.vector_store import nearest_chunks, nearest_query

MEMORY = "bench"
START = dt.datetime(2022, 1, 1, tzinfo=dt.UTC)
SPAN_DAYS = 3 * 365
QUERY_FILE = Path(__file__).resolve().parent / "data" / "search_queries.txt"
WARMUP = 20
RECALL_QUERIES = 100

ROWS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("vector", ("vector",)),
    ("keyword", ("keyword",)),
    ("graph", ("graph",)),
    ("fused default", None),
)

# --------------------------------------------------------------------------------------------
# Generated text
# --------------------------------------------------------------------------------------------

COMMON_WORDS = """the of and to a in is it you that he was for on are with as his they be at one have
this from or had by hot word but what some we can out other were all there when up use your how
said an each she which do their time if will way about many then them write would like so these her
long make thing see him two has look more day could go come did number sound no most people my over
know water than call first who may down side been now find any new work part take get place made
live where after back little only round man year came show every good me give our under name very
through just form sentence great think say help low line differ turn cause much mean before move
right boy old too same tell does set three want air well also play small end put home read hand port
large spell add even land here must big high such follow act why ask men change went light kind off
need house picture try us again animal point mother world near build self earth father head stand own
page should country found answer school grow study still learn plant cover food sun four between state
keep eye never last let thought city tree cross farm hard start might story saw far sea draw left late
run while press close night real life few north open seem together next white children begin got walk
example ease paper group always music those both mark often letter until mile river car feet care
second book carry took science eat room friend began idea fish mountain stop once base hear horse cut
sure watch color face wood main enough plain girl usual young ready above ever red list though feel
talk bird soon body dog family direct pose leave song measure door product black short numeral class
wind question happen complete ship area half rock order fire south problem piece told knew pass since
top whole king space heard best hour better true during hundred five remember step early hold west
ground interest reach fast verb sing listen six table travel less morning ten simple several vowel
toward war lay against pattern slow center love person money serve appear road map rain rule govern
pull cold notice voice unit power town fine certain fly fall lead cry dark machine note wait plan
figure star box noun field rest correct able pound done beauty drive stood contain front teach week
final gave green oh quick develop ocean warm free minute strong special mind behind clear tail produce
fact street inch multiply nothing course stay wheel full force blue object decide surface deep moon
island foot system busy test record boat common gold possible plane stead dry wonder laugh thousand
ago ran check game shape equate miss brought heat snow tire bring yes distant fill east paint language
among""".split()

# Everyday work and life words, ranked right after COMMON_WORDS (each in a few percent of the
# chunks), and rarer real words spread deep among the pseudo-words (a few hundred chunks each):
# so hand-written queries (data/search_queries.txt) hit common and rare postings alike.
WORK_WORDS = """project meeting billing invoice budget deadline client customer report review team office
email schedule contract payment account manager call notes travel doctor dinner weekend garden coffee
release design sprint refund agenda""".split()
RARE_WORDS = """escrow sabbatical kombucha subpoena arbitration fjord saxophone lasagna origami tundra
glacier mortgage dentist allergy pilates ukulele espresso amortization quarantine refinance telescope
volcano kickoff quarterly documentary""".split()
RARE_FIRST_RANK, RARE_STEP = 2000, 400


FIRST_NAMES = """Maria James Aiko Lukas Priya Omar Sofia Daniel Chen Elena Tom Nadia Ravi Grace Felix Hannah
Yusuf Clara Mateo Ingrid Amara Bruno Carmen Dmitri Esther Farid Greta Hugo Imani Jonas Keiko Leila
Marco Nina Oscar Paula Quentin Rosa Samir Tanya""".split()
SYLLABLES = """ka lo mi ra te su vo ne di pa ru ko zi ma ten sha vel dor min tu lia ber nox qua fen ri go
la ve san tor mu pe ci nal dra hu yo win es ar en ol um ix""".split()


def pseudo_words(rng: random.Random, count: int, forbidden: set[str]) -> list[str]:
    words: list[str] = []
    seen = set(forbidden)
    while len(words) < count:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((1, 2, 2, 2, 3, 3))))
        if len(w) >= 3 and w not in seen:
            seen.add(w)
            words.append(w)
    return words


ENGLISH_WORDS = 60_000


def english_vocabulary(count: int = ENGLISH_WORDS) -> tuple[list[str], np.ndarray]:
    """The ``count`` most frequent English words (letters only, "i" left out: capitalised it
    would pass for a name) and their frequencies in general English text, from ``wordfreq``
    (``pip install -e '.[bench]'``): a vocabulary and word frequencies nobody chose for the
    queries, unlike ``WORK_WORDS`` / ``RARE_WORDS``."""
    try:
        import wordfreq
    except ImportError:
        raise SystemExit(
            "--vocabulary english needs the wordfreq package: pip install -e '.[bench]'"
        ) from None
    words = []
    for word in wordfreq.iter_wordlist("en"):
        if word.isascii() and word.isalpha() and word != "i":
            words.append(word)
            if len(words) == count:
                break
    return words, np.array([wordfreq.word_frequency(w, "en") for w in words], dtype=np.float64)


class TextGenerator:
    """Zipf-distributed English-looking prose with recurring people; fully determined by the seed.

    ``english``: words drawn by their real frequencies from ``english_vocabulary()``'s list;
    else (the "shaped" vocabulary) Zipf over COMMON_WORDS, WORK_WORDS, pseudo-words and
    RARE_WORDS, ranks chosen so the hand-written queries' words occur."""

    def __init__(
        self,
        seed: int,
        vocabulary: int = 20_000,
        people: int = 400,
        english: tuple[list[str], np.ndarray] | None = None,
    ):
        rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.rng = rng
        if english is not None:
            self.words = np.array(english[0], dtype=object)
            self.word_cdf = np.cumsum(english[1])
        else:
            common = list(dict.fromkeys(w for w in (*COMMON_WORDS, *WORK_WORDS) if w != "i"))
            words = common + pseudo_words(rng, vocabulary, {*common, *RARE_WORDS})
            for i, word in enumerate(RARE_WORDS):
                words.insert(RARE_FIRST_RANK + i * RARE_STEP, word)
            self.words = np.array(words, dtype=object)
            ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
            self.word_cdf = np.cumsum(1.0 / ranks)
        self.word_cdf /= self.word_cdf[-1]
        surnames = [
            w.capitalize() for w in pseudo_words(random.Random(seed + 7), people, set(self.words))
        ]
        self.people = [f"{rng.choice(FIRST_NAMES)} {surnames[i]}" for i in range(people)]
        person_ranks = np.arange(1, people + 1, dtype=np.float64) ** -0.9
        self.person_cdf = np.cumsum(person_ranks) / person_ranks.sum()

    def _draw(self, cdf: np.ndarray, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, self.np_rng.random(n)), len(cdf) - 1)

    def person(self) -> str:
        return self.people[int(self._draw(self.person_cdf, 1)[0])]

    def paragraph(self, lo: int = 150, hi: int = 300) -> str:
        n = self.rng.randint(lo, hi)
        words = list(self.words[self._draw(self.word_cdf, n)])
        # Up to three mentions of recurring people, never first in a sentence.
        for _ in range(self.rng.choice((0, 0, 1, 1, 1, 2, 3))):
            words[self.rng.randrange(1, n)] = self.person()
        out: list[str] = []
        i = 0
        while i < n:
            length = self.rng.randint(6, 18)
            sentence = words[i : i + length]
            i += length
            first = sentence[0]
            if first[:1].islower():
                sentence[0] = first.capitalize()
            out.append(" ".join(sentence) + ".")
        # Keep the paragraph within one chunk: no hard cuts in the generated data.
        while len(out) > 1 and sum(len(x) + 1 for x in out) - 1 > MAX_CHUNK_CHARS:
            out.pop()
        return " ".join(out)


@dataclass
class GeneratedEpisode:
    kind: str
    title: str
    occurred_at: dt.datetime
    salience: float
    body: str
    content_hash: str
    chunks: list[Chunk]


KINDS = ("note", "note", "chat", "journal", "email", "doc")


def iter_corpus(gen: TextGenerator, target_chunks: int, seed: int) -> Iterator[GeneratedEpisode]:
    """Episodes until they hold ``target_chunks`` chunks, one at a time (bench_million streams them)."""
    rng = random.Random(seed + 1)
    total = 0
    i = 0
    while total < target_chunks:
        kind = rng.choice(KINDS)
        if kind == "chat":  # many short turns: the chunks that carry paragraph windows
            paragraphs = [gen.paragraph(10, 40) for _ in range(rng.randint(8, 30))]
        else:
            paragraphs = [gen.paragraph() for _ in range(rng.randint(1, 4))]
        body = "\n\n".join(paragraphs)
        h = content_hash(body)
        chunks = chunk_body(body, h)
        when = START + dt.timedelta(seconds=rng.uniform(0, SPAN_DAYS * 86400))
        yield GeneratedEpisode(
            kind, f"Generated episode {i}", when, round(rng.uniform(0.2, 0.9), 2), body, h, chunks
        )
        total += len(chunks)
        i += 1


# --------------------------------------------------------------------------------------------
# The database (a fresh one from bench_databases.Databases)
# --------------------------------------------------------------------------------------------


def load_queries(path: Path, count: int | None = None) -> list[str]:
    """The hand-written queries of ``path`` (one a line, ``#`` comments), the first ``count``."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    queries = [line for line in lines if line and not line.startswith("#")]
    return queries[:count] if count else queries


# --------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def time_rows(
    db: Database,
    service: SearchService,
    profile: StoredProfile,
    queries: list[str],
    embedder: Embedder,
    ef_search: int,
) -> dict[str, dict]:
    """Warm-up: the first WARMUP queries through every row; then every query timed."""
    vectors = {q: embedder.embed_query(q) for q in queries}
    samples: dict[str, list[float]] = {name: [] for name, _ in ROWS}
    samples["raw vector SQL"] = []
    counts: dict[str, list[int]] = {name: [] for name in samples}
    graph_fired = 0
    keyword_methods: dict[str, int] = {}
    with db.connection() as conn:

        def raw_sql(q: str) -> int:
            return len(
                nearest_chunks(
                    conn,
                    profile,
                    MEMORY,
                    vectors[q],
                    limit=VECTOR_RESCORE_POOL,
                    ef_search=ef_search,
                    by_windows=True,
                )
            )

        def search(q: str, name: str, channels: tuple[str, ...] | None) -> int:
            resp = service.search(MEMORY, q, channels=channels)
            if name == "keyword":
                keyword_methods[resp.keyword_method] = (
                    keyword_methods.get(resp.keyword_method, 0) + 1
                )
            if name == "vector" and resp.vector_status != "ok":
                raise SystemExit(f"vector channel unavailable: {resp.vector_status}")
            return len(resp.results)

        for q in queries[:WARMUP]:
            for _, channels in ROWS:
                service.search(MEMORY, q, channels=channels)
            raw_sql(q)
        rows = [(name, channels) for name, channels in ROWS] + [("raw vector SQL", None)]
        for i, q in enumerate(queries):
            # The first row to search a query reads its pages into the caches for the rows after
            # it (a large memory does not fit in shared buffers): the order turns with each query,
            # so every row starts a query as often as every other.
            for name, channels in rows[i % len(rows) :] + rows[: i % len(rows)]:
                t0 = time.perf_counter()
                found = raw_sql(q) if name == "raw vector SQL" else search(q, name, channels)
                samples[name].append((time.perf_counter() - t0) * 1000)
                counts[name].append(found)
                if name == "graph" and found:
                    graph_fired += 1
    out = {}
    for name, xs in samples.items():
        out[name] = {
            "p50_ms": pct(xs, 0.5),
            "p95_ms": pct(xs, 0.95),
            "mean_ms": statistics.fmean(xs),
            "max_ms": max(xs),
            "queries": len(xs),
            "mean_results": statistics.fmean(counts[name]),
        }
    out["_meta"] = {
        "timed_queries": len(queries),
        "graph_nonempty": graph_fired,
        "keyword_methods": keyword_methods,
        "timed": queries,
        "keyword_ms": samples["keyword"],
    }
    return out


def explain(
    conn: psycopg.Connection, profile: StoredProfile, vector: np.ndarray, *, exact: bool
) -> str:
    """EXPLAIN of the statement nearest_chunks runs for 10 neighbours (index scans off: exact)."""
    with conn.transaction():
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        statement = nearest_query(profile, filtered=False, by_windows=False)
        rows = conn.execute(
            sql.SQL("EXPLAIN ") + statement,
            {"q": HalfVector(vector), "memory": MEMORY, "limit": 10, "kinds": None, "since": None},
        ).fetchall()
    return re.sub(r"'\[[-0-9.e,]+\]'", "'[...]'", "\n".join(r[0] for r in rows))


def vector_recall(
    db: Database,
    profile: StoredProfile,
    embedder: Embedder,
    probes: Sequence[str],
    efs: Sequence[int],
    *,
    show_plans: bool,
) -> dict:
    qv = [embedder.embed_query(q) for q in probes[:RECALL_QUERIES]]
    out: dict = {}
    with db.connection() as conn:
        plan_exact = explain(conn, profile, qv[0], exact=True)
        plan_index = explain(conn, profile, qv[0], exact=False)
        uses_index = lambda plan: "Index Scan" in plan  # noqa: E731
        out["explain_exact"] = plan_exact
        out["explain_index"] = plan_index
        if show_plans:
            print("  EXPLAIN of the exact query (enable_indexscan = off):")
            print("    " + plan_exact.replace("\n", "\n    "))
        if uses_index(plan_exact):
            raise SystemExit(
                "the exact query still uses an index scan: recall would be measured against itself"
            )
        ok = uses_index(plan_index) and hnsw_store.index_name(profile) in plan_index
        print(
            f"  exact plan has no index scan: True; the normal plan uses {hnsw_store.index_name(profile)}: {ok}"
        )
        truth = []
        t0 = time.perf_counter()
        for v in qv:
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                truth.append(
                    {h.chunk_id for h in nearest_chunks(conn, profile, MEMORY, v, limit=10)}
                )
        out["exact_ms_per_query"] = (time.perf_counter() - t0) * 1000 / len(qv)
        for ef in sorted(set(efs)):
            got, ms, pooled, pool_ms = [], [], [], []
            for v in qv:
                t0 = time.perf_counter()
                hits = nearest_chunks(conn, profile, MEMORY, v, limit=10, ef_search=ef)
                ms.append((time.perf_counter() - t0) * 1000)
                got.append({h.chunk_id for h in hits})
                # What the vector channel fetches before its windows re-score them.
                t0 = time.perf_counter()
                hits = nearest_chunks(
                    conn, profile, MEMORY, v, limit=VECTOR_RESCORE_POOL, ef_search=ef
                )
                pool_ms.append((time.perf_counter() - t0) * 1000)
                pooled.append({h.chunk_id for h in hits})
            recall = statistics.fmean(len(g & t) / 10 for g, t in zip(got, truth))
            in_pool = statistics.fmean(len(g & t) / 10 for g, t in zip(pooled, truth))
            out[str(ef)] = {
                "recall_at_10": recall,
                "p50_ms": pct(ms, 0.5),
                "p95_ms": pct(ms, 0.95),
                "top10_in_pool": in_pool,
                "pool_p50_ms": pct(pool_ms, 0.5),
                "pool_p95_ms": pct(pool_ms, 0.95),
            }
    return out


def print_recall(rec: dict, efs: Sequence[int], chosen: int) -> None:
    print(f"  exact scan: {rec['exact_ms_per_query']:.1f} ms/query")
    for ef in sorted(set(efs)):
        r = rec[str(ef)]
        mark = "  <- chosen" if ef == chosen else ""
        print(
            f"  ef_search {ef:>4}: recall@10 {r['recall_at_10']:.3f}  p50 {r['p50_ms']:.1f} ms  p95 {r['p95_ms']:.1f} ms"
            f" | true top 10 among the {VECTOR_RESCORE_POOL} fetched {r['top10_in_pool']:.3f}  "
            f"p50 {r['pool_p50_ms']:.1f} ms  p95 {r['pool_p95_ms']:.1f} ms{mark}"
        )
