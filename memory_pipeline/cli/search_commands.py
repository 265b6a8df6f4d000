"""``memory-pipeline search`` (one query or a batch) and ``memory-pipeline entities``."""

from __future__ import annotations

import argparse
import json
import sys

from memory_pipeline.cli.arguments import switch, whole_number
from memory_pipeline.cli.common import err, open_memory, print_json, validated
from memory_pipeline.domain.entities import parse_entity_import
from memory_pipeline.domain.episodes import validate_memory_name
from memory_pipeline.domain.jsonl import (
    LineRejected,
    json_type,
    parse_object_line,
    reject_unknown_fields,
)
from memory_pipeline.domain.policies import parse_channels
from memory_pipeline.errors import ExitCode, InputError, NoDataYet
from memory_pipeline.memory import human_table, parse_as_of


def search_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", nargs="?", help="the question, in your own words")
    p.add_argument("--memory", help="the memory to search (required unless --batch)")
    p.add_argument("--policy", help="a named policy from the policies file (default: default)")
    p.add_argument("--limit", type=whole_number, help="number of results (1-50)")
    p.add_argument(
        "--channels", help="comma-separated subset of vector,keyword,graph,date,observation,belief"
    )
    p.add_argument(
        "--contested",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="include beliefs marked contested (--no-contested leaves them out; default: the policy's)",
    )
    switch(
        p,
        "--history",
        "also superseded revisions holding the query's words, after the results, marked superseded",
    )
    p.add_argument(
        "--as-of",
        metavar="DATE",
        help="what was in force then: episodes occurred by DATE (YYYY-MM-DD: its end; or an ISO "
        "8601 date-time), the revisions current and the statements valid then",
    )
    switch(
        p,
        "--passages",
        "let one episode hold several results (default: each episode once, by its best passage)",
    )
    switch(p, "--json", "print the stable JSON document")
    p.add_argument(
        "--batch",
        metavar="FILE",
        help='JSON lines {"memory", "query", "policy"?, "limit"?, "channels"?, "contested"?, "history"?, "as_of"?, "passages"?} ("-" = stdin); '
        "one JSON result document a line on stdout",
    )


def cmd_search(args) -> int:
    if args.batch:
        given = (args.query, args.memory, args.contested is not None, args.history, args.as_of)
        if any(given) or args.passages:
            raise InputError(
                "--batch reads memory, query, contested, history, as_of and passages from the file; "
                "give none of "
                "them on the command line"
            )
        return _batch(args.batch)
    if args.query is None:
        raise InputError("give a query (or --batch FILE)")
    if not args.memory:
        raise InputError("--memory is required: every search is inside one memory")
    try:
        opened = open_memory(read_only=True)
    except NoDataYet as nothing:
        raise InputError(f"unknown memory {args.memory!r}: {nothing}") from None
    with opened as mem:
        response = mem.search(
            args.memory,
            args.query,
            policy=args.policy,
            limit=args.limit,
            channels=validated(args.channels, parse_channels, "--channels"),
            contested_beliefs=args.contested,
            history=args.history,
            as_of=_as_of(args.as_of),
            passages=args.passages,
        )
    if args.json:
        print_json(response.to_json())
    else:
        print(human_table(response))
    return ExitCode.OK


_BATCH_FIELDS = (
    "memory", "query", "policy", "limit", "channels", "contested", "history", "as_of",
    "passages",
)  # fmt: skip


def _batch(path: str) -> int:
    """One JSON query a line in, one JSON document a line out, one process for all of them.

    A bad line produces ``{"line": N, "error": ...}`` in its place and the rest still run, so
    an evaluation over thousands of queries never loses the good ones to one typo. Lines are
    read as bytes and decoded one by one: invalid UTF-8 costs only its own line.
    """
    try:
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"--batch {path!r}: cannot read: {exc.strerror or exc}") from None
    mem = open_memory(read_only=True)
    failures = 0
    with stream, mem:
        for number, raw in enumerate(stream, 1):
            if not raw.strip():
                continue
            try:
                response = _batch_search(mem, raw.rstrip(b"\r\n"))
                document = {"line": number, **response.to_json()}
            except (InputError, LineRejected) as exc:
                failures += 1
                document = {"line": number, "error": str(exc)}
            sys.stdout.write(_json_line(document))
            sys.stdout.flush()
    if failures:
        err(f'memory-pipeline: {failures} query line(s) failed; see their "error" documents')
    return ExitCode.INPUT_REJECTED if failures else ExitCode.OK


def _batch_search(mem, raw: bytes):
    item = parse_object_line(raw)
    reject_unknown_fields(item, _BATCH_FIELDS)
    if "memory" not in item or "query" not in item:
        raise InputError("'memory' and 'query' are required")
    for name in ("memory", "policy"):
        if item.get(name) is not None and not isinstance(item[name], str):
            raise InputError(f"'{name}' must be a {name} name, got {json_type(item[name])}")
    channels = item.get("channels")
    if isinstance(channels, list) and all(isinstance(c, str) for c in channels):
        channels = ",".join(channels)
    elif channels is not None and not isinstance(channels, str):
        raise InputError(
            f"'channels' must be a name or a list of names, got {json.dumps(channels)[:60]}"
        )
    limit = item.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise InputError("'limit' must be a whole number")
    contested = item.get("contested")
    if contested is not None and not isinstance(contested, bool):
        raise InputError(f"'contested' must be true or false, got {json_type(contested)}")
    history, passages = item.get("history", False), item.get("passages", False)
    for name, flag in (("history", history), ("passages", passages)):
        if not isinstance(flag, bool):
            raise InputError(f"'{name}' must be true or false, got {json_type(flag)}")
    return mem.search(
        item["memory"],
        item["query"],
        policy=item.get("policy"),
        limit=limit,
        channels=validated(channels, parse_channels, "--channels"),
        contested_beliefs=contested,
        history=history,
        as_of=item.get("as_of"),
        passages=passages,
    )


def _as_of(text: str | None) -> str | None:
    """``--as-of`` as given; a bad date is reported under the flag's name."""
    if text is None:
        return None
    try:
        parse_as_of(text)
    except InputError as exc:
        raise InputError(f"--as-of: {str(exc).removeprefix('as_of ')}") from None
    return text


def _json_line(document: dict) -> str:
    text = json.dumps(document, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a message: escaped, never a raw byte
        text = json.dumps(document, ensure_ascii=True, default=str)
    return text + "\n"


def entities_options(p: argparse.ArgumentParser) -> None:
    ent = p.add_subparsers(dest="entities_command", required=True, metavar="ACTION")
    q = ent.add_parser("import", help='import JSONL entities {"memory", "name", "aliases"?}')
    q.add_argument("file")
    q.add_argument("--memory", help="memory for lines that do not name one")
    switch(q, "--json")
    q = ent.add_parser("list", help="a memory's entities with their mention counts")
    q.add_argument("--memory", required=True)
    switch(q, "--json")


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
        with open_memory() as mem:
            report = mem.import_entities(pairs)
        summary = {
            "imported": report.imported,
            "merged": report.merged,
            "mentionsAdded": report.mentions_added,
            "rejected": [str(r) for r in rejections],
        }
        if args.json:
            print_json(summary)
        else:
            print(
                f"{report.imported} new entit(ies), {report.merged} merged, {report.mentions_added} new mention "
                f"link(s), {len(rejections)} rejected"
            )
        return ExitCode.INPUT_REJECTED if rejections else ExitCode.OK
    with open_memory(read_only=True) as mem:
        rows = mem.entities(args.memory, limit=10_000)
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            aliases = f" ({row['aliases']})" if row["aliases"] else ""
            print(f"{row['episodes']:>5}  {row['entity']}{aliases}  [{row['source']}]")
    return ExitCode.OK
