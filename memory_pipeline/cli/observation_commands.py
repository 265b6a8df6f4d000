"""``memory-pipeline observe`` and ``memory-pipeline observations``: statements about the person
or the world, saved after the close existing ones are shown (``memory_pipeline.statements``)."""

from __future__ import annotations

import argparse

from memory_pipeline.cli.arguments import switch, whole_number
from memory_pipeline.cli.common import err, open_memory, print_json, print_warnings
from memory_pipeline.errors import ExitCode, InputError


def _show_close(outcome) -> None:
    for close in outcome.close:
        similarity = "" if close.similarity is None else f" cosine {close.similarity:.3f}"
        o = close.observation
        print(f"  #{o.id} {o.kind} ({o.status}, by {close.by}{similarity}): {o.text}")


def observe_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", help='the statement, e.g. "Mara\'s running coach is Inês"')
    p.add_argument("--memory", required=True)
    p.add_argument("--kind", choices=("observation", "belief"), default="observation")
    switch(p, "--contested", "save a belief as contested")
    p.add_argument("--confidence", type=float, default=1.0, help="0..1 (default 1)")
    p.add_argument(
        "--episode",
        type=whole_number,
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
    switch(p, "--add-anyway", "save it even though close statements exist")
    p.add_argument(
        "--revise",
        type=whole_number,
        metavar="ID",
        help="replace statement ID (kept as history, retired)",
    )
    p.add_argument(
        "--valid-from", metavar="DATE", help="when it began to hold (default: when observed)"
    )
    p.add_argument(
        "--valid-until",
        metavar="DATE",
        help="when it stopped holding (default: until further notice)",
    )
    switch(p, "--force", "save even a near-exact duplicate")
    switch(p, "--json")


def cmd_observe(args) -> int:
    if args.add_anyway and args.revise is not None:
        raise InputError("--add-anyway and --revise exclude each other")
    decision = "revise" if args.revise is not None else "add" if args.add_anyway else "ask"
    with open_memory() as mem:
        # A statement may start a memory; said aloud, so a mistyped --memory does not go unseen.
        new_memory = isinstance(args.memory, str) and not mem.has_memory(args.memory)
        outcome = mem.observe(
            args.memory,
            args.text,
            kind=args.kind,
            status="contested" if args.contested else "active",
            confidence=args.confidence,
            episode_ids=args.episode or (),
            passages=args.passage or (),
            author=args.author or "",
            decision=decision,
            revise_id=args.revise,
            force=args.force,
            valid_from=args.valid_from,
            valid_until=args.valid_until,
        )
        print_warnings(mem)
    if new_memory and outcome.saved_id is not None:
        err(
            f"memory-pipeline: note: memory {args.memory!r} did not exist; this statement starts "
            f"it (`forget --memory {args.memory} --all` removes it)"
        )
    if args.json:
        print_json(outcome.to_json())
    elif outcome.action == "refused":
        print(
            f"not saved: a near-exact duplicate of #{outcome.duplicate_of} (--force saves it anyway)"
        )
        _show_close(outcome)
    elif outcome.action == "undecided":
        print(f"not saved: {len(outcome.close)} close statement(s) already exist:")
        _show_close(outcome)
        print(
            "save it next to them with --add-anyway, replace one with --revise ID, or leave it (dropped)"
        )
    else:
        print(
            f"{outcome.action} {args.kind} #{outcome.saved_id}"
            + (f" (replaces #{args.revise}, kept as history)" if args.revise is not None else "")
            + (
                "; its vector is written by the next index pass"
                if outcome.vector == "pending"
                else ""
            )
        )
        if outcome.close:
            print("close statements:")
            _show_close(outcome)
    if outcome.action == "refused":
        return ExitCode.USAGE
    return ExitCode.NOT_SAVED if outcome.action == "undecided" else ExitCode.OK


def observations_options(p: argparse.ArgumentParser) -> None:
    obs = p.add_subparsers(dest="observations_command", required=True, metavar="ACTION")
    q = obs.add_parser("list", help="a memory's statements, newest first")
    q.add_argument("--memory", required=True)
    q.add_argument("--kind", choices=("observation", "belief"))
    switch(q, "--all", "retired versions too (the history of revisions)")
    q.add_argument("--limit", type=whole_number, default=100)
    switch(q, "--json")
    q = obs.add_parser(
        "import", help='save JSONL statements {"memory", "text", "kind"?, "episode_ids"?, ...}'
    )
    q.add_argument("file")
    q.add_argument("--memory", help="memory for lines that do not name one")
    switch(q, "--force", "save near-exact duplicates too")
    switch(q, "--json")
    q = obs.add_parser("status", help="mark a statement active, contested or retired")
    q.add_argument("id", type=whole_number)
    q.add_argument("--memory", required=True)
    q.add_argument("--set", required=True, choices=("active", "contested", "retired"))


def cmd_observations(args) -> int:
    with open_memory(read_only=args.observations_command == "list") as mem:
        if args.observations_command == "import":
            outcomes, rejections = mem.import_observations(
                args.file, memory=args.memory, force=args.force
            )
            print_warnings(mem)
            saved = [o for o in outcomes if o.saved_id is not None]
            for rejection in rejections:
                err(rejection)
            if args.json:
                print_json({"saved": [o.saved_id for o in saved], "rejected": rejections})
            else:
                print(f"saved {len(saved)} statement(s), {len(rejections)} line(s) rejected")
            return ExitCode.INPUT_REJECTED if rejections else ExitCode.OK
        if args.observations_command == "status":
            mem.set_observation_status(args.memory, args.id, args.set)
            print(f"#{args.id} is now {args.set}")
            return ExitCode.OK
        rows = mem.observations(
            args.memory, kind=args.kind, with_retired=args.all, limit=args.limit
        )
    if args.json:
        print_json([o.to_json() for o in rows])
        return ExitCode.OK
    if not rows:
        print(f"no statements in {args.memory!r}")
    for o in rows:
        source = f" [episodes {', '.join(map(str, o.episode_ids))}]" if o.episode_ids else ""
        print(
            f"#{o.id} {o.kind} {o.status} {o.confidence:.2f} {o.observed_at.date()}"
            f"{_times(o)}{source}: {o.text}"
        )
    return ExitCode.OK


def _times(o) -> str:
    """When it holds and when a revision superseded it, where known: " (valid 2024-04-01 to
    2025-01-31; superseded 2026-12-06)"."""
    parts = []
    if o.valid_from is not None or o.valid_until is not None:
        start = o.valid_from.date().isoformat() if o.valid_from else "..."
        end = o.valid_until.date().isoformat() if o.valid_until else "..."
        parts.append(f"valid {start} to {end}")
    if o.superseded_at is not None:
        parts.append(f"superseded {o.superseded_at.date().isoformat()}")
    return f" ({'; '.join(parts)})" if parts else ""
