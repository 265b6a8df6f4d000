"""Argument parsing and dispatch for ``memory-pipeline``; expected failures exit with their code."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from memory_pipeline.errors import (
    ExitCode,
    MemoryPipelineError,
    UnknownMemory,
    unknown_memory_message,
)
from memory_pipeline.version import __version__


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, got {value}")
    return value


def _port_or_zero(text: str) -> int:
    """A port, or 0: any free port (the server prints the one it got)."""
    return 0 if text.strip() == "0" else _port(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-pipeline",
        description="Make everything you have written findable by meaning (Dagster + PostgreSQL/pgvector).",
    )
    parser.add_argument(
        "-V", "--version", action="version", version=f"memory-pipeline {__version__}"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("version", help="this package's version, and those of Dagster and Python")

    p = sub.add_parser(
        "ingest", help="store episodes from JSONL, Markdown and text files or folders"
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--memory", help="memory for files that do not name one")
    p.add_argument("--kind", help="kind for files that do not name one (default: note)")
    p.add_argument("--json", action="store_true", help="print a JSON report")

    p = sub.add_parser(
        "index", help="chunk and embed everything pending, until done or something fails"
    )
    p.add_argument("--day", type=_date, help="only episodes ingested on this UTC day (YYYY-MM-DD)")
    p.add_argument(
        "--no-keyword-lists",
        action="store_true",
        help="do not build keyword champion lists that are missing or stale (built beside the pass by default)",
    )
    p.add_argument(
        "--accept-worse",
        action="store_true",
        help="switch to the new generation even if it scores worse on the labelled questions",
    )
    p.add_argument("--json", action="store_true", help="print a JSON report")

    p = sub.add_parser("status", help="counts, pending work per day, the active profile")
    p.add_argument("--json", action="store_true", help="print a JSON document")

    p = sub.add_parser(
        "memories", help="the memories with their episode, chunk and statement counts"
    )
    p.add_argument("--json", action="store_true", help="print a JSON document")

    p = sub.add_parser(
        "read", help="one page of an episode (its chunks, up to 16,000 characters) on stdout"
    )
    p.add_argument("episode", type=_int, metavar="EPISODE_ID")
    p.add_argument(
        "--page", type=_int, default=1, help="the page, from 1 (stderr says how many there are)"
    )
    p.add_argument("--json", action="store_true", help="print the page document as JSON")

    p = sub.add_parser(
        "episodes",
        help="a memory's current episodes, newest first, with their source and revision count",
    )
    p.add_argument("--memory", required=True, help="the memory to list")
    p.add_argument("--limit", type=_int, default=50, help="at most this many (1-1000, default 50)")
    p.add_argument("--before", type=_int, metavar="ID", help="the page after episode ID")
    p.add_argument("--json", action="store_true", help="print a JSON document")

    p = sub.add_parser(
        "history", help="every revision of an episode's source (superseded ones too), newest first"
    )
    p.add_argument("episode", type=_int, metavar="EPISODE_ID", help="any revision of the source")
    p.add_argument("--json", action="store_true", help="print a JSON document")

    p = sub.add_parser(
        "forget",
        help="delete an episode (every revision of its source) or a whole memory, with everything "
        "derived from it",
    )
    p.add_argument(
        "--memory", required=True, help="the memory the episode belongs to (or to forget whole)"
    )
    p.add_argument(
        "--episode",
        type=_int,
        metavar="ID",
        help="the episode id (from search results or ingest --json)",
    )
    p.add_argument("--all", action="store_true", help="forget every episode of the memory")
    p.add_argument("--json", action="store_true", help="print what was deleted as JSON")

    p = sub.add_parser("serve", help="the HTTP API (OpenAPI docs at /docs)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (off loopback only with tokens)"
    )
    p.add_argument("--port", type=_port_or_zero, default=8765)

    p = sub.add_parser("mcp", help="the MCP server: stdio (default) or streamable HTTP")
    p.add_argument(
        "--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port_or_zero, default=8766)
    p.add_argument(
        "--token", help="stdio: act with this token's scope (default: every memory, read and write)"
    )

    p = sub.add_parser("tokens", help="bearer tokens of the HTTP and MCP servers")
    tok = p.add_subparsers(dest="tokens_command", required=True, metavar="ACTION")
    q = tok.add_parser("create", help="a new token, printed once")
    q.add_argument("name")
    q.add_argument("--memory", action="append", help="a memory it opens (repeatable)")
    q.add_argument("--all-memories", action="store_true", help="every memory, present and future")
    q.add_argument(
        "--write", action="store_true", help="may add, index and forget (default: read only)"
    )
    q.add_argument("--json", action="store_true")
    q = tok.add_parser("list", help="the tokens (names and scopes; never the tokens themselves)")
    q.add_argument("--json", action="store_true")
    q = tok.add_parser("revoke", help="delete a token")
    q.add_argument("name")

    p = sub.add_parser("search", help="fused search inside one memory")
    p.add_argument("query", nargs="?", help="the question, in your own words")
    p.add_argument("--memory", help="the memory to search (required unless --batch)")
    p.add_argument("--policy", help="a named policy from the policies file (default: default)")
    p.add_argument("--limit", type=_int, help="number of results (1-50)")
    p.add_argument(
        "--channels", help="comma-separated subset of vector,keyword,graph,date,observation,belief"
    )
    p.add_argument(
        "--contested",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="include beliefs marked contested (--no-contested leaves them out; default: the policy's)",
    )
    p.add_argument(
        "--history",
        action="store_true",
        help="also superseded revisions holding the query's words, after the results, marked superseded",
    )
    p.add_argument("--json", action="store_true", help="print the stable JSON document")
    p.add_argument(
        "--batch",
        metavar="FILE",
        help='JSON lines {"memory", "query", "policy"?, "limit"?, "channels"?, "contested"?, "history"?} ("-" = stdin); '
        "one JSON result document a line on stdout",
    )

    p = sub.add_parser("entities", help="import and list the entities the graph channel follows")
    ent = p.add_subparsers(dest="entities_command", required=True, metavar="ACTION")
    q = ent.add_parser("import", help='import JSONL entities {"memory", "name", "aliases"?}')
    q.add_argument("file")
    q.add_argument("--memory", help="memory for lines that do not name one")
    q.add_argument("--json", action="store_true")
    q = ent.add_parser("list", help="a memory's entities with their mention counts")
    q.add_argument("--memory", required=True)
    q.add_argument("--json", action="store_true")

    p = sub.add_parser(
        "observe", help="save an observation or a belief (close existing ones are shown first)"
    )
    p.add_argument("text", help='the statement, e.g. "Mara\'s running coach is Inês"')
    p.add_argument("--memory", required=True)
    p.add_argument("--kind", choices=("observation", "belief"), default="observation")
    p.add_argument("--contested", action="store_true", help="save a belief as contested")
    p.add_argument("--confidence", type=float, default=1.0, help="0..1 (default 1)")
    p.add_argument(
        "--episode",
        type=_int,
        action="append",
        metavar="ID",
        help="an episode it came from (repeatable)",
    )
    p.add_argument(
        "--passage",
        action="append",
        metavar="REF",
        help="a chunk id or reference it came from (repeatable)",
    )
    p.add_argument("--author", help="who wrote it (a person or an agent)")
    p.add_argument(
        "--add-anyway", action="store_true", help="save it even though close statements exist"
    )
    p.add_argument(
        "--revise", type=_int, metavar="ID", help="replace statement ID (kept as history, retired)"
    )
    p.add_argument("--force", action="store_true", help="save even a near-exact duplicate")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("observations", help="list, import and mark observations and beliefs")
    obs = p.add_subparsers(dest="observations_command", required=True, metavar="ACTION")
    q = obs.add_parser("list", help="a memory's statements, newest first")
    q.add_argument("--memory", required=True)
    q.add_argument("--kind", choices=("observation", "belief"))
    q.add_argument(
        "--all", action="store_true", help="retired versions too (the history of revisions)"
    )
    q.add_argument("--limit", type=_int, default=100)
    q.add_argument("--json", action="store_true")
    q = obs.add_parser(
        "import", help='save JSONL statements {"memory", "text", "kind"?, "episode_ids"?, ...}'
    )
    q.add_argument("file")
    q.add_argument("--memory", help="memory for lines that do not name one")
    q.add_argument("--force", action="store_true", help="save near-exact duplicates too")
    q.add_argument("--json", action="store_true")
    q = obs.add_parser("status", help="mark a statement active, contested or retired")
    q.add_argument("id", type=_int)
    q.add_argument("--memory", required=True)
    q.add_argument("--set", required=True, choices=("active", "contested", "retired"))

    p = sub.add_parser(
        "reindex", help="re-embed everything as a new generation (search switches when done)"
    )
    p.add_argument(
        "--no-wait", action="store_true", help="only start it; the sensor or a backfill builds it"
    )
    p.add_argument("--rollback", action="store_true", help="serve the previous generation again")
    p.add_argument(
        "--accept-worse",
        action="store_true",
        help="switch to the new generation even if it scores worse on the labelled questions",
    )

    p = sub.add_parser(
        "backfill",
        help="submit a Dagster backfill of index_day_job over a range of ingest days (the daemon runs it)",
    )
    p.add_argument("--from", dest="start", type=_date, required=True, metavar="YYYY-MM-DD")
    p.add_argument("--to", dest="end", type=_date, required=True, metavar="YYYY-MM-DD")
    p.add_argument(
        "--rechunk",
        action="store_true",
        help="each day's run deletes and recomputes its chunks first (search keeps the present ones until then)",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="submit it and return (follow it on the Backfills page)",
    )
    p.add_argument(
        "--dagster-url",
        metavar="URL",
        help="the Dagster web server to link to (default MEMORY_PIPELINE_DAGSTER_UI; none needed)",
    )

    p = sub.add_parser(
        "maintain", help="rebuild the keyword champion lists (as the nightly maintenance job does)"
    )
    p.add_argument(
        "--memory", help="only this memory (default: every memory of more than 500 chunks)"
    )
    p.add_argument(
        "--stale-only",
        action="store_true",
        help="only lists that are missing or stale (what index builds beside its pass)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON report")

    sub.add_parser(
        "demo", help="ingest the bundled sample corpus, index it with Dagster, run searches"
    )

    p = sub.add_parser("ui", help="start Dagster's web UI and daemon for this project")
    p.add_argument("--port", type=_port, default=3000)
    p.add_argument("--host", default="127.0.0.1")

    from memory_pipeline.cli import quality_commands

    parser.set_defaults(handlers=quality_commands.add_parsers(sub, _int))
    return parser


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
    args = build_parser().parse_args(argv)
    if args.command == "version":
        return print_versions()
    from memory_pipeline.cli import (
        commands,
        episode_commands,
        observation_commands,
        ops_commands,
        search_commands,
        service_commands,
    )

    handler = {
        "ingest": commands.cmd_ingest,
        "index": commands.cmd_index,
        "status": commands.cmd_status,
        "memories": commands.cmd_memories,
        "read": commands.cmd_read,
        "episodes": episode_commands.cmd_episodes,
        "history": episode_commands.cmd_history,
        "forget": commands.cmd_forget,
        "serve": service_commands.cmd_serve,
        "mcp": service_commands.cmd_mcp,
        "tokens": service_commands.cmd_tokens,
        "demo": commands.cmd_demo,
        "ui": commands.cmd_ui,
        "search": search_commands.cmd_search,
        "entities": search_commands.cmd_entities,
        "observe": observation_commands.cmd_observe,
        "observations": observation_commands.cmd_observations,
        "reindex": ops_commands.cmd_reindex,
        "backfill": ops_commands.cmd_backfill,
        "maintain": ops_commands.cmd_maintain,
        **args.handlers,
    }[args.command]
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
