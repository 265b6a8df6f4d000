"""``memory-pipeline search`` (one query or a batch) and ``memory-pipeline entities``."""

from __future__ import annotations

import json
import sys

from memory_pipeline.cli.common import err, open_memory, print_json
from memory_pipeline.domain.entities import parse_entity_import
from memory_pipeline.domain.episodes import validate_memory_name
from memory_pipeline.domain.policies import PolicyError, parse_channels
from memory_pipeline.errors import ExitCode, InputError
from memory_pipeline.search.render import human_table
from memory_pipeline.storage import entities_store


def _channels(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    try:
        return parse_channels(text)
    except PolicyError as exc:
        raise InputError(f"--channels {text!r}: {exc}") from None


def cmd_search(args) -> int:
    if args.batch:
        if args.query or args.memory:
            raise InputError("--batch reads memory and query from the file; give neither on the command line")
        return _batch(args.batch)
    if args.query is None:
        raise InputError("give a query (or --batch FILE)")
    if not args.memory:
        raise InputError("--memory is required: every search is inside one memory")
    with open_memory() as mem:
        response = mem.search(
            args.memory, args.query, policy=args.policy, limit=args.limit, channels=_channels(args.channels)
        )
    if args.json:
        print_json(response.to_json())
    else:
        print(human_table(response))
    return ExitCode.OK


def _batch(path: str) -> int:
    """One JSON query a line in, one JSON document a line out, one process for all of them.

    A bad line produces ``{"line": N, "error": ...}`` in its place and the rest still run, so
    an evaluation over thousands of queries never loses the good ones to one typo.
    """
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    mem = open_memory()
    failures = 0
    with stream, mem:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                if not isinstance(item, dict):
                    raise InputError("expected a JSON object")
                unknown = set(item) - {"memory", "query", "policy", "limit", "channels"}
                if unknown:
                    raise InputError(f"unknown field(s): {', '.join(sorted(unknown))}")
                if "memory" not in item or "query" not in item:
                    raise InputError("'memory' and 'query' are required")
                channels = item.get("channels")
                if isinstance(channels, list):
                    channels = ",".join(map(str, channels))
                limit = item.get("limit")
                if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
                    raise InputError("'limit' must be a whole number")
                response = mem.search(
                    str(item["memory"]), item["query"], policy=item.get("policy"), limit=limit,
                    channels=_channels(channels),
                )
                document = {"line": number, **response.to_json()}
            except json.JSONDecodeError as exc:
                failures += 1
                document = {"line": number, "error": f"malformed JSON: {exc.msg} at column {exc.colno}"}
            except (InputError, ValueError) as exc:
                failures += 1
                document = {"line": number, "error": str(exc)}
            sys.stdout.write(json.dumps(document, ensure_ascii=False, default=str) + "\n")
            sys.stdout.flush()
    if failures:
        err(f"memory-pipeline: {failures} query line(s) failed; see their \"error\" documents")
    return ExitCode.INPUT_REJECTED if failures else ExitCode.OK


def cmd_entities(args) -> int:
    if args.entities_command == "import":
        memory = None
        if args.memory:
            try:
                memory = validate_memory_name(args.memory)
            except ValueError as exc:
                raise InputError(f"--memory {args.memory!r}: {exc}") from None
        pairs, rejections = parse_entity_import(args.file, memory=memory)
        for rejection in rejections:
            err(str(rejection))
        report = entities_store.EntityReport()
        with open_memory() as mem, mem.db.connection() as conn:
            touched = entities_store.import_entities(conn, pairs, report)
            for m in sorted(touched):
                entities_store.link_mentions(conn, m, report)
        summary = {"imported": report.imported, "merged": report.merged, "mentionsAdded": report.mentions_added,
                   "rejected": [str(r) for r in rejections]}
        if args.json:
            print_json(summary)
        else:
            print(f"{report.imported} new entit(ies), {report.merged} merged, {report.mentions_added} new mention "
                  f"link(s), {len(rejections)} rejected")
        return ExitCode.INPUT_REJECTED if rejections else ExitCode.OK
    with open_memory() as mem:
        memory = mem.require_memory(args.memory)
        with mem.db.connection() as conn:
            rows = entities_store.top_entities(conn, [memory], limit=10_000)
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            aliases = f" ({row['aliases']})" if row["aliases"] else ""
            print(f"{row['episodes']:>5}  {row['entity']}{aliases}  [{row['source']}]")
    return ExitCode.OK
