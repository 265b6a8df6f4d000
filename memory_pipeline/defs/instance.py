"""This project's Dagster instance: its home folder, its storage URL, and runless events.

Commands outside Dagster (``memory-pipeline ingest``) still tell Dagster what they did, so the
web UI shows a day's ``episodes`` partition as materialized however the episodes arrived.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Mapping

from memory_pipeline import config
from memory_pipeline.storage.embedded import DAGSTER_DATABASE, ensure_embedded_server
from memory_pipeline.storage.paths import PROJECT_ROOT

DAGSTER_YAML = PROJECT_ROOT / "dagster.yaml"
WORKSPACE_YAML = PROJECT_ROOT / "workspace.yaml"


def as_psycopg2_url(url: str) -> str:
    """dagster-postgres needs the psycopg2 driver spelled out (ENVIRONMENT.md)."""
    return re.sub(r"^postgres(?:ql)?(?:\+\w+)?://", "postgresql+psycopg2://", url)


def dagster_storage_url(environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    explicit = environ.get("MEMORY_PIPELINE_DAGSTER_URL", "").strip()
    if explicit:
        return as_psycopg2_url(explicit)
    data_url = config.database_url(environ)
    if data_url:
        return as_psycopg2_url(data_url)
    server = ensure_embedded_server(config.home_dir(environ))
    return server.uri(DAGSTER_DATABASE, driver="psycopg2")


def prepare_dagster_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Set DAGSTER_HOME (HOME/dagster with the project's dagster.yaml) and the storage URL.

    Returns the environment (``os.environ`` by default, modified in place) so child processes
    (``dagster dev``) inherit the same instance.
    """
    environ = os.environ if environ is None else environ
    home = config.home_dir(environ)
    dagster_home = home / "dagster"
    dagster_home.mkdir(parents=True, exist_ok=True)
    target = dagster_home / "dagster.yaml"
    if not target.exists() or target.read_bytes() != DAGSTER_YAML.read_bytes():
        shutil.copyfile(DAGSTER_YAML, target)
    environ["MEMORY_PIPELINE_HOME"] = str(home)
    environ["DAGSTER_HOME"] = str(dagster_home)
    environ["MEMORY_PIPELINE_DAGSTER_URL"] = dagster_storage_url(environ)
    return environ


def open_instance():
    import dagster as dg

    environ = prepare_dagster_env()
    return dg.DagsterInstance.from_config(environ["DAGSTER_HOME"])


def report_episodes_partition(instance, day: str, metadata: dict) -> None:
    import dagster as dg

    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key="episodes", partition=day, metadata=metadata)
    )


def embed_concurrency(environ: Mapping[str, str] | None = None) -> int:
    from memory_pipeline.config import env_int

    return env_int(os.environ if environ is None else environ, "MEMORY_PIPELINE_EMBED_CONCURRENCY", 1)


def apply_pool_limits(instance, environ: Mapping[str, str] | None = None) -> int:
    """Set the embedding pool's limit in the instance (what the UI's Concurrency page shows)."""
    from memory_pipeline.defs.assets import EMBEDDING_POOL

    limit = embed_concurrency(environ)
    instance.event_log_storage.set_concurrency_slots(EMBEDDING_POOL, limit)
    return limit
