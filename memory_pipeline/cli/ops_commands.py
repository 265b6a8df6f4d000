"""``memory-pipeline reindex`` and ``memory-pipeline backfill``: model changes and re-runs of days."""

from __future__ import annotations

import datetime as dt

from memory_pipeline import config, indexing
from memory_pipeline.cli.common import err, open_database
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.errors import ExitCode, InputError
from memory_pipeline.storage import index_store, profiles_store


def cmd_reindex(args) -> int:
    db = open_database()
    if args.rollback:
        with db.connection() as conn:
            try:
                message = profiles_store.rollback(conn)
            except LookupError as exc:
                raise InputError(str(exc)) from None
        print(message)
        return ExitCode.OK
    embedder = build_embedder(config.EmbedSettings.from_env())
    try:
        with db.connection() as conn:
            stored, resumed = profiles_store.start_reindex(conn, embedder.profile)
        generation = stored.building_generation
        print(f"{'resuming' if resumed else 'started'} generation {generation} of {stored.name}; "
              "search keeps serving the current vectors until it is complete")
        if args.no_wait:
            print("the unindexed_episodes sensor (or a backfill of index_day_job) builds it; "
                  "search switches when nothing is pending")
            return ExitCode.OK
        report = indexing.index_until_done(db, embedder, on_progress=lambda r: None)
    finally:
        embedder.close()
    print(f"embedded {report.vectors} vector(s) for {report.episodes} episode(s) in {report.seconds:.1f}s")
    print(report.switched or f"{report.pending_after} episode(s) still pending; search has not switched yet")
    return ExitCode.OK


def _days(start: dt.date, end: dt.date) -> list[str]:
    if end < start:
        raise InputError(f"--to {end} is before --from {start}")
    if (end - start).days > 3660:
        raise InputError("a backfill covers at most ten years of days")
    return [(start + dt.timedelta(days=i)).isoformat() for i in range((end - start).days + 1)]


def cmd_backfill(args) -> int:
    """Re-run index_day_job for each day in a range, recorded in Dagster's instance (the UI shows it)."""
    import dagster as dg

    from memory_pipeline.defs.assets import chunks, embeddings, entity_mentions, episodes
    from memory_pipeline.defs.instance import open_instance
    from memory_pipeline.defs.partitions import ingest_days
    from memory_pipeline.defs.resources import default_resources

    days = _days(args.start, args.end)
    valid = set(ingest_days.get_partition_keys())
    outside = [d for d in days if d not in valid]
    if outside:
        raise InputError(f"days outside the partitions ({ingest_days.start.date()} to today): {outside[0]} ...")
    db = open_database()
    if args.rechunk:
        with db.connection() as conn:
            deleted = index_store.delete_chunks_of_days(conn, args.start, args.end)
        # Vectors are keyed by content address: unchanged chunk texts find theirs again.
        print(f"deleted {deleted} chunk row(s) of {len(days)} day(s); vectors are kept and reused by content")
    instance = open_instance()
    resources = default_resources()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    failed = []
    for day in days:
        result = dg.materialize([episodes, chunks, embeddings, entity_mentions], partition_key=day,
                                instance=instance, resources=resources, run_config=quiet, raise_on_error=False,
                                tags={"memory_pipeline/trigger": "memory-pipeline backfill"})
        vectors = [e.materialization.metadata["new_vectors"].value for e in result.get_asset_materialization_events()
                   if e.asset_key.to_user_string() == "embeddings"]
        status = "ok" if result.success else "FAILED"
        print(f"{day}: {status}" + (f", {vectors[0]} new vector(s)" if vectors else ""))
        if not result.success:
            failed.append(day)
    instance.dispose()
    if failed:
        err(f"memory-pipeline: {len(failed)} day(s) failed: {', '.join(failed)} (see the runs in the UI)")
        return ExitCode.FAILURE
    return ExitCode.OK
