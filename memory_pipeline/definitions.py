"""The Dagster entry point: everything in the ``defs`` folder (``[tool.dg]`` in pyproject.toml,
``workspace.yaml`` and ``[tool.dagster]`` point here). Loaded when the code location starts."""

from pathlib import Path

import dagster as dg


def load() -> dg.Definitions:
    """The project's definitions, for code that runs a named job itself (the CLI's demo)."""
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


def job(name: str) -> dg.JobDefinition:
    """One named job, resolved: what ``dg.build_reconstructable_job`` rebuilds in another process
    (a Dask worker, a script's run) from this module and the name."""
    return load().resolve_job_def(name)


@dg.definitions
def defs() -> dg.Definitions:
    return load()
