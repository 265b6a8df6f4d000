"""The failures a user can expect, each with its own plain message and process exit code.

Commands catch ``MemoryPipelineError`` at the top, print ``str(error)`` and exit with
``error.exit_code``; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from memory_pipeline.redaction import mask_secrets


class ExitCode:
    OK = 0
    FAILURE = 1  # an unexpected failure (a bug): traceback shown
    USAGE = 2  # bad command-line arguments (argparse uses 2 as well)
    INPUT_REJECTED = 3  # some input was rejected; everything valid was still stored
    DATABASE_UNAVAILABLE = 4
    EMBEDDER_UNAVAILABLE = 5
    MODEL_REFUSED = 6  # wrong dimension, or the canary says the model changed
    CONFIGURATION = 7  # bad environment / configuration value
    DAGSTER_UNAVAILABLE = 8  # no Dagster web server answers (memory-pipeline backfill)
    RUNS_FAILED = 9  # a Dagster backfill finished with failed or cancelled days
    BACKFILL_CANCELED = 10  # the Dagster backfill itself was cancelled (Backfills page, GraphQL)
    NOT_SAVED = 11  # a statement held back: close ones exist, nothing was saved (observe)
    BROKEN_PIPE = (
        141  # stdout's reader went away (128 + SIGPIPE, as a shell reports a tool it killed)
    )


def shortened(text: object, limit: int = 200) -> str:
    """``text`` on one line and at most ``limit`` characters, for a plain message about a server."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class MemoryPipelineError(Exception):
    exit_code = ExitCode.FAILURE

    def __init__(self, *args: object):
        # Masked here, once, so no path (CLI, Dagster log, HTTP answer) can print a password.
        super().__init__(*(mask_secrets(a) if isinstance(a, str) else a for a in args))


class ConfigurationError(MemoryPipelineError):
    """A configuration value (environment variable, resource field, file) is invalid."""

    exit_code = ExitCode.CONFIGURATION


class InputError(MemoryPipelineError):
    """User input (a query, an argument, a file) is invalid; the message says where and why."""

    exit_code = ExitCode.USAGE


class UnknownMemory(InputError):
    """A memory that has no episodes; the message names the ones that exist (``known``)."""

    def __init__(self, memory: str, known: list[str]):
        self.memory = memory
        self.known = known
        super().__init__(unknown_memory_message(memory, known))


class NoDataYet(InputError):
    """A read-only command where nothing was ever stored: no database is created for it; the
    message names the folder (or database) it looked in."""

    def __init__(self, where: str):
        self.where = where
        super().__init__(
            f"no memories yet in {where}: nothing was ingested there "
            "(`memory-pipeline ingest FILE --memory NAME` creates its database; "
            "MEMORY_PIPELINE_HOME names another folder)"
        )


class UnknownPage(InputError):
    """A page number an episode does not have; the message says how many it has."""

    def __init__(self, episode_id: int, page: object, pages: int):
        super().__init__(
            f"episode {episode_id} has {pages} page(s), numbered 1 to {pages}; no page {page!r}"
        )
        self.episode_id = episode_id
        self.page = page
        self.pages = pages


def unknown_memory_message(memory: str, known: list[str], where: str | None = None) -> str:
    """``where``: the folder or database looked in, for a user at a command line (a server's
    client is not told the server's paths)."""
    listed = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
    place = f" in {where}" if where else ""
    return f"unknown memory {memory!r}{place} (existing: {listed or 'none yet'})"


class DatabaseUnavailable(MemoryPipelineError):
    """PostgreSQL cannot be reached or refused us; distinct from embedding failures."""

    exit_code = ExitCode.DATABASE_UNAVAILABLE

    def __init__(self, detail: str):
        super().__init__(f"the database is unavailable: {detail}")
        self.detail = detail


class MissingExtension(DatabaseUnavailable):
    """The server lacks pgvector (or a version new enough)."""

    exit_code = ExitCode.CONFIGURATION

    def __init__(self, detail: str):
        MemoryPipelineError.__init__(self, detail)
        self.detail = detail


class EmbedderUnavailable(MemoryPipelineError):
    """The embedding service cannot be reached, timed out, or answered with an HTTP error."""

    exit_code = ExitCode.EMBEDDER_UNAVAILABLE

    def __init__(self, service: str, detail: str = ""):
        message = f"the {service} embedding service is unavailable"
        super().__init__(f"{message} ({detail})" if detail else message)
        self.service = service
        self.detail = detail


class ModelRefused(MemoryPipelineError):
    """The served model does not fit the profile (dimension) or has silently changed (canary)."""

    exit_code = ExitCode.MODEL_REFUSED
