"""The fault and fuzz suite for longer: its generators and checks, many cases each, every failing
case counted (the CI tests stop at the first and keep to a few cases).

    python benchmarks/fuzz_hostile.py                      # 300 cases of each generator
    python benchmarks/fuzz_hostile.py --cases 20 --seed 1  # a quick look
    python benchmarks/fuzz_hostile.py --json fuzz.json

The generators and checks are ``memory_pipeline_tests/fuzz/hostile.py``: hostile folders of
JSONL, Markdown and text files (names and bytes of every kind), ``search --batch`` files, and
single queries, all through the real ``memory-pipeline`` entry point in this process, against a
fresh database (``bench_databases``) and a loopback model server. Hypothesis runs without
shrinking, so a failure is reported as generated; the first few are printed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_databases import Databases  # noqa: E402  (a sibling module)
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from memory_pipeline_tests.fuzz import hostile  # noqa: E402
from memory_pipeline_tests.helpers import episode, write_jsonl  # noqa: E402
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer  # noqa: E402


class Tally:
    def __init__(self, name: str):
        self.name = name
        self.cases = 0
        self.failing = 0
        self.examples: list[str] = []

    def record(self, problems: list[str]) -> None:
        self.cases += 1
        if problems:
            self.failing += 1
            if len(self.examples) < 3:
                self.examples.append("\n".join(problems)[:1500])


def run(cases: int, seed_value: int, work: Path, db_url: str, server_url: str) -> list[Tally]:
    env = {
        "MEMORY_PIPELINE_DATABASE_URL": db_url,
        "MEMORY_PIPELINE_HOME": str(work / "home"),
        "MEMORY_PIPELINE_EMBED_PROVIDER": "ollama",
        "OLLAMA_HOST": server_url,
    }
    world = write_jsonl(
        work / "world.jsonl",
        [
            episode(i, memory=hostile.MEMORIES[i % 2], words="garden bicycle dentist Ana")
            for i in range(6)
        ],
    )
    for argv in (["ingest", str(world)], ["index"]):
        outcome = hostile.run_main(argv, env)
        if outcome.code != 0:
            raise SystemExit(f"could not set up the two memories: {outcome.err}{outcome.crash}")
    memories = hostile.memory_episodes(db_url, list(hostile.MEMORIES))

    options = settings(
        max_examples=cases,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    files, batches, queries = Tally("ingest files"), Tally("search --batch files"), Tally("queries")

    @seed(seed_value)
    @options
    @given(case=hostile.ingest_cases())
    def ingest(case):
        files.record(hostile.check_ingest(case, work / uuid.uuid4().hex, db_url, env))

    @seed(seed_value)
    @options
    @given(lines=hostile.batch_lines())
    def batch(lines):
        batches.record(hostile.check_batch(lines, work / "batch.jsonl", memories, env))

    @seed(seed_value)
    @options
    @given(query=hostile.queries, memory=st.sampled_from(hostile.MEMORIES))
    def query(query, memory):
        queries.record(hostile.check_query(query, memory, memories, env))

    for check, tally in ((ingest, files), (batch, batches), (query, queries)):
        started = time.perf_counter()
        check()
        print(
            f"{tally.name}: {tally.cases} cases, {tally.failing} failing "
            f"({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
    return [files, batches, queries]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", type=int, default=300, help="cases of each generator (default 300)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    databases = Databases(prefix="mp_fuzz_")
    work = Path(tempfile.mkdtemp(prefix="mp-fuzz-"))
    started = time.perf_counter()
    try:
        with LoopbackEmbeddingServer(dim=1024) as server:
            print(
                f"database: {databases.where}; seed {args.seed}; {args.cases} cases each",
                flush=True,
            )
            tallies = run(args.cases, args.seed, work, databases.fresh(), server.url)
    finally:
        databases.close()
        shutil.rmtree(work, ignore_errors=True)
    total = sum(t.cases for t in tallies)
    failing = sum(t.failing for t in tallies)
    print(f"total: {total} cases, {failing} failing, {time.perf_counter() - started:.0f} s")
    for tally in tallies:
        for example in tally.examples:
            print(f"--- a failing {tally.name} case:\n{example}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "seed": args.seed,
                    "cases": {t.name: t.cases for t in tallies},
                    "failing": {t.name: t.failing for t in tallies},
                    "examples": {t.name: t.examples for t in tallies},
                },
                indent=2,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
    sys.exit(1 if failing else 0)


if __name__ == "__main__":
    main()
