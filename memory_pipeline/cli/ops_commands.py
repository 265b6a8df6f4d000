"""``memory-pipeline reindex``, ``backfill`` and ``maintain``: model changes, re-runs of days, and
rebuilding the keyword champion lists."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time

from memory_pipeline.cli.arguments import iso_date, switch
from memory_pipeline.cli.common import err, open_memory, print_json
from memory_pipeline.cli.progress import ProgressDisplay
from memory_pipeline.errors import ExitCode, InputError
from memory_pipeline.memory import KEYWORD_LIST_CAP
from memory_pipeline.progress import Progress


def reindex_options(p: argparse.ArgumentParser) -> None:
    switch(p, "--no-wait", "only start it; the sensor or a backfill builds it")
    switch(p, "--rollback", "serve the previous generation again")
    switch(
        p,
        "--accept-worse",
        "switch to the new generation even if it scores worse on the labelled questions",
    )


def cmd_reindex(args) -> int:
    with open_memory(record_in_dagster=False) as mem:
        if args.rollback:
            print(mem.models.rollback_to_served_model())
            return ExitCode.OK
        started = mem.models.reindex()
        for stale, reason in started.left_stale:
            err(
                f"memory-pipeline: generation {stale} was begun by another model than the "
                f"one served now ({reason}); it stays stale and is never served"
            )
        stored, resumed = started.stored, started.resumed
        generation = stored.building_generation
        print(
            f"{'resuming' if resumed else 'started'} generation {generation} of {stored.name}; "
            "search keeps serving the current vectors until it is complete"
        )
        if args.no_wait:
            print(
                "the unindexed_episodes sensor (or a backfill of index_day_job) builds it; "
                "search switches when nothing is pending"
            )
            return ExitCode.OK
        guard = mem.switch_guard(accept_worse=args.accept_worse)
        with ProgressDisplay() as show:
            report = mem.models.build(on_progress=show, guard=guard)
    print(
        f"embedded {report.vectors} vector(s) for {report.episodes} episode(s) in {report.seconds:.1f}s"
    )
    if guard.verdict is not None and guard.verdict.blocked:
        err(f"memory-pipeline: {guard.verdict.message}")
        return ExitCode.MODEL_REFUSED
    print(
        report.switched
        or f"{report.pending_after} episode(s) still pending; search has not switched yet"
    )
    if guard.verdict is not None:
        print(f"quality guard: {guard.verdict.message}")
    return ExitCode.OK


def _days(start: dt.date, end: dt.date) -> list[str]:
    if end < start:
        raise InputError(f"--to {end} is before --from {start}")
    if (end - start).days > 3660:
        raise InputError("a backfill covers at most ten years of days")
    return [(start + dt.timedelta(days=i)).isoformat() for i in range((end - start).days + 1)]


def dagster_ui(args) -> str | None:
    """The web server to link to: --dagster-url, else MEMORY_PIPELINE_DAGSTER_UI; None: unknown."""
    url = getattr(args, "dagster_url", None) or os.environ.get("MEMORY_PIPELINE_DAGSTER_UI", "")
    return url.strip().rstrip("/") or None


def backfill_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="start", type=iso_date, required=True, metavar="YYYY-MM-DD")
    p.add_argument("--to", dest="end", type=iso_date, required=True, metavar="YYYY-MM-DD")
    switch(
        p,
        "--rechunk",
        "each day's run deletes and recomputes its chunks first (search keeps the present ones until then)",
    )
    switch(p, "--no-wait", "submit it and return (follow it on the Backfills page)")
    p.add_argument(
        "--dagster-url",
        metavar="URL",
        help="the Dagster web server to link to (default MEMORY_PIPELINE_DAGSTER_UI; none needed)",
    )


def cmd_backfill(args) -> int:
    """Submit a Dagster backfill of index_day_job over the range's ingest days that hold episodes
    to the instance, for the daemon to run (no web server needed: ``orchestration.backfills``);
    wait for its runs unless --no-wait or no daemon runs yet."""
    from memory_pipeline.orchestration import backfills
    from memory_pipeline.orchestration.assets import RECHUNK_TAG
    from memory_pipeline.orchestration.instance import add_partitions, open_instance

    days = _days(args.start, args.end)
    with open_memory(record_in_dagster=False) as mem:
        held = mem.days.holding_episodes()
    holding = [d for d in held if args.start.isoformat() <= d <= args.end.isoformat()]
    if not holding:
        print(f"no ingest day from {args.start} to {args.end} holds episodes: nothing to backfill")
        return ExitCode.OK
    instance = open_instance()
    try:
        add_partitions(instance, holding)
        tags = {"memory_pipeline/trigger": "memory-pipeline backfill"}
        if args.rechunk:
            # Cut again inside each day's run, not here: deleted now, a day would be out of
            # search until a daemon ran it, which may be never.
            tags[RECHUNK_TAG] = "true"
        backfill_id = backfills.submit(instance, "index_day_job", holding, tags)
        empty = len(days) - len(holding)
        ui = dagster_ui(args)
        where = (
            f"{ui}/runs/b/{backfill_id}"
            if ui
            else "in Dagster's UI (`memory-pipeline ui`): Backfills, or /runs/b/" + backfill_id
        )
        print(
            f"backfill {backfill_id}: index_day_job over {len(holding)} day(s) that hold episodes"
            + (f" ({empty} day(s) in the range received nothing)" if empty else "")
            + f"; {where}",
            flush=True,
        )
        if args.rechunk:
            print(
                "each day's run deletes and cuts its chunks again (vectors are kept and reused "
                "by content); until it runs, search answers from the present chunks"
            )
        if not backfills.daemon_running(instance):
            print(
                "no Dagster daemon runs on this instance now: the backfill starts when one does "
                "(`memory-pipeline ui`, `dagster dev` or `dagster-daemon run`)"
            )
            return ExitCode.OK
        if args.no_wait:
            return ExitCode.OK
        return _wait_for_backfill(instance, backfill_id, holding)
    finally:
        instance.dispose()


def _wait_for_backfill(instance, backfill_id: str, holding: list[str]) -> int:
    from memory_pipeline.orchestration import backfills
    from memory_pipeline.orchestration.backfills import TERMINAL_RUN

    started = time.monotonic()
    reported: set[str] = set()
    with ProgressDisplay() as show:

        def progress(state) -> None:
            for day, status in sorted(state.runs.items()):
                if status in TERMINAL_RUN and day not in reported:
                    reported.add(day)
                    print(f"{day}: {status.lower()}", flush=True)
            show(Progress("backfill", len(reported), len(holding), "days"))

        try:
            state = backfills.wait(instance, backfill_id, holding, on_change=progress)
        except KeyboardInterrupt:
            backfills.cancel(instance, backfill_id)
            show.close()
            err(f"memory-pipeline: interrupted; backfill {backfill_id} cancelled")
            return 130
    failed = sorted(d for d, s in state.runs.items() if s != "SUCCESS")
    print(
        f"backfill {backfill_id} {state.status.lower()}: {state.count('SUCCESS')} of {len(holding)} day(s) "
        f"succeeded in {time.monotonic() - started:.1f}s"
    )
    if state.status == "CANCELED":  # a CANCELING backfill is not finished: wait() goes on
        err(
            f"memory-pipeline: backfill {backfill_id} was cancelled (in the UI or through its API); "
            f"{len(failed)} day(s) not done: {', '.join(failed) or 'none'}"
        )
        return ExitCode.BACKFILL_CANCELED
    if failed:
        err(
            f"memory-pipeline: {len(failed)} day(s) did not succeed: {', '.join(failed)} (see the backfill in the UI)"
        )
        return ExitCode.RUNS_FAILED
    return ExitCode.OK


def keyword_list_lines(builds) -> list[tuple[str, bool]]:
    """(line, is_warning) per rebuild of a memory's keyword champion lists."""
    lines = []
    for b in builds:
        if b.outcome == "built":
            lines.append(
                (
                    f"keyword lists of {b.memory}: {b.lists} lists, {b.rows} rows, rebuilt in {b.seconds:.1f}s; "
                    f"its writers waited at most {b.lock_seconds:.2f}s (the swap)",
                    False,
                )
            )
        elif b.outcome == "busy":
            lines.append(
                (f"keyword lists of {b.memory}: another process is rebuilding them; skipped", True)
            )
        elif b.outcome == "locked":
            lines.append(
                (
                    f"keyword lists of {b.memory}: not rebuilt, deletions kept their rows locked through "
                    f"{b.attempts} attempts; the current lists stay right, run maintain again",
                    True,
                )
            )
        else:  # gone
            lines.append(
                (
                    f"keyword lists of {b.memory}: the memory has no chunks any more; lists dropped",
                    False,
                )
            )
    return lines


def maintain_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--memory", help="only this memory (default: every memory of more than 500 chunks)"
    )
    switch(
        p,
        "--stale-only",
        "only lists that are missing or stale (what index builds beside its pass)",
    )
    switch(p, "--json", "print a JSON report")


def cmd_maintain(args) -> int:
    """Rebuild the keyword champion lists (``Memory.rebuild_keyword_lists``)."""
    with open_memory() as mem:
        builds = mem.rebuild_keyword_lists(memory=args.memory, stale_only=args.stale_only)
    if args.json:
        print_json({"keywordLists": [b.to_json() for b in builds]})
        return ExitCode.OK
    for line, warning in keyword_list_lines(builds):
        (err if warning else print)(("memory-pipeline: warning: " if warning else "") + line)
    if not builds:
        print(
            f"nothing to rebuild: {f'memory {args.memory!r} does not have' if args.memory else 'no memory has'} "
            f"more than {KEYWORD_LIST_CAP} chunks{' and missing or stale lists' if args.stale_only else ''} "
            "(a smaller memory's keyword queries are exact, without lists)"
        )
    return ExitCode.OK
