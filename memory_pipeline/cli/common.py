"""What every sub-command shares: opening the database, printing, exit codes."""

from __future__ import annotations

import json
import sys
from typing import Any

from memory_pipeline.redaction import mask_secrets
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm


def open_memory(reporter=None, **settings):
    """The ``Memory`` every command works through, configured by the environment (``settings``:
    ``Memory.open`` keyword arguments that a command decides, such as the pool size). What it
    stores, forgets and indexes is recorded in Dagster (``reporter``, by default a new
    ``DagsterReporter``), so the UI's partitions are true whichever path did the work."""
    from memory_pipeline.memory import Memory
    from memory_pipeline.orchestration.reporting import DagsterReporter

    exit_cleanly_on_sigterm()  # as in open_database: SIGTERM still stops an embedded server
    return Memory.open(reporter=reporter or DagsterReporter(), **settings)


def print_warnings(memory) -> None:
    for warning in memory.take_warnings():
        err(f"memory-pipeline: warning: {warning}")


def open_database() -> Database:
    # If this command starts the embedded server, SIGTERM must still stop it on the way out.
    exit_cleanly_on_sigterm()
    return Database.open()


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def err(message: str) -> None:
    # Warnings quote other libraries' messages (Dagster's storage, a server's answer), which may
    # carry a connection string.
    print(mask_secrets(message), file=sys.stderr)
