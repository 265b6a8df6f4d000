"""``episodes`` (a memory's current episodes, newest first) and ``history`` (every revision of an
episode's source), and how episode ids are shown in other commands' human output."""

from __future__ import annotations

from collections.abc import Sequence

from memory_pipeline.cli.common import open_memory, print_json
from memory_pipeline.errors import ExitCode


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
