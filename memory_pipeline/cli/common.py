"""What every sub-command shares: opening the database, printing, exit codes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from memory_pipeline import config
from memory_pipeline.errors import InputError, NoDataYet
from memory_pipeline.redaction import mask_secrets

T = TypeVar("T")


def open_memory(reporter=None, *, read_only: bool = False, **settings):
    """The ``Memory`` every command works through, configured by the environment (``settings``:
    ``Memory.open`` keyword arguments that a command decides, such as the pool size). What it
    stores, forgets and indexes is recorded in Dagster (``reporter``, by default a new
    ``DagsterReporter``), so the UI's partitions are true whichever path did the work.
    ``read_only``: a command that only reads raises ``NoDataYet`` rather than create an
    empty embedded database."""
    from memory_pipeline.memory import Memory, exit_cleanly_on_sigterm
    from memory_pipeline.orchestration.reporting import DagsterReporter

    warn_about_old_data_folder()
    if read_only:
        require_data()
    # If this command starts the embedded server, SIGTERM must still stop it on the way out.
    exit_cleanly_on_sigterm()
    return Memory.open(reporter=reporter or DagsterReporter(), **settings)


def require_data() -> None:
    """``NoDataYet`` (naming the folder) when no database URL is set and the data folder holds
    no embedded database: reading must not create one."""
    if config.database_url() is None and not config.has_embedded_database(config.home_dir()):
        config.check_folder_could_be_made(config.home_dir())
        raise NoDataYet(config.data_location())


def warn_about_old_data_folder() -> None:
    """The data folder no longer follows the working directory: a ``./.memory_pipeline`` of an
    earlier version is not read, and would look like lost data. Said once per command."""
    old = Path(".memory_pipeline").resolve()
    if (
        not os.environ.get("MEMORY_PIPELINE_HOME", "").strip()
        and old != config.home_dir()
        and config.has_embedded_database(old)
    ):
        err(
            f"memory-pipeline: warning: {old} is not read: the data folder is "
            f"{config.home_dir()}; move it there or set MEMORY_PIPELINE_HOME={old} "
            "(README: the data folder)"
        )


def print_warnings(memory) -> None:
    for warning in memory.take_warnings():
        err(f"memory-pipeline: warning: {warning}")


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def err(message: str) -> None:
    # Warnings quote other libraries' messages (Dagster's storage, a server's answer), which may
    # carry a connection string.
    print(mask_secrets(message), file=sys.stderr)


def validated(value: str | None, validate: Callable[[str], T], flag: str) -> T | None:
    """An option's ``value`` through ``validate`` (None when not given); its ValueError becomes
    an InputError naming ``flag``."""
    if value is None:
        return None
    try:
        return validate(value)
    except ValueError as exc:
        raise InputError(f"{flag} {value!r}: {exc}") from None
