"""Dagster's instance storage (runs, events, schedules) on this project's PostgreSQL, found lazily.

``dagster.yaml`` names this class instead of a ``postgres_url``, so every Dagster process
(``dagster dev``, ``dg dev``, the daemon, run workers, ``dagster definitions validate``, the
CLI) resolves the same server when it builds its instance, with no variable set: the
``dagster`` database of the embedded server under ``MEMORY_PIPELINE_HOME`` (default: the
user's data folder, ``config.user_data_dir``), which it starts or joins. ``MEMORY_PIPELINE_DAGSTER_URL``, else
``MEMORY_PIPELINE_DATABASE_URL``, point it elsewhere. A ``postgres_url: {env: ...}`` entry
could not do this: Dagster refuses an unset variable, and no value fits every checkout.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from dagster_postgres import DagsterPostgresStorage

from memory_pipeline import config
from memory_pipeline.storage.embedded import DAGSTER_DATABASE, ensure_embedded_server


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
    server = ensure_embedded_server(config.home_dir(environ), environ)
    return server.uri(DAGSTER_DATABASE, driver="psycopg2")


class ProjectPostgresStorage(DagsterPostgresStorage):
    """``DagsterPostgresStorage`` whose URL is resolved when the instance is built, not configured."""

    def __init__(self, inst_data=None, postgres_url: str | None = None):
        super().__init__(postgres_url or dagster_storage_url(), inst_data=inst_data)

    @classmethod
    def config_type(cls):
        return {}

    @classmethod
    def from_config_value(cls, inst_data, config_value):  # noqa: ARG003 - nothing to configure
        return cls(inst_data=inst_data)
