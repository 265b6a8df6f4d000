#!/usr/bin/env python
"""A million chunks, built the way users build them: ingest, index through a loopback model
server, HNSW build; then search latency per channel and fused, HNSW recall@10, the sizes of
tables and indexes, and the peak memory of every process.

1. Corpus: ``generated_text``'s text (its ``iter_corpus``: Zipf English-like
   prose, chats of short turns, recurring names, common work words and rare real words), written
   episode by episode to a JSONL file until it holds ``--chunks`` chunks (as ``chunk_body`` cuts
   them); nothing holds the corpus in memory.
2. ``memory-pipeline ingest FILE`` and ``memory-pipeline index --json`` as subprocesses, against a
   fresh database (``bench_databases``) and ``model_server.py --vectors words --latency-ms 0
   --slots 0`` in its own process (OpenAI wire format; structured vectors: each text the
   normalized sum of fixed random vectors of its words; the server answers at once, so the
   pipeline, not a model, is measured).
3. Nothing else: ``index`` leaves the HNSW index, the keyword lists and the planner's statistics
   (its ``searchReady`` report is kept), as a user has them.
4. Search: ``generated_text.time_rows`` (each channel alone, the fused default, the raw
   vector SQL; no reranker, limit 8, 20 warm-up queries) over the hand-written queries
   (``data/search_queries.txt``), the query embedded by the same model server over HTTP; and
   ``generated_text.vector_recall`` (recall@10 against an exact scan, ``--recall-queries``
   of the queries: each exact scan reads every vector).
5. Sizes: every table and index of the database (``pg_relation_size``), largest first.
6. Peak memory: this process (``ru_maxrss``), each CLI subprocess (``ru_maxrss`` from
   ``wait4``), the model server and each PostgreSQL process (``VmHWM`` and the largest
   ``RssAnon``, sampled every 0.5 s from ``/proc``; a backend's VmHWM counts the shared buffers it
   touched, RssAnon only its own memory). Backends are only visible for the embedded server.

    python benchmarks/bench_million.py --chunks 2000          # a check that it all runs (~2 min)
    python benchmarks/bench_million.py --chunks 100000 --json m100k.json
    python benchmarks/bench_million.py --json million.json    # 1,000,000 chunks (hours on 2 cores)
    python benchmarks/bench_million.py --dim 128 --json million.json   # smaller vectors

``--dim`` sets the model server's (and the profile's) vector dimension (default 384). The figures
so far are written to ``--json`` after every step, so a run stopped part way keeps what it
measured; SIGTERM stops its PostgreSQL and model server as a normal exit does.

``--keep DIR`` keeps the corpus, the database (an embedded server in ``DIR/pg``) and the figures
(``DIR/figures.json``) in DIR, and a later run with the same DIR and arguments resumes: steps that
finished are skipped with their figures kept, an unfinished ``ingest`` or ``index`` is run again
(ingest counts what is already stored as duplicates; index takes up what is still pending). At a
million chunks the build takes hours on 2 cores; this is how it survives a stop.

    python benchmarks/bench_million.py --dim 128 --keep ~/million   # rerun the same to resume

``--search-only`` (with ``--keep``) runs only steps 4-6 on a kept database whose build finished,
with the current code (migrations new since are applied first), and refuses to build anything;
``--json`` elsewhere (a copy of ``DIR/figures.json``) keeps the earlier figures as they were.

    cp ~/million/figures.json s5.json
    python benchmarks/bench_million.py --dim 128 --keep ~/million --search-only --json s5.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_databases import Databases  # sibling modules (benchmarks/)
from bench_index_server import ServerProcess
from generated_text import (
    MEMORY,
    QUERY_FILE,
    TextGenerator,
    iter_corpus,
    load_queries,
    print_recall,
    time_rows,
    vector_recall,
)

from memory_pipeline.domain.policies import default_policies_path, load_policies
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.openai_compat import OpenAICompatibleEmbedder
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm
from memory_pipeline.storage.profiles_store import active_profile

DIM = 384
MODEL = "structured"
SAMPLE_S = 0.5


def write_corpus(path: Path, chunks: int, seed: int) -> dict:
    """The generated episodes as JSONL, streamed; returns episode and chunk counts."""
    episodes = written = 0
    with path.open("w", encoding="utf-8") as out:
        for e in iter_corpus(TextGenerator(seed), chunks, seed):
            out.write(
                json.dumps(
                    {
                        "memory": MEMORY,
                        "kind": e.kind,
                        "title": e.title,
                        "occurred_at": e.occurred_at.isoformat(),
                        "salience": e.salience,
                        "body": e.body,
                    }
                )
                + "\n"
            )
            episodes += 1
            written += len(e.chunks)
    return {"episodes": episodes, "chunks": written, "bytes": path.stat().st_size}


def _status(pid: int) -> dict[str, int]:
    """VmHWM and RssAnon of a process in KiB (empty when it is gone)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssAnon"):
                out[key] = int(value.split()[0])
    except (OSError, ValueError):
        return {}
    return out


def _children(parent: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces, so split after its closing paren.
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                pids.append(int(entry.name))
    return pids


class PeakMemory:
    """Samples named processes (and the postmaster's children) every SAMPLE_S seconds, keeping
    each one's highest VmHWM and RssAnon."""

    def __init__(self, postmaster: int | None):
        self.postmaster = postmaster
        self.named: dict[str, int] = {}
        self.peaks: dict[tuple[str, int], dict[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)

    def watch(self, name: str, pid: int) -> None:
        self.named[name] = pid

    def _sample(self) -> None:
        targets = [(name, pid) for name, pid in list(self.named.items())]
        if self.postmaster is not None:
            targets.append(("postgres postmaster", self.postmaster))
            targets += [("postgres backend", pid) for pid in _children(self.postmaster)]
        for name, pid in targets:
            got = _status(pid)
            if got:
                peak = self.peaks.setdefault((name, pid), {"VmHWM": 0, "RssAnon": 0})
                for key, value in got.items():
                    peak[key] = max(peak[key], value)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._sample()
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, dict]:
        """Per name: processes seen, the largest VmHWM and RssAnon of one of them, in MiB."""
        out: dict[str, dict] = {}
        for (name, _pid), peak in self.peaks.items():
            row = out.setdefault(
                name, {"processes": 0, "max_hwm_mib": 0.0, "max_rss_anon_mib": 0.0}
            )
            row["processes"] += 1
            row["max_hwm_mib"] = max(row["max_hwm_mib"], peak["VmHWM"] / 1024)
            row["max_rss_anon_mib"] = max(row["max_rss_anon_mib"], peak["RssAnon"] / 1024)
        return out


def run_cli(args: list[str], env: dict[str, str], peaks: PeakMemory) -> tuple[float, str, float]:
    """(seconds, stdout, peak RSS in MiB) of one ``memory-pipeline`` command."""
    exe = Path(sys.executable).with_name("memory-pipeline")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(exe), *args], env=env, stdout=out, stderr=err)
        peaks.watch(f"memory-pipeline {args[0]}", proc.pid)
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(
            f"memory-pipeline {' '.join(args)} exited {proc.returncode}:\n{stderr[-2000:]}"
        )
    return seconds, stdout, usage.ru_maxrss / 1024


def relation_sizes(conn) -> list[dict]:
    rows = conn.execute(
        "SELECT c.relname, c.relkind, pg_relation_size(c.oid), pg_total_relation_size(c.oid) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') ORDER BY 3 DESC"
    ).fetchall()
    return [
        {
            "name": name,
            "kind": "table" if kind == "r" else "index",
            "mib": size / 2**20,
            "total_mib": total / 2**20,
        }
        for name, kind, size, total in rows
        if size > 0
    ]


def save(path: Path | None, figures: dict) -> None:
    """The figures so far: a run stopped part way still leaves what it measured."""
    if path is not None:
        path.write_text(json.dumps(figures, indent=2, default=str) + "\n", encoding="utf-8")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--chunks", type=int, default=1_000_000)
    p.add_argument(
        "--queries", type=int, default=0, help="timed queries: the first N of --query-file (0: all)"
    )
    p.add_argument("--query-file", default=str(QUERY_FILE))
    p.add_argument(
        "--recall-queries",
        type=int,
        default=30,
        help="queries whose recall@10 is checked by an exact scan",
    )
    p.add_argument("--ef-search", type=int, default=100)
    p.add_argument(
        "--dim", type=int, default=DIM, help="embedding dimension of the model server's vectors"
    )
    p.add_argument(
        "--parallel", type=int, default=4, help="MEMORY_PIPELINE_EMBED_PARALLEL for the index pass"
    )
    p.add_argument("--batch", type=int, default=16, help="MEMORY_PIPELINE_EMBED_BATCH")
    p.add_argument("--seed", type=int, default=20240115)
    p.add_argument("--json", type=Path, help="figures file (default with --keep: DIR/figures.json)")
    p.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep corpus, database and figures in DIR; rerunning with the same DIR resumes",
    )
    p.add_argument(
        "--search-only",
        action="store_true",
        help="with --keep: only the search, recall and size steps, with the current code, on the kept "
        "database; refused unless every build step finished there (nothing is built)",
    )
    args = p.parse_args(argv)
    if args.chunks < 100 or args.recall_queries < 1:
        p.error("--chunks must be at least 100 and --recall-queries at least 1")
    if args.keep is not None:
        args.keep = args.keep.expanduser().resolve()
        if args.keep.exists() and not args.keep.is_dir():
            p.error(f"--keep {args.keep}: not a folder")
        args.json = args.json or args.keep / "figures.json"
    elif args.search_only:
        p.error("--search-only needs --keep DIR")
    return args


BUILD_STEPS = ("ingest", "index", "hnsw", "entities", "analyze")


RESUMED_ARGS = (
    "chunks",
    "dim",
    "batch",
    "seed",
)  # what the kept corpus and database were built with


def resumed_figures(args: argparse.Namespace) -> dict:
    """The figures of an earlier run kept in ``args.keep`` (empty when there is none), after
    checking it was built with the same arguments."""
    if args.keep is None or not args.json.exists():
        return {}
    figures = json.loads(args.json.read_text(encoding="utf-8"))
    for name in RESUMED_ARGS:
        before = figures.get("args", {}).get(name)
        if before is not None and before != str(getattr(args, name)):
            raise SystemExit(
                f"--keep {args.keep}: built with --{name} {before}, not {getattr(args, name)}; "
                f"use another folder or the same arguments"
            )
    return figures


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    exit_cleanly_on_sigterm()  # a stopped run still stops its PostgreSQL and model server
    started = time.perf_counter()
    figures = resumed_figures(args)
    resuming = bool(figures)
    steps: dict[str, dict] = figures.setdefault("steps", {})
    if args.search_only and (
        "corpus" not in figures or any(step not in steps for step in BUILD_STEPS)
    ):
        raise SystemExit(
            f"--search-only: {args.json} does not record a finished build (corpus and "
            f"{', '.join(BUILD_STEPS)}); run without --search-only to build or resume"
        )
    if resuming:
        print(
            f"resuming {args.keep}: done before: {', '.join(['corpus'] * ('corpus' in figures) + list(steps))}",
            flush=True,
        )
    figures["runs"] = run = (
        figures.get("runs", 0) + 1
    )  # each step says in which run it was measured
    figures.update(
        when=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        args={k: str(v) for k, v in vars(args).items()},
        cpus=os.cpu_count(),
    )
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    dbs = Databases(prefix="mp_million_", home=args.keep / "pg" if args.keep else None)
    db = None
    postmaster = dbs.server_pid
    try:
        with (
            PeakMemory(postmaster) as peaks,
            tempfile.TemporaryDirectory(prefix="mp_million_") as tmp,
            ServerProcess(
                slots=0, latency_ms=0, batch=args.batch, dim=args.dim, vectors="words"
            ) as server,
        ):
            peaks.watch("benchmark", os.getpid())
            peaks.watch("model server", server.proc.pid)
            url = dbs.kept("million") if args.keep else dbs.fresh()
            data = (args.keep or Path(tmp)) / "episodes.jsonl"
            if "corpus" not in figures:
                t0 = time.perf_counter()
                corpus = write_corpus(data, args.chunks, args.seed)
                corpus["write_s"] = time.perf_counter() - t0
                figures["corpus"] = {**corpus, "run": run}
                save(args.json, figures)
            corpus = figures["corpus"]
            print(
                f"corpus: {corpus['episodes']:,} episodes, {corpus['chunks']:,} chunks, "
                f"{corpus['bytes'] / 2**20:,.0f} MiB of JSONL, written in {corpus['write_s']:.0f} s",
                flush=True,
            )
            env = {
                **os.environ,
                "MEMORY_PIPELINE_DATABASE_URL": url,
                "MEMORY_PIPELINE_EMBED_PROVIDER": "openai",
                "MEMORY_PIPELINE_EMBED_URL": server.url,
                "MEMORY_PIPELINE_EMBED_MODEL": MODEL,
                "MEMORY_PIPELINE_EMBED_DIM": str(args.dim),
                "MEMORY_PIPELINE_EMBED_BATCH": str(args.batch),
                "MEMORY_PIPELINE_EMBED_PARALLEL": str(args.parallel),
            }
            if "ingest" not in steps:
                seconds, _, rss = run_cli(["ingest", str(data)], env, peaks)
                steps["ingest"] = {"run": run, "s": seconds, "peak_rss_mib": rss}
                save(args.json, figures)
            seconds, rss = steps["ingest"]["s"], steps["ingest"]["peak_rss_mib"]
            print(
                f"ingest: {seconds:.0f} s ({corpus['episodes'] / seconds:,.0f} episodes/s), peak RSS {rss:.0f} MiB",
                flush=True,
            )
            if "index" not in steps:
                seconds, out, rss = run_cli(["index", "--json"], env, peaks)
                report = json.loads(out)
                steps["index"] = {
                    "run": run,
                    "s": seconds,
                    "peak_rss_mib": rss,
                    "chunks": report["chunks"],
                    "pending_after": report["pendingEpisodes"],
                    # What index left for search: its HNSW build, keyword lists and ANALYZE.
                    "search_ready": report.get("searchReady"),
                }
                save(args.json, figures)
            index = steps["index"]
            print(
                f"index: {index['chunks']:,} chunks in {index['s']:.0f} s ({index['chunks'] / index['s']:,.0f} "
                f"chunks/s wall), peak RSS {index['peak_rss_mib']:.0f} MiB, pending after: {index['pending_after']}",
                flush=True,
            )
            # Nothing is built here: a user runs nothing after index.
            print(f"search ready after index: {index.get('search_ready')}", flush=True)
            db = Database.open(url)
            with db.connection() as conn:
                profile = active_profile(conn)
            spec = EmbeddingProfile(profile.provider, profile.model, profile.dim)
            embedder = OpenAICompatibleEmbedder(spec, server.url)
            service = SearchService(
                db,
                load_policies(default_policies_path()),
                embedder=embedder,
                reranker=None,
                record=False,
            )
            queries = load_queries(Path(args.query_file), args.queries)
            print(
                f"\n== Latency, {len(queries)} hand-written queries after 20 warm-up, limit 8, no reranker"
            )
            lat = time_rows(db, service, profile, queries, embedder, args.ef_search)
            meta = lat.pop("_meta")
            print(f"  {'row':<26}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}{'max ms':>9}")
            for name, r in lat.items():
                print(
                    f"  {name:<26}{r['p50_ms']:9.1f}{r['p95_ms']:9.1f}{r['mean_ms']:9.1f}{r['max_ms']:9.1f}"
                )
            figures["latency"] = lat
            save(args.json, figures)
            figures["keyword_methods"] = meta["keyword_methods"]
            print(
                f"\n== HNSW recall@10 vs exact scan, {min(args.recall_queries, len(queries))} queries"
            )
            efs = sorted({args.ef_search, 200})
            rec = vector_recall(
                db, profile, embedder, queries[: args.recall_queries], efs, show_plans=False
            )
            print_recall(rec, efs, args.ef_search)
            figures["recall"] = {k: v for k, v in rec.items() if not k.startswith("explain")}
            with db.connection() as conn:
                sizes = relation_sizes(conn)
                database_mib = (
                    conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
                    / 2**20
                )
            print(f"\n== Sizes (database {database_mib:,.0f} MiB), largest first")
            for r in sizes[:16]:
                print(f"  {r['kind']:<6}{r['name']:<44}{r['mib']:10,.1f} MiB")
            figures["sizes"] = {"database_mib": database_mib, "relations": sizes}
        figures["peak_memory"] = {
            **peaks.summary(),
            "benchmark ru_maxrss": {
                "max_hwm_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            },
        }
        print(
            "\n== Peak memory (MiB; VmHWM counts shared buffers a backend touched, RssAnon its own memory)"
        )
        for name, row in sorted(figures["peak_memory"].items()):
            print(
                f"  {name:<28} processes {row.get('processes', 1):>4}  max VmHWM {row['max_hwm_mib']:8.0f}"
                f"  max RssAnon {row.get('max_rss_anon_mib', float('nan')):8.0f}"
            )
    finally:
        if db is not None:
            db.close()
        dbs.close()
    figures["total_s"] = time.perf_counter() - started
    print(f"\ntotal {figures['total_s']:.0f} s")
    save(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
