#!/usr/bin/env python
"""Close statements under each model's own cut-off: on statement pairs the calibration never
saw, how many paraphrases are shown back as close before they are saved, and how many pairs of
different facts are held back by mistake?

Data (``benchmarks/data/calibration/pairs.jsonl``, written by hand for this benchmark; its README
says how): 30 paraphrase pairs, 20 pairs of different facts about one subject, 20 unrelated
pairs. The calibration's own probe set (``domain.calibration.PROBES``) is on other subjects.

Each profile gets a fresh embedded database in a temporary folder and is used through the public
``Memory`` API only: one note is added and indexed (the first index pass measures the profile
against the probe set and stores its cut-offs, ``Memory.status()["calibration"]``); then, for
each pair, in a memory of its own, the first statement is saved (``decision="add"``) and the
second asked for (``decision="ask"``): held back (``action`` "undecided", or "refused" as a
near duplicate) means it was reported close. Beside it, for comparison only, the share the fixed
cut-off of before (0.85) would have reported, from the pair's cosine by ``Memory.embedder``.

Profiles (``--profiles``): ``local``, the bundled multilingual-e5-small; ``centred``, a loopback
OpenAI-style server (``memory_pipeline_tests/support/loopback.py``, the real ``/v1/embeddings``
wire format) whose vectors are the bundled model's with their common direction taken out (the
mean of 16 fixed sentences' vectors subtracted, then normalized), so unrelated sentences lie
near cosine 0 instead of 0.75-0.85: another baseline, the same neighbourhoods. ``--embed-url``
uses a server of your own (loopback only) as the one profile instead.

Targets (exit 1 on a miss): for every profile, at most 5% of the pairs of different facts (both
kinds) reported close and at least 90% of the paraphrases.

    python benchmarks/bench_calibration.py                   # ~3 min on 2 cores
    python benchmarks/bench_calibration.py --json calibration.json
    python benchmarks/bench_calibration.py --quick --embed-url http://127.0.0.1:PORT   # the test
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory_pipeline import Memory

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(__file__).resolve().parent / "data" / "calibration" / "pairs.jsonl"
KINDS = ("paraphrase", "same subject", "unrelated")
FIXED_CUT_OFF = 0.85
QUICK_PAIRS = 4
# The "centred" model's common direction: the mean of these sentences' vectors (about nothing in
# the pairs or the probe set).
NEUTRAL = (
    "The meeting starts at nine.",
    "It rained all afternoon.",
    "She bought bread on the way home.",
    "The report is due next week.",
    "He fixed the bike chain.",
    "The museum is closed on Mondays.",
    "They planted roses by the fence.",
    "The train was ten minutes late.",
    "Our server restarted overnight.",
    "The recipe needs two eggs.",
    "O café abre às oito.",
    "Der Bus fährt um sieben.",
    "The invoice was paid in full.",
    "A new shop opened on the corner.",
    "The children played in the park.",
    "The printer is out of paper.",
)


def load(path: Path = DATA) -> list[dict]:
    pairs = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    unknown = {p["kind"] for p in pairs} - set(KINDS)
    if unknown:
        raise SystemExit(f"{path}: unknown pair kind(s) {sorted(unknown)}")
    return pairs


def centred_server():
    """A loopback server serving the bundled model's vectors without their common direction."""
    from memory_pipeline.config import EmbedSettings
    from memory_pipeline.embedders.factory import build_embedder
    from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

    model = build_embedder(EmbedSettings.from_env({}))
    mean = model.embed_documents(list(NEUTRAL)).mean(axis=0)

    def vectors(texts: list[str]) -> np.ndarray:
        rows = model.embed_documents(texts) - mean
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    return LoopbackEmbeddingServer(dim=model.profile.dim, vector_fn=vectors)


def measure(label: str, settings: dict, pairs: Sequence[dict]) -> dict:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="calibration-") as home:
        with Memory.open(home=home, telemetry=False, record_in_dagster=False, **settings) as mem:
            mem.add(
                [
                    {
                        "memory": "start",
                        "kind": "note",
                        "title": "First note",
                        "occurred_at": "2026-01-05",
                        "body": "A first note, so that the model is used and measured.",
                    }
                ]
            )
            mem.index()
            calibration = mem.status().to_json()["calibration"]
            rows = []
            for i, pair in enumerate(pairs):
                memory = f"pair-{i:03d}"
                first = mem.observe(memory, pair["a"], decision="add")
                if first.action != "added":
                    raise SystemExit(f"{label}: {pair['a']!r} was not saved ({first.action})")
                asked = mem.observe(memory, pair["b"])
                a, b = mem.embedder.embed_documents([pair["a"], pair["b"]])
                rows.append(
                    {
                        **pair,
                        "reported_close": asked.action in ("undecided", "refused"),
                        "action": asked.action,
                        "cosine": round(float(np.dot(a, b)), 4),
                    }
                )
    out = {"calibration": calibration, "seconds": round(time.perf_counter() - started, 1)}
    for kind in (*KINDS, "different facts"):
        part = [
            r
            for r in rows
            if r["kind"] == kind or (kind == "different facts" and r["kind"] != "paraphrase")
        ]
        if part:
            out[kind] = {
                "pairs": len(part),
                "reported_close": sum(r["reported_close"] for r in part) / len(part),
                "fixed_cut_off_close": sum(r["cosine"] >= FIXED_CUT_OFF for r in part) / len(part),
            }
    out["pairs"] = rows
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", default="local,centred", help="local, centred")
    parser.add_argument("--embed-url", help="one OpenAI-compatible server on loopback instead")
    parser.add_argument("--embed-model", default="loopback")
    parser.add_argument("--embed-dim", type=int, default=384)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PAIRS} pairs of each kind")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    pairs = load()
    if args.quick:
        pairs = [p for kind in KINDS for p in [q for q in pairs if q["kind"] == kind][:QUICK_PAIRS]]
    figures: dict = {"pairs": len(pairs), "profiles": {}}
    if args.embed_url:
        figures["profiles"][args.embed_model] = measure(
            args.embed_model,
            {
                "embed_provider": "openai",
                "embed_url": args.embed_url,
                "embed_model": args.embed_model,
                "embed_dim": args.embed_dim,
            },
            pairs,
        )
    else:
        for label in args.profiles.split(","):
            if label == "local":
                figures["profiles"][label] = measure(label, {}, pairs)
            elif label == "centred":
                with centred_server() as server:
                    figures["profiles"][label] = measure(
                        label,
                        {
                            "embed_provider": "openai",
                            "embed_url": server.url,
                            "embed_model": "centred-e5",
                            "embed_dim": 384,
                        },
                        pairs,
                    )
            else:
                raise SystemExit(f"unknown profile {label!r} (local, centred)")
    failed = False
    print(f"{len(pairs)} pairs")
    print(
        f"{'profile':12} {'close cut-off':>22} "
        + " ".join(f"{k:>22}" for k in (*KINDS, "different facts"))
    )
    for label, result in figures["profiles"].items():
        c = result["calibration"]
        cut = f"{c['close']:.3f} " + ("measured" if c["measured"] else "default")
        cells = []
        for kind in (*KINDS, "different facts"):
            r = result.get(kind)
            cells.append(
                f"{r['reported_close']:>6.0%} (0.85: {r['fixed_cut_off_close']:>4.0%})"
                if r
                else "-"
            )
        print(f"{label:12} {cut:>22} " + " ".join(f"{cell:>22}" for cell in cells))
        paraphrase, other = result.get("paraphrase"), result.get("different facts")
        verdict = (
            paraphrase is not None
            and other is not None
            and paraphrase["reported_close"] >= 0.90
            and other["reported_close"] <= 0.05
        )
        result["targets_met"] = verdict
        failed |= not verdict
        print(
            f"  targets (paraphrases >= 90% close, different facts <= 5%): {'PASS' if verdict else 'FAIL'}"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
