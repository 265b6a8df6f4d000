"""Episodes in and out: ``ingest`` (files to episodes), ``episodes`` (a memory's current ones,
newest first), ``history`` (every revision of an episode's source), ``read`` (one page) and
``forget``; and how episode ids are shown in human output."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from memory_pipeline.cli.arguments import switch, whole_number
from memory_pipeline.cli.common import err, open_memory, print_json, print_warnings, validated
from memory_pipeline.cli.progress import ProgressDisplay
from memory_pipeline.domain.episodes import validate_kind, validate_memory_name
from memory_pipeline.errors import ExitCode, InputError


def id_ranges(ids: Sequence[int], *, at_most: int = 20) -> str:
    """Ids as runs ("#3-#7, #9"), sorted; past ``at_most`` runs, how many more."""
    runs: list[list[int]] = []
    for episode_id in sorted(ids):
        if runs and episode_id == runs[-1][1] + 1:
            runs[-1][1] = episode_id
        else:
            runs.append([episode_id, episode_id])
    shown = [f"#{a}" if a == b else f"#{a}-#{b}" for a, b in runs[:at_most]]
    more = f" and {len(runs) - at_most} more run(s)" if len(runs) > at_most else ""
    return ", ".join(shown) + more


def episodes_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory", required=True, help="the memory to list")
    p.add_argument(
        "--limit", type=whole_number, default=50, help="at most this many (1-1000, default 50)"
    )
    p.add_argument("--before", type=whole_number, metavar="ID", help="the page after episode ID")
    switch(p, "--json", "print a JSON document")


def cmd_episodes(args) -> int:
    with open_memory() as mem:
        rows = mem.episodes(args.memory, limit=args.limit, before=args.before)
    if args.json:
        print_json({"memory": args.memory, "episodes": [r.to_json() for r in rows]})
        return ExitCode.OK
    for r in rows:
        revisions = f", {r.revisions} revisions" if r.revisions > 1 else ""
        print(
            f"#{r.id}  {r.occurred_at.date().isoformat()}  {r.kind}  {r.title}  "
            f"({r.source or 'no source'}{revisions})"
        )
    if len(rows) == args.limit:
        print(f"more: memory-pipeline episodes --memory {args.memory} --before {rows[-1].id}")
    elif not rows:
        print(f"no current episodes in {args.memory!r}")
    return ExitCode.OK


def history_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "episode", type=whole_number, metavar="EPISODE_ID", help="any revision of the source"
    )
    switch(p, "--json", "print a JSON document")


def cmd_history(args) -> int:
    with open_memory() as mem:
        document = mem.history(args.episode).to_json()
    if args.json:
        print_json(document)
        return ExitCode.OK
    source = document["sourceId"]
    print(
        f"{len(document['revisions'])} revision(s) of "
        + (f"{source!r}" if source else f"episode #{args.episode} (no source identity)")
        + f" in {document['memory']!r}, newest first"
    )
    for r in document["revisions"]:
        state = (
            "current"
            if r["current"]
            else f"superseded {r['supersededAt'][:19]}"
            + (f" by #{r['supersededBy']}" if r["supersededBy"] is not None else "")
        )
        print(
            f"#{r['id']}  ingested {r['ingestedAt'][:19]}  {state}  {r['title']}  "
            f"({r['characters']:,} characters)"
        )
    return ExitCode.OK


def ingest_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--memory", help="memory for files that do not name one")
    p.add_argument("--kind", help="kind for files that do not name one (default: note)")
    switch(p, "--json", "print a JSON report")


def cmd_ingest(args) -> int:
    memory = validated(args.memory, validate_memory_name, "--memory")
    kind = validated(args.kind, validate_kind, "--kind")
    with open_memory() as mem, ProgressDisplay() as show:
        report = mem.ingest(args.paths, memory=memory, kind=kind, on_progress=show)
        for rejection in report.rejections:
            err(str(rejection))
        print_warnings(mem)
    if args.json:
        print_json(report.to_json())
    else:
        print(report.summary())
        if report.inserted_ids:
            print("new episodes: " + id_ranges(report.inserted_ids))
    return ExitCode.INPUT_REJECTED if report.rejections else ExitCode.OK


def read_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("episode", type=whole_number, metavar="EPISODE_ID")
    p.add_argument(
        "--page",
        type=whole_number,
        default=1,
        help="the page, from 1 (stderr says how many there are)",
    )
    switch(p, "--json", "print the page document as JSON")


def cmd_read(args) -> int:
    """The page's text on stdout, exactly (pages 1..N concatenated are the body), and where it
    lies on stderr; ``--json`` the whole page document."""
    with open_memory(read_only=True) as mem:
        page = mem.read(args.episode, page=args.page).to_json()
    if args.json:
        print_json(page)
        return ExitCode.OK
    sys.stdout.write(page["text"])
    sys.stdout.flush()
    err(
        f"episode {page['id']} {page['title']!r} ({page['memory']}): page {page['page']} of "
        f"{page['pages']}, characters {page['start']} to {page['end']} of {page['characters']}"
    )
    return ExitCode.OK


def forget_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--memory", required=True, help="the memory the episode belongs to (or to forget whole)"
    )
    p.add_argument(
        "--episode",
        type=whole_number,
        metavar="ID",
        help="the episode id (from search results or ingest --json)",
    )
    switch(p, "--all", "forget every episode of the memory")
    switch(p, "--json", "print what was deleted as JSON")


def cmd_forget(args) -> int:
    if args.episode is None and not args.all:
        raise InputError("say what to forget: --episode ID, or --all for the whole memory")
    if args.episode is not None and args.all:
        raise InputError("--episode and --all exclude each other")
    with open_memory() as mem:
        counts = mem.forget(args.memory, episode_id=args.episode)
        print_warnings(mem)
    if args.json:
        print_json({"memory": args.memory, "episodeId": args.episode, "deleted": counts.to_json()})
    else:
        what = (
            f"episode {args.episode} of {args.memory!r}"
            if args.episode is not None
            else f"memory {args.memory!r}"
        )
        print(
            f"forgot {what}: {counts.episodes} episode(s), {counts.chunks} chunk(s), {counts.vectors} vector(s), "
            f"{counts.mentions} entity mention(s), {counts.entities} entit(ies), "
            f"{counts.statements} statement(s), {counts.telemetry} telemetry row(s)"
        )
    return ExitCode.OK
