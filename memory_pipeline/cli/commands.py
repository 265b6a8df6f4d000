"""``memory-pipeline index`` and ``demo`` (the sample corpus through the Dagster jobs), with the
sample corpus's paths that tests and benchmarks share."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from memory_pipeline import config
from memory_pipeline.cli.arguments import iso_date, switch
from memory_pipeline.cli.common import err, open_memory, print_json, print_warnings
from memory_pipeline.cli.ops_commands import keyword_list_lines
from memory_pipeline.cli.progress import ProgressDisplay
from memory_pipeline.errors import ExitCode

SAMPLE_CORPUS = Path(__file__).resolve().parents[1] / "sample_corpus"
# The corpus's episodes; beside them live its README, the demo's queries and the labelled
# questions, which are about the corpus, not part of it.
SAMPLE_MEMORY = "mara"
SAMPLE_EPISODES = [
    SAMPLE_CORPUS / "journal.jsonl",
    SAMPLE_CORPUS / "chats.jsonl",
    SAMPLE_CORPUS / "notes",
]


# -- index ----------------------------------------------------------------------------------
def index_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--day", type=iso_date, help="only episodes ingested on this UTC day (YYYY-MM-DD)"
    )
    switch(
        p,
        "--no-keyword-lists",
        "do not build keyword champion lists that are missing or stale (built beside the pass by default)",
    )
    switch(
        p,
        "--accept-worse",
        "switch to the new generation even if it scores worse on the labelled questions",
    )
    switch(p, "--json", "print a JSON report")


def cmd_index(args) -> int:
    from memory_pipeline.orchestration.reporting import DagsterReporter

    reporter = DagsterReporter()
    with open_memory(reporter) as mem, ProgressDisplay() as show:
        announce_long_index(mem, args.day)
        # Importing Dagster and setting up its storage take seconds: they overlap the pass,
        # whose finished days the reporter records at its end.
        reporter.open_meanwhile()
        # The entity_mentions work too (in a worker process beside the pass), so the days' three
        # partitions recorded are all true; and, where users only run the CLI, this is where a
        # memory's keyword lists get built (beside the pass's last part).
        report = mem.index(
            day=args.day,
            on_progress=show,
            keyword_lists=not args.no_keyword_lists,
            accept_worse=args.accept_worse,
        )
        show.close()
        builds = report.keyword_lists
        print_warnings(mem)
    if args.json:
        print_json(report.to_json())
    else:
        print(
            f"indexed {report.episodes} episode(s): {report.chunks} new chunk(s), {report.vectors} "
            f"vector(s) (+{report.windows} paragraph-window vectors) with {report.profile} in {report.seconds:.1f}s; "
            f"{report.pending_after} episode(s) still pending"
        )
        for line, warning in keyword_list_lines(builds):
            (err if warning else print)(("memory-pipeline: warning: " if warning else "") + line)
        ready = search_ready_line(report.search_ready)
        if ready:
            print(ready)
    return guard_outcome(report.quality_guard)


def guard_outcome(verdict: dict | None) -> int:
    """The quality guard's word on a switch (``search.quality_guard``): a refused switch is
    said on stderr and exits MODEL_REFUSED; the rest is said on stdout."""
    if verdict is None:
        return ExitCode.OK
    if verdict["blocked"]:
        err(f"memory-pipeline: {verdict['message']}")
        return ExitCode.MODEL_REFUSED
    print(f"quality guard: {verdict['message']}")
    return ExitCode.OK


def announce_long_index(mem, day: dt.date | None) -> None:
    """Before a backlog that takes long, how long (stderr), from the profile's measured speed."""
    ahead = mem.index_estimate(day)
    if ahead is not None and ahead.long:
        err(
            f"memory-pipeline: {ahead.characters:,} characters to index: {ahead.phrase()} "
            "(Ctrl-C stops it; what is done stays done)"
        )


def search_ready_line(ready) -> str | None:
    """What ``index`` left for search, when it did something about it (``indexing.serving``)."""
    state = ready.index if ready else None
    if state is None or state.outcome == "present":
        return None
    if state.outcome == "built":
        return (
            f"hnsw index {state.name}: built over {state.rows or 0:,} vectors in "
            f"{state.build_seconds or 0.0:.1f}s (search answered meanwhile)"
        )
    if state.outcome == "busy":
        return f"hnsw index {state.name}: another process is building it (status shows how far)"
    return None


# -- demo -----------------------------------------------------------------------------------
def cmd_demo(args) -> int:
    """Ingest the sample corpus, then run the named jobs a deployment runs: the day's
    index_day_job partition (with its checks) and nightly_maintenance_job (entities, the serving
    generation, statement vectors, the HNSW index, statistics, with their checks), recorded in
    Dagster's instance."""
    from memory_pipeline.definitions import load
    from memory_pipeline.orchestration.instance import add_partitions, open_instance
    from memory_pipeline.orchestration.progress import watching

    with open_memory() as mem:
        print(f"memory_pipeline demo: home {config.home_dir()}")
        report = mem.demo.ingest(SAMPLE_EPISODES)
        for rejection in report.rejections:
            err(str(rejection))
        print(f"ingest: {report.summary()}")
        _demo_questions(mem)
        instance = open_instance()
        day = report.ingest_day.isoformat()
        add_partitions(instance, [day])
        defs = load()
        quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
        steps = (
            (
                "index_day_job",
                day,
                f"index_day_job, partition {day} (episodes -> chunks -> embeddings, "
                "entity_mentions): the bundled model embeds each chunk and its paragraph "
                "windows, a few a second",
            ),
            (
                "nightly_maintenance_job",
                None,
                "nightly_maintenance_job (entities, keyword lists, statement vectors, the "
                "serving generation, the HNSW index, statistics, retrieval quality)",
            ),
        )
        try:
            for job, partition, what in steps:
                print(what, "...", flush=True)
                with ProgressDisplay() as show, watching(show):
                    result = defs.resolve_job_def(job).execute_in_process(
                        instance=instance,
                        partition_key=partition,
                        run_config=quiet,
                        raise_on_error=False,
                        tags={"memory_pipeline/trigger": "memory-pipeline demo"},
                    )
                _print_run(job, result)
                if not result.success:
                    err(f"memory-pipeline: {job} failed; see run {result.run_id} in the UI")
                    return ExitCode.FAILURE
        finally:
            instance.dispose()
        _demo_searches(mem)
    print("\nNext: `memory-pipeline ui` opens Dagster's web UI on this data.")
    return ExitCode.OK


def _print_run(job: str, result) -> None:
    for event in result.get_asset_materialization_events():
        meta = event.materialization.metadata
        rows = meta["dagster/row_count"].value if "dagster/row_count" in meta else "?"
        seconds = f" ({meta['wall_seconds'].value} s)" if "wall_seconds" in meta else ""
        print(f"  {event.asset_key.to_user_string()}: {rows} rows{seconds}")
    checks = [
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    passed = sum(1 for c in checks if c.passed)
    print(
        f"{job}: {'success' if result.success else 'FAILED'}, {passed} of {len(checks)} check(s) passed"
    )


def _demo_questions(mem) -> None:
    """The corpus's labelled questions, which the nightly job's ``retrieval_quality`` scores."""
    report = mem.add_questions(
        mem.demo.questions(SAMPLE_CORPUS / "questions.json"), memory=SAMPLE_MEMORY, author="demo"
    )
    for rejection in report.rejections:
        err(str(rejection))
    print(f"questions: {len(report.saved_ids)} labelled question(s) for memory '{SAMPLE_MEMORY}'")


def _demo_searches(mem) -> None:
    queries = json.loads((SAMPLE_CORPUS / "demo_queries.json").read_text(encoding="utf-8"))
    mem.demo.print_searches(queries)
