"""Argument parsing and dispatch for ``memory-pipeline``; expected failures exit with their code."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable

from memory_pipeline.errors import (
    ExitCode,
    MemoryPipelineError,
    UnknownMemory,
    unknown_memory_message,
)
from memory_pipeline.version import __version__

# Every command: the module holding its handler (``cmd_<name>``) and its options
# (``<name>_options``, beside the handler), and its one-line help. Only the command being run
# has its module imported: `--help` and `version` load nothing else.
COMMANDS: dict[str, tuple[str | None, str]] = {
    "version": (None, "this package's version, and those of Dagster and Python"),
    "ingest": ("episode_commands", "store episodes from JSONL, Markdown and text files or folders"),
    "index": ("commands", "chunk and embed everything pending, until done or something fails"),
    "status": ("status_commands", "counts, pending work per day, the active profile"),
    "memories": ("status_commands", "the memories with their episode, chunk and statement counts"),
    "read": (
        "episode_commands",
        "one page of an episode (its chunks, up to 16,000 characters) on stdout",
    ),
    "episodes": (
        "episode_commands",
        "a memory's current episodes, newest first, with their source and revision count",
    ),
    "history": (
        "episode_commands",
        "every revision of an episode's source (superseded ones too), newest first",
    ),
    "forget": (
        "episode_commands",
        "delete an episode (every revision of its source) or a whole memory, with everything derived from it",
    ),
    "serve": ("service_commands", "the HTTP API (OpenAPI docs at /docs)"),
    "mcp": ("service_commands", "the MCP server: stdio (default) or streamable HTTP"),
    "tokens": ("service_commands", "bearer tokens of the HTTP and MCP servers"),
    "search": ("search_commands", "fused search inside one memory"),
    "entities": ("search_commands", "import and list the entities the graph channel follows"),
    "observe": (
        "observation_commands",
        "save an observation or a belief (close existing ones are shown first)",
    ),
    "observations": ("observation_commands", "list, import and mark observations and beliefs"),
    "reindex": (
        "ops_commands",
        "re-embed everything as a new generation (search switches when done)",
    ),
    "backfill": (
        "ops_commands",
        "submit a Dagster backfill of index_day_job over a range of ingest days (the daemon runs it)",
    ),
    "maintain": (
        "ops_commands",
        "rebuild the keyword champion lists (as the nightly maintenance job does)",
    ),
    "questions": (
        "quality_commands",
        "a memory's labelled questions: add, list, remove, import",
    ),
    "quality": (
        "quality_commands",
        "score each memory's labelled questions (first@1, recall@3/@8, MRR)",
    ),
    "demo": ("commands", "ingest the bundled sample corpus, index it with Dagster, run searches"),
    "ui": ("service_commands", "start Dagster's web UI and daemon for this project"),
}


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """Every command of ``COMMANDS``; those of ``commands`` (default: all) get their options from
    their own module, the others only their name and help."""
    parser = argparse.ArgumentParser(
        prog="memory-pipeline",
        description="Make everything you have written findable by meaning (Dagster + PostgreSQL/pgvector).",
    )
    parser.add_argument(
        "-V", "--version", action="version", version=f"memory-pipeline {__version__}"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    with_options = set(COMMANDS if commands is None else commands)
    for name, (module, summary) in COMMANDS.items():
        p = sub.add_parser(name, help=summary)
        if module is not None and name in with_options:
            add_options = getattr(_module(module), f"{name}_options", None)
            if add_options is not None:  # demo has none
                add_options(p)
    return parser


def _module(name: str):
    return importlib.import_module(f"memory_pipeline.cli.{name}")


def print_versions() -> int:
    """``memory-pipeline version``: what a bug report needs, read from the installed metadata
    (nothing is imported, so it answers even where the stack cannot load)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    print(f"memory-pipeline {__version__}")
    for package in ("dagster", "fastapi", "mcp", "psycopg", "pgvector"):
        try:
            print(f"{package} {version(package)}")
        except PackageNotFoundError:
            print(f"{package} not installed")
    print(f"python {platform.python_version()}")
    return ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    code: str | int | None
    try:
        try:
            code = _run(argv)
        except SystemExit as done:  # argparse's --help, --version and usage errors
            code = done.code
        sys.stdout.flush()  # inside the try: a closed pipe is found here, not at exit
    except BrokenPipeError:
        # The reader went away (`memory-pipeline status | head -1`): as a Unix tool killed by
        # SIGPIPE, stop quietly with 128 + SIGPIPE. Python's last flush of stdout at exit would
        # fail again, so stdout points at /dev/null from here on.
        _drop_stdout()
        code = ExitCode.BROKEN_PIPE
    sys.exit(code if code is not None else ExitCode.OK)


def _run(argv: list[str] | None) -> int | None:
    words = sys.argv[1:] if argv is None else argv
    named = next((word for word in words if not word.startswith("-")), None)
    args = build_parser([named] if named in COMMANDS else []).parse_args(words)
    module = COMMANDS[args.command][0]
    if module is None:
        return print_versions()
    handler = getattr(_module(module), f"cmd_{args.command}")
    try:
        return handler(args)
    except MemoryPipelineError as error:
        print(f"memory-pipeline: {_located(error)}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("memory-pipeline: interrupted", file=sys.stderr)
        return 130


def _located(error: MemoryPipelineError) -> str:
    """An unknown memory names where it was looked for: ingesting in one folder and searching
    from another used to find two different stores."""
    if isinstance(error, UnknownMemory):
        from memory_pipeline.config import data_location

        return unknown_memory_message(error.memory, error.known, data_location())
    return str(error)


def _drop_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    main()
