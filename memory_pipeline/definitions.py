"""The Dagster entry point: everything in the ``defs`` folder (``[tool.dg]`` in pyproject.toml,
``workspace.yaml`` and ``[tool.dagster]`` point here). Loaded when the code location starts."""

import warnings
from pathlib import Path

import dagster as dg


def load() -> dg.Definitions:
    """The project's definitions, for code that runs a named job itself (the CLI's demo)."""
    loaded = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
    # The loader meets an asset once per module that imports it; keep one of each, linked to the
    # function that computes it (the UI's "code references").
    assets = list({id(a): a for a in loaded.assets or []}.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)  # code references are beta in Dagster 1.13
        assets = dg.with_source_code_references(assets)
    return dg.Definitions(
        assets=assets,
        asset_checks=list({id(c): c for c in loaded.asset_checks or []}.values()),
        jobs=list({id(j): j for j in loaded.jobs or []}.values()),
        sensors=loaded.sensors,
        schedules=loaded.schedules,
        resources=loaded.resources,
    )


def job(name: str) -> dg.JobDefinition:
    """One named job, resolved: what ``dg.build_reconstructable_job`` rebuilds in another process
    (a Dask worker, a script's run) from this module and the name."""
    return load().resolve_job_def(name)


@dg.definitions
def defs() -> dg.Definitions:
    return load()
