"""What the asset modules share: the asset declarations of a stage, the backfill policy, the run's
days, owners, table metadata, code references."""

import datetime as dt
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import dagster as dg

from memory_pipeline.orchestration.instance import EMBEDDING_POOL

T = TypeVar("T")

OWNERS = ["team:memory-pipeline"]

# A backfill runs up to this many days in one run (the partitioned assets take a range of days)
# instead of a run per day: a run's start-up costs seconds, a quiet day's work a fraction of
# that. Ten bounds what one failure stops, and lets the runs of a long range overlap their
# steps that do not call the model.
BACKFILL_POLICY = dg.BackfillPolicy.multi_run(max_partitions_per_run=10)
# Dagster 1.13 marks the parameter beta and warns at every import of the assets (on the stderr
# of `memory-pipeline ui`, demo, every run): said here once instead.
warnings.filterwarnings("ignore", message="Parameter `backfill_policy`", category=dg.BetaWarning)


def stage_asset(
    stage: str, *, calls_model: bool = False, **kwargs: Any
) -> Callable[[Callable], dg.AssetsDefinition]:
    """``dg.asset`` in ``stage``'s group, tagged with it, with the team as owners. The asset's
    description, unless given, is its function's docstring on one line; its kinds, unless
    given, PostgreSQL (a table). An asset that ``calls_model`` says so in a tag and takes a slot
    of the embedding model's pool."""
    tags = {"stage": stage} | ({"calls": "embedding-model"} if calls_model else {})
    if calls_model:
        kwargs["pool"] = EMBEDDING_POOL

    def declare(fn: Callable) -> dg.AssetsDefinition:
        docstring = " ".join((inspect.getdoc(fn) or "").split())
        declared = {"kinds": {"postgres"}, "description": docstring} | kwargs
        return dg.asset(group_name=stage, owners=OWNERS, tags=tags, **declared)(fn)

    return declare


def each_day(
    context: dg.AssetExecutionContext,
    work: Callable[[dt.date], T],
    metadata: Callable[[T], dict],
) -> list[T]:
    """``work`` done for each of the run's days, in order, each recorded as its own partition's
    materialization with the ``metadata`` of what it did."""
    done = []
    for day in days_of(context):
        result = work(day)
        context.add_asset_metadata(metadata(result), partition_key=day.isoformat())
        done.append(result)
    return done


def code_referenced(assets: list[dg.AssetsDefinition]) -> dg.Definitions:
    """``assets`` as a module's definitions, each linked to the function that computes it (the
    UI's "code references")."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # code references are beta in Dagster 1.13
        return dg.Definitions(assets=dg.with_source_code_references(assets))


# A run with this tag "true" (``memory-pipeline backfill --rechunk``) cuts its days' chunks
# again: the ``chunks`` step deletes and re-cuts each day inside the run.
RECHUNK_TAG = "memory_pipeline/rechunk"


def days_of(context: dg.AssetExecutionContext) -> list[dt.date]:
    """The run's ingest days: one for a sensor or single-day run, a range for a backfill run."""
    return [dt.date.fromisoformat(key) for key in context.partition_keys]


def days_label(days: list[dt.date]) -> str:
    return days[0].isoformat() if len(days) == 1 else f"{days[0]}..{days[-1]} ({len(days)} days)"


def table(name: str, columns: str) -> dict:
    """Definition metadata of an asset stored as a PostgreSQL table: its name and columns, one a
    line as ``name type -- description`` (the description may be left out)."""
    schema = []
    for line in columns.strip().splitlines():
        declared, _, description = line.partition(" -- ")
        column, type_ = declared.split()
        schema.append(dg.TableColumn(column, type_, description=description))
    return {
        "dagster/table_name": f"memory_pipeline.public.{name}",
        "dagster/column_schema": dg.TableSchema(columns=schema),
    }


EPISODES_TABLE = table(
    "episodes",
    """
    id bigint -- identity
    memory text -- the memory (person, agent, project) it belongs to
    kind text -- note, journal, chat, document, ...
    title text
    occurred_at timestamptz -- when it happened
    ingested_at timestamptz -- when it was stored
    ingest_day date -- the UTC day it was stored: the partition
    salience real -- 0..1
    source text -- file and line it came from
    external_id text -- the source's own id, if any
    metadata jsonb
    body text -- the text
    content_hash text -- sha256 of the body; unique per memory
    """,
)
CHUNKS_TABLE = table(
    "chunks",
    """
    episode_id bigint -- references episodes
    ordinal int -- position in the episode
    memory text
    chunk_id text -- content address of the text (shared by identical chunks)
    start_char int -- offset in the body, characters
    end_char int -- offset in the body, characters
    token_estimate int -- tokens, estimated
    text text
    """,
)
EMBEDDINGS_TABLE = table(
    "embeddings",
    """
    profile_id int -- references embedding_profiles
    generation int -- the profile's generation it was written for
    memory text
    chunk_id text -- the chunk's content address
    embedding halfvec -- unit-length chunk vector, the profile's dimension
    windows halfvec[] -- unit-length vectors of the chunk's paragraph windows
    created_at timestamptz
    """,
)
ENTITY_MENTIONS_TABLE = table(
    "entity_mentions",
    """
    entity_id bigint -- references entities
    episode_id bigint -- references episodes
    memory text
    """,
)
ENTITIES_TABLE = table(
    "entities",
    """
    id bigint -- identity
    memory text
    name text -- unique per memory, case-insensitive
    aliases text[]
    source text -- import or extracted
    created_at timestamptz
    """,
)
STATEMENT_VECTORS_TABLE = table(
    "observation_embeddings",
    """
    profile_id int -- references embedding_profiles
    generation int -- the profile's generation it was written for
    observation_id bigint -- references observations (an observation or a belief)
    memory text
    embedding halfvec -- unit-length statement vector, the profile's dimension
    """,
)
PROFILES_TABLE = table(
    "embedding_generations",
    """
    profile_id int -- references embedding_profiles
    generation int
    state text -- building, ready, retired or stale
    stale_reason text
    canary_text text
    canary_vector halfvec -- the canary phrase's vector for this generation
    started_at timestamptz
    ready_at timestamptz
    """,
)
STATS_TABLE = table(
    "pipeline_stats",
    """
    stats_day date -- one row per day
    computed_at timestamptz
    stats jsonb -- counts, pending, search latency p50/p95 (ms)
    """,
)
