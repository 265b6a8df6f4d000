#!/usr/bin/env python
"""Two more signals of "these notes tell one subject", tried beside what is true now's likeness
to the first result, leave-one-memory-out as ``knowledge_loo.py`` chooses its constants.

- **links**: links between episodes as an index-time step would compute them over the whole
  memory (no query): two episodes are linked when one is among the other's ``k`` nearest
  episodes (the cosine of their closest chunks, by the stored vectors of the serving generation)
  and their cosine is at least a position between the calibration's unrelated and paraphrase
  medians and at least ``delta`` above the episode's median cosine to the others. Conversation
  transcripts take no part, as in the product.
- **words**: a candidate shares with the first result one of the query's lexemes (PostgreSQL's
  ``english`` configuration, as ``chunks.tsv``) that at most ``rare`` of the memory's chunks hold.

A candidate among the first ``depth`` that passes the signal and the query's side (vector score
within ``band`` of the first's, fused score at least ``share`` of the first's) joins the
contenders of ``supersession.in_time`` (``alone``: instead of today's likeness group; ``union``:
beside it), and the product's ``supersession.pick`` chooses. Each memory is held out and scored
with the setting best on the other six among those that put none of them below fusion alone.

Reads the items ``knowledge_loo.py`` cached (``--cache``) and the homes it read them from.

    python benchmarks/supersession_signals.py --ku-home DIR1 --small-home DIR2 --sample-home DIR3 --cache DIR4
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from memory_pipeline.domain import supersession
from memory_pipeline.storage.database import Database

UNRELATED, SAME = 0.7914, 0.9697  # the bundled model's calibration medians
LINK_RULES = list(itertools.product((1, 2, 3), (0.2, 0.3, 0.385, 0.44, 0.5), (0.0, 0.03, 0.05)))
RARE = (0.05, 0.1, 0.2, 0.35, 1.0)
BANDS = (0.03, 0.05, 0.1, 1.0)
SHARES = (0.0, 0.3, 0.5, 0.6)
DEPTHS = (3, 5, 10)

EPISODE_VECTORS = """
SELECT emb.memory, c.episode_id::text, c.chunk_id, ep.kind, emb.embedding::text
FROM embeddings emb
JOIN chunks c ON c.chunk_id = emb.chunk_id AND c.memory = emb.memory
JOIN episodes ep ON ep.id = c.episode_id
JOIN embedding_profiles p ON p.id = emb.profile_id AND p.is_active AND p.generation = emb.generation
"""


class Memory:
    """One memory's episodes: which chunk is whose, their kinds, and the episodes' cosines."""

    def __init__(self, rows: list[tuple]):
        self.episode: dict[str, str] = {}
        self.kind: dict[str, str] = {}
        vectors: dict[str, list[np.ndarray]] = {}
        for _, episode, chunk, kind, text in rows:
            self.episode[chunk] = episode
            self.kind[episode] = kind
            v = np.array(json.loads(text), dtype=np.float32)
            vectors.setdefault(episode, []).append(v / np.linalg.norm(v))
        stacked = {e: np.stack(v) for e, v in vectors.items()}
        self.episodes = list(stacked)
        self.cos = {
            (a, b): float((stacked[a] @ stacked[b].T).max())
            for a in self.episodes
            for b in self.episodes
            if a != b
        }
        self.near = {
            a: sorted((b for b in self.episodes if b != a), key=lambda b: -self.cos[(a, b)])
            for a in self.episodes
        }
        self.median = {
            a: statistics.median(self.cos[(a, b)] for b in self.near[a]) for a in self.near
        }
        self._links: dict[tuple, set] = {}

    def links(self, rule: tuple) -> set[tuple[str, str]]:
        if rule not in self._links:
            k, position, delta = rule
            floor = UNRELATED + position * (SAME - UNRELATED)
            linked = set()
            for a in self.episodes:
                for b in self.near[a][:k]:
                    if "chat" in (self.kind[a], self.kind[b]):
                        continue
                    cos = self.cos[(a, b)]
                    if cos >= floor and cos >= self.median[a] + delta:
                        linked |= {(a, b), (b, a)}
            self._links[rule] = linked
        return self._links[rule]


def read_homes(args: argparse.Namespace, items: list[dict]):
    """Each memory's episodes, each query's lexemes, each candidate chunk's lexemes and the
    memories' lexeme statistics, read from the homes the items came from."""
    memories: dict[str, Memory] = {}
    lexemes: dict[str, list[str]] = {}
    stats: dict[tuple, int] = {}
    homes = {"knowledge": args.ku_home, "small": args.small_home, "sample": args.sample_home}
    for kind, home in homes.items():
        db = Database.open(home=home, environ={})
        try:
            with db.connection() as conn:
                rows = conn.execute(EPISODE_VECTORS).fetchall()
                for name in {r[0] for r in rows}:
                    memories[name] = Memory([r for r in rows if r[0] == name])
                for it in (it for it in items if it["kind"] == kind):
                    lexemes[it["q"]] = [
                        r[0]
                        for r in conn.execute(
                            "SELECT unnest(tsvector_to_array(to_tsvector('english', %s)))",
                            (it["q"],),
                        )
                    ]
                    for key in it["order"]:
                        row = conn.execute(
                            "SELECT tsvector_to_array(tsv) FROM chunks WHERE chunk_id = %s", (key,)
                        ).fetchone()
                        lexemes[key] = row[0] if row else []
                for m, lexeme, df in conn.execute("SELECT memory, lexeme, df FROM keyword_stats"):
                    stats[(m, lexeme)] = df
                for m, chunks in conn.execute("SELECT memory, chunks FROM keyword_memory_stats"):
                    stats[(m, None)] = chunks
        finally:
            db.close()
    return memories, lexemes, stats


def replay(it: dict, setting, memories, lexemes, stats) -> list[str]:
    """The item's titles in the order search would show them under ``setting`` (None: fusion
    alone; "today": the product's step)."""
    order = it["order"]
    reading = supersession.read_query_time(it["q"])
    closeness, scores = it["closeness"], it["score"]
    if setting is None or reading.tense == "neutral" or not order or order[0] not in closeness:
        return [it["title"][k] for k in order]
    first = order[0]
    grouping = supersession.Grouping(same_subject=supersession.same_subject_cut(it.get("medians")))
    today = supersession.contenders(
        order, closeness, scores, lambda _f, _o: it["likeness"], grouping
    ) or [first]
    group = today
    if setting != "today":
        signal, mode, param, band, share, depth = setting
        if signal == "links":
            episode = memories[it["memory"]].episode
            linked = memories[it["memory"]].links(param)
            passes = [k for k in order[1:depth] if (episode[first], episode.get(k)) in linked]
        else:
            total = stats.get((it["memory"], None)) or 1
            rare = {
                w for w in lexemes[it["q"]] if (stats.get((it["memory"], w)) or 0) / total <= param
            }
            mine = set(lexemes[first]) & rare
            passes = [k for k in order[1:depth] if mine & set(lexemes[k])]
        passes = [
            k
            for k in passes
            if k in closeness
            and closeness[k] >= closeness[first] - band
            and scores.get(k, 0.0) >= share * scores[first]
        ]
        group = [first, *passes] if mode == "alone" else list(dict.fromkeys(today + passes))
    group = [k for k in group if k in it["written"]]
    if len(group) >= 2:
        written = {k: dt.datetime.fromisoformat(v) for k, v in it["written"].items()}
        chosen = supersession.pick(reading, group, written)
        order = [chosen, *(k for k in order if k != chosen)]
    return [it["title"][k] for k in order]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag in ("--ku-home", "--small-home", "--sample-home", "--cache"):
        parser.add_argument(flag, type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    items = json.loads((args.cache / "knowledge_items.json").read_text(encoding="utf-8"))
    memories, lexemes, stats = read_homes(args, items)
    groups: dict[str, list[dict]] = {}
    for it in items:
        groups.setdefault(it["memory"], []).append(it)
    tail = list(itertools.product(BANDS, SHARES, DEPTHS))
    out: dict = {}
    for signal, params in (("links", LINK_RULES), ("words", RARE)):
        grid = [None, "today"] + [
            (signal, mode, p, *rest) for mode in ("alone", "union") for p in params for rest in tail
        ]
        memo: dict = {}

        def firsts(name, setting):
            if (name, setting) not in memo:
                memo[(name, setting)] = sum(
                    replay(it, setting, memories, lexemes, stats)[:1] == [it["expect"]]
                    for it in groups[name]
                )
            return memo[(name, setting)]

        def objective(names, setting):
            return sum(firsts(n, setting) / len(groups[n]) for n in names) / len(names)

        print(f"{signal}: {len(grid)} settings")
        print(f"{'memory':12} {'n':>3} {'fusion':>7} {'today':>6} {'held out':>9}  setting")
        rows = {}
        for name in groups:
            train = [n for n in groups if n != name]
            allowed = [s for s in grid if all(firsts(n, s) >= firsts(n, None) for n in train)]
            chosen = max(allowed, key=lambda s: (objective(train, s), s is None))
            rows[name] = {
                "fusion": firsts(name, None),
                "today": firsts(name, "today"),
                "held_out": firsts(name, chosen),
                "setting": chosen,
            }
            r = rows[name]
            print(
                f"{name:12} {len(groups[name]):>3} {r['fusion']:>7} {r['today']:>6} "
                f"{r['held_out']:>9}  {chosen}"
            )
        common = Counter(r["setting"] for r in rows.values()).most_common(1)[0][0]
        print(
            f"the folds' most common setting {common}: in-sample "
            f"{ {n: firsts(n, common) for n in groups} }"
        )
        out[signal] = {"memories": rows, "common": common}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
