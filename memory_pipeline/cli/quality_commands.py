"""``memory-pipeline questions`` (a memory's labelled questions: add, list, remove, import) and
``memory-pipeline quality`` (score them as the ``retrieval_quality`` asset does; ``--csv``).

Each command's options live here beside its handler (``questions_options``, ``quality_options``)."""

from __future__ import annotations

import argparse
import sys

from memory_pipeline.cli.arguments import switch, whole_number
from memory_pipeline.cli.common import err, open_memory, print_json
from memory_pipeline.errors import ExitCode, InputError


def questions_options(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="questions_command", required=True, metavar="ACTION")
    a = actions.add_parser("add", help="save a question and what answers it")
    a.add_argument("question")
    a.add_argument("--memory", required=True)
    a.add_argument(
        "--expect",
        required=True,
        metavar="ID",
        help="the episode id that answers it, or source:KEY, observation:ID, belief:ID",
    )
    a.add_argument("--author", default="", help="who labelled it (a person, an agent)")
    switch(a, "--json", "print a JSON report")
    a = actions.add_parser("list", help="the labelled questions, oldest first")
    a.add_argument("--memory", help="only this memory")
    switch(a, "--json", "print a JSON document")
    a = actions.add_parser("remove", help="delete questions by id")
    a.add_argument("ids", nargs="+", type=whole_number, metavar="ID")
    a.add_argument("--memory", required=True)
    a = actions.add_parser(
        "import",
        help="save questions from a JSONL file (or a JSON array): question, memory, "
        "expect or expect_title",
    )
    a.add_argument("path")
    a.add_argument("--memory", help="memory for lines that do not name one")
    a.add_argument("--author", default="")
    switch(a, "--json", "print a JSON report")


def cmd_questions(args) -> int:
    return {
        "add": _add,
        "list": _list,
        "remove": _remove,
        "import": _import,
    }[args.questions_command](args)


def _add(args) -> int:
    item = {"question": args.question, "expect": args.expect}
    with open_memory() as mem:
        report = mem.add_questions([("--expect", item)], memory=args.memory, author=args.author)
    if report.rejections:
        raise InputError(report.rejections[0].reason)
    if args.json:
        print_json(report.to_json())
    else:
        how = "saved" if report.new else "moved"
        print(f"{how} question #{report.saved_ids[0]} of memory '{args.memory}'")
    return ExitCode.OK


def _list(args) -> int:
    with open_memory(read_only=True) as mem:
        listed = mem.questions(args.memory)
    if args.json:
        print_json({"questions": [q.to_json() for q in listed]})
        return ExitCode.OK
    for q in listed:
        print(f"#{q.id} [{q.memory}] {q.question}  ->  {q.expect} ({q.expected or '?'})")
    if not listed:
        print("no labelled questions" + (f" in memory '{args.memory}'" if args.memory else ""))
    return ExitCode.OK


def _remove(args) -> int:
    with open_memory() as mem:
        removed = mem.remove_questions(args.memory, args.ids)
    missing = sorted(set(args.ids) - set(removed))
    print(f"removed {len(removed)} question(s)")
    if missing:
        raise InputError(
            f"memory '{args.memory}' has no question {', '.join(f'#{i}' for i in missing)}"
        )
    return ExitCode.OK


def _import(args) -> int:
    from memory_pipeline.memory import read_question_file

    try:
        items = read_question_file(args.path)
    except OSError as exc:
        raise InputError(f"{args.path}: {exc.strerror or exc}") from None
    with open_memory() as mem:
        report = mem.add_questions(items, memory=args.memory, author=args.author)
    for rejection in report.rejections:
        err(str(rejection))
    if args.json:
        print_json(report.to_json())
    else:
        print(
            f"saved {len(report.saved_ids)} question(s) ({report.new} new), "
            f"{len(report.rejections)} rejected"
        )
    return ExitCode.INPUT_REJECTED if report.rejections else ExitCode.OK


def quality_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory", help="only this memory")
    p.add_argument(
        "--csv",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the figures as CSV (to PATH, or stdout); PATH-misses.csv gets the misses",
    )
    switch(p, "--json", "print a JSON document")


def cmd_quality(args) -> int:
    from memory_pipeline.memory import figures_frame, markdown, misses_frame

    with open_memory(read_only=True) as mem:
        scored = mem.score_questions(args.memory)
    if args.json:
        print_json({"memories": [one.to_json() for one in scored]})
        return ExitCode.OK
    figures, misses = figures_frame(scored), misses_frame(scored)
    if args.csv is not None:
        return _write_csv(args.csv, figures, misses)
    if not scored:
        print("no labelled questions: add some with `memory-pipeline questions add`")
        return ExitCode.OK
    print(markdown(figures))
    print(f"\nmisses ({len(misses)}):")
    print(markdown(misses))
    return ExitCode.OK


def _write_csv(path: str, figures, misses) -> int:
    if path == "-":
        figures.to_csv(sys.stdout, index=False)
        return ExitCode.OK
    stem = path[:-4] if path.endswith(".csv") else path
    try:
        figures.to_csv(path, index=False)
        misses.to_csv(f"{stem}-misses.csv", index=False)
    except OSError as exc:
        raise InputError(f"--csv {path}: {exc.strerror or exc}") from None
    print(f"wrote {path} and {stem}-misses.csv")
    return ExitCode.OK
