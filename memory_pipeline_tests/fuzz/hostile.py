"""Hostile inputs and the checks they must pass, shared by the fuzz tests and scripts/fuzz_hostile.py.

Generators (hypothesis strategies):
* ``ingest_cases``: a folder of files (JSONL, Markdown with front matter, text) whose names and
  bytes are of every kind, each record either valid (and then known: memory and body) or broken
  by one of the ways real files break (invalid UTF-8, NUL, overflowing numbers, YAML alias bombs,
  wrong types, unknown fields, truncated JSON, random bytes...);
* ``batch_lines``: ``search --batch`` lines, valid or hostile, and ``queries``: query texts.

Checks run the real ``memory-pipeline`` entry point (``cli.main.main``) in-process and return a
list of problems (empty: the case passed) rather than raising, so that a long run counts every
failing case instead of stopping at the first. What they assert: the exit code docs/cli.md's
table gives, no traceback, JSON output that is strict UTF-8, every valid record stored exactly
once, every broken one rejected at ``FILE:LINE``, and no search result from another memory.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import subprocess
import sys
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from hypothesis import strategies as st

from memory_pipeline.cli.main import main

MEMORIES = ("fuzz-a", "fuzz-b")

# -- text -------------------------------------------------------------------------------------
# Storable text: anything but NUL and lone surrogates (which PostgreSQL cannot hold).
_storable = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
bodies = st.text(_storable, min_size=1, max_size=300).filter(str.strip)
titles = st.text(_storable, min_size=1, max_size=80).filter(lambda t: t.strip() and "\n" not in t)
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_storable, max_size=20)
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(_storable, max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
metadata = st.dictionaries(st.text(_storable, min_size=1, max_size=10), _json_values, max_size=4)
dates = st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 1, 1)).map(str)


@dataclass(frozen=True)
class Record:
    memory: str
    body: str


@dataclass
class SourceFile:
    name: bytes  # the file name's bytes, suffix included
    content: bytes
    valid: list[Record] = field(default_factory=list)
    bad_lines: list[int] = field(default_factory=list)  # 1-based lines that must be rejected


# -- JSONL ------------------------------------------------------------------------------------
@st.composite
def valid_jsonl_record(draw) -> tuple[bytes, Record]:
    record = {
        "memory": draw(st.sampled_from(MEMORIES)),
        "kind": draw(st.sampled_from(("note", "journal", "chat"))),
        "title": draw(titles),
        "occurred_at": draw(dates),
        "body": draw(bodies),
    }
    if draw(st.booleans()):
        record["salience"] = draw(st.floats(0, 1) | st.sampled_from([0, 1]))
    if draw(st.booleans()):
        record["metadata"] = draw(metadata)
    return json.dumps(record, ensure_ascii=draw(st.booleans())).encode(), Record(
        record["memory"], record["body"]
    )


_CORRUPTIONS = (
    lambda r: {**r, "salience": "OVERFLOW"},
    lambda r: {**r, "salience": -1e-9},
    lambda r: {k: v for k, v in r.items() if k != "body"},
    lambda r: {**r, "body": " \n\t "},
    lambda r: {**r, "body": r["body"] + "\x00"},
    lambda r: {**r, "title": "\ud800" + r["title"]},
    lambda r: {**r, "title": ["not", "text"]},
    lambda r: {**r, "occurred_at": "the day after tomorrow"},
    lambda r: {**r, "memory": "not a memory!"},
    lambda r: {**r, "titel": r["title"]},
    lambda r: {**r, "metadata": {"deep": _nested(70)}},
    lambda r: {**r, "metadata": {"n": float("inf")}},
)


def _nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def hostile_jsonl_line(draw) -> bytes:
    raw, _ = draw(valid_jsonl_record())
    how = draw(st.integers(0, len(_CORRUPTIONS) + 3))
    if how < len(_CORRUPTIONS):
        line = json.dumps(_CORRUPTIONS[how](json.loads(raw)), allow_nan=True)
        return line.replace('"OVERFLOW"', "1" + "0" * draw(st.integers(309, 4000))).encode()
    if how == len(_CORRUPTIONS):  # an invalid UTF-8 byte inside the body
        cut = raw.index(b'"body"') + 9
        return (
            raw[:cut]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]))
            + raw[cut:]
        )
    if how == len(_CORRUPTIONS) + 1:  # truncated
        return raw[: draw(st.integers(1, len(raw) - 1))]
    if how == len(_CORRUPTIONS) + 2:  # a duplicated key
        return raw[:-1] + b', "body": "again"}'
    junk = draw(st.binary(min_size=1, max_size=80).filter(lambda b: b.strip() and b"\n" not in b))
    return b"\x01" + junk  # never JSON: a control character cannot start a JSON text


# -- Markdown and text ------------------------------------------------------------------------
# What YAML reads in a double-quoted scalar without escapes (it refuses C1 controls, U+FFFE...).
_yaml_printable = st.characters(min_codepoint=0x20, max_codepoint=0xFFFD).filter(
    lambda c: c != "\x7f" and not 0x80 <= ord(c) <= 0x9F and not 0xD800 <= ord(c) <= 0xDFFF
)
yaml_titles = st.text(_yaml_printable, min_size=1, max_size=60).filter(str.strip)


def _stored_body(body: str) -> str:
    return body.replace("\r\n", "\n")  # one line ending for all (domain.sources)


@st.composite
def markdown_file(draw, name: bytes) -> SourceFile:
    memory = draw(st.sampled_from(MEMORIES))
    body = draw(bodies)
    front = [
        f"memory: {memory}",
        f"title: {json.dumps(draw(yaml_titles), ensure_ascii=False)}",
        f"date: {draw(dates)}",
    ]
    if draw(st.booleans()):
        front.append(f"salience: {draw(st.floats(0, 1))}")
    if draw(st.booleans()):
        front.append(
            f"tags: {json.dumps(draw(st.lists(yaml_titles, max_size=3)), ensure_ascii=False)}"
        )
    hostile = draw(st.integers(0, 9))
    bad_line = 0  # 0: valid; -1: rejected at a line the check does not pin down
    if hostile == 1:
        front.append("salience: 1" + "0" * draw(st.integers(309, 4000)))
        bad_line = len(front) + 1
    elif hostile == 2:  # billion laughs
        front.append('a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
        for i in range(1, draw(st.integers(5, 12)) + 1):
            front.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
        bad_line = -1
    elif hostile == 3:
        front.append("broken: [unclosed")
        bad_line = -1
    elif hostile == 4:
        front.append("self: &s [1, *s]")
        bad_line = len(front) + 1
    elif hostile == 5:
        front[2] = "date: 2024-13-45"
        bad_line = 4
    content = ("---\n" + "\n".join(front) + "\n---\n" + body).encode("utf-8")
    if hostile == 6:
        content += b"\n\xff tail"
        bad_line = -1
    elif hostile == 7:
        content = ("---\n" + "\n".join(front) + "\nno closing fence\n").encode("utf-8")
        bad_line = 1
    if bad_line:
        return SourceFile(name, content, bad_lines=[bad_line])
    return SourceFile(name, content, valid=[Record(memory, _stored_body(body))])


@st.composite
def text_file(draw, name: bytes) -> SourceFile:
    body = draw(bodies)
    hostile = draw(st.integers(0, 5))
    if hostile == 1:
        return SourceFile(name, body.encode() + b"\x00", bad_lines=[-1])
    if hostile == 2:
        return SourceFile(name, b"\xfe" + body.encode(), bad_lines=[1])
    if hostile == 3:
        return SourceFile(name, b"  \n\n ", bad_lines=[1])
    stored = _stored_body(body.removeprefix("\ufeff"))  # a leading BOM is not text
    if not stored.strip():
        return SourceFile(name, body.encode("utf-8"), bad_lines=[1])
    return SourceFile(name, body.encode("utf-8"), valid=[Record("fuzz-a", stored)])


# -- names ------------------------------------------------------------------------------------
_name_bytes = st.binary(min_size=1, max_size=30).filter(
    lambda b: b"/" not in b and b"\x00" not in b and not b.startswith(b".")
)
_name_text = (
    st.text(
        st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
        min_size=1,
        max_size=30,
    )
    .filter(lambda t: not t.startswith("."))
    .map(lambda t: t.encode("utf-8"))
)


@st.composite
def ingest_cases(draw) -> list[SourceFile]:
    """One to four files with distinct names; for each, what must be stored and rejected."""
    files: list[SourceFile] = []
    used: set[bytes] = set()
    for index in range(draw(st.integers(1, 4))):
        suffix = draw(st.sampled_from([b".jsonl", b".md", b".txt"]))
        stem = draw(_name_bytes | _name_text)
        name = b"%d-" % index + stem + suffix  # a prefix keeps names distinct (and sorted)
        if name in used or len(name) > 200:
            continue
        used.add(name)
        if suffix == b".jsonl":
            lines: list[bytes] = []
            source = SourceFile(name, b"")
            for number in range(1, draw(st.integers(1, 6)) + 1):
                if draw(st.integers(0, 2)) == 0:
                    lines.append(draw(hostile_jsonl_line()))
                    source.bad_lines.append(number)
                else:
                    raw, record = draw(valid_jsonl_record())
                    lines.append(raw)
                    source.valid.append(record)
            ending = draw(st.sampled_from([b"\n", b"\r\n"]))
            source.content = ending.join(lines) + ending
            files.append(source)
        elif suffix == b".md":
            files.append(draw(markdown_file(name)))
        else:
            files.append(draw(text_file(name)))
    return files


# -- batch lines and queries ------------------------------------------------------------------
queries = st.text(st.characters(), min_size=0, max_size=120)


@st.composite
def batch_lines(draw) -> list[bytes]:
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.integers(0, 6))
        item: dict = {"memory": draw(st.sampled_from(MEMORIES)), "query": draw(queries)}
        if kind == 1:
            item["policy"] = draw(
                st.sampled_from(["", "default", "recent", "nope"])
                | st.lists(st.text(max_size=3), max_size=2)
            )
        elif kind == 2:
            item["limit"] = draw(st.integers(-3, 80) | st.floats() | st.text(max_size=3))
        elif kind == 3:
            item["channels"] = draw(
                st.sampled_from(["keyword", "keyword,graph", "vector,keyword", ""])
                | st.lists(st.integers() | st.text(max_size=8), max_size=3)
            )
        elif kind == 4:
            item["memory"] = draw(st.text(max_size=10) | st.integers() | st.none())
        line = json.dumps(item, ensure_ascii=draw(st.booleans()))
        raw = line.encode("utf-8", "surrogatepass")
        if kind == 5:
            raw = draw(st.binary(max_size=60))
        elif kind == 6:
            raw = raw[: draw(st.integers(0, len(raw)))] + draw(st.binary(max_size=4))
        lines.append(raw.replace(b"\n", b" ").replace(b"\r", b" "))
    return lines


# -- running the real entry point -------------------------------------------------------------
@dataclass
class Outcome:
    code: int | None
    out: str
    err: str
    crash: str = ""  # the traceback of an exception main() let through (a bug)


def run_main(argv: list[str], env: dict[str, str]) -> Outcome:
    """``memory-pipeline ARGV`` in this process with ``env`` added to the environment."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    out, err = io.StringIO(), io.StringIO()
    code, crash = None, ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # noqa: BLE001 - a crash is what the check reports
        crash = traceback.format_exc()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return Outcome(code, out.getvalue(), err.getvalue(), crash)


def run_script(argv: list[str], env: dict[str, str]) -> Outcome:
    """The same through the installed console script in a child process (the real exit path)."""
    script = Path(sys.executable).with_name("memory-pipeline")
    proc = subprocess.run(
        [str(script), *argv], env={**os.environ, **env}, capture_output=True, timeout=300
    )
    # Decoded strictly: a raw byte that is not UTF-8 on stdout is a problem the check reports.
    out = proc.stdout.decode("utf-8", "surrogateescape")
    return Outcome(proc.returncode, out, proc.stderr.decode("utf-8", "replace"))


def _output_problems(what: str, outcome: Outcome) -> list[str]:
    problems = []
    if outcome.crash:
        problems.append(f"{what}: traceback\n{outcome.crash}")
    if "Traceback" in outcome.err:
        problems.append(f"{what}: traceback on stderr\n{outcome.err}")
    for stream in (outcome.out, outcome.err):
        try:
            stream.encode("utf-8")
        except UnicodeEncodeError as exc:
            problems.append(f"{what}: output is not UTF-8 ({exc})")
    return problems


def check_ingest(
    files: list[SourceFile], folder: Path, db_url: str, env: dict[str, str], runner=run_main
) -> list[str]:
    """Write ``files`` under a fresh ``folder``, ingest it with ``--json``; every problem found."""
    tag = uuid.uuid4().hex[:8]
    suffixed = {m: f"{m}-{tag}" for m in MEMORIES}  # this case's own memories in a shared database
    folder.mkdir(parents=True)
    for source in files:
        content = source.content
        for plain, own in suffixed.items():
            content = content.replace(plain.encode(), own.encode())
        with open(os.path.join(os.fsencode(folder), source.name), "wb") as handle:
            handle.write(content)
    # --memory is the default for the text files (JSONL lines and front matter name their own).
    outcome = runner(["ingest", str(folder), "--json", "--memory", suffixed["fuzz-a"]], env)
    problems = _output_problems("ingest", outcome)
    expected_bad = sum(len(f.bad_lines) for f in files)
    expected_code = 3 if expected_bad else 0
    if outcome.code != expected_code:
        problems.append(
            f"ingest: exit {outcome.code}, expected {expected_code}\n{outcome.err[-2000:]}"
        )
    if outcome.code in (0, 3):
        try:
            doc = json.loads(outcome.out)
        except ValueError as exc:
            return problems + [f"ingest --json: not JSON ({exc})"]
        if len(doc["rejected"]) != expected_bad:
            problems.append(
                f"ingest: {len(doc['rejected'])} rejections, expected {expected_bad}: {doc['rejected']}"
            )
        for source in files:
            shown = (
                os.fsdecode(source.name)
                .encode("utf-8", "surrogateescape")
                .decode("utf-8", "backslashreplace")
            )
            located = sorted(
                int(r["location"].rsplit(":", 1)[1])
                for r in doc["rejected"]
                if r["location"].rsplit(":", 1)[0] == str(folder) + "/" + shown
            )
            wanted = sorted(line for line in source.bad_lines if line > 0)
            if len(located) != len(source.bad_lines) or (
                wanted and [n for n in located if n in wanted] != wanted
            ):
                problems.append(
                    f"{shown}: rejected at lines {located}, expected {source.bad_lines}"
                )
    stored = _stored(db_url, list(suffixed.values()))
    expected = {(suffixed[r.memory], r.body) for f in files for r in f.valid}
    if sorted(stored) != sorted(expected):
        missing = expected - set(stored)
        extra = [s for s in stored if s not in expected or stored.count(s) > 1]
        problems.append(
            f"stored episodes differ: {len(missing)} valid record(s) missing, {len(extra)} unexpected or repeated"
        )
    return problems


def _stored(db_url: str, memories: list[str]) -> list[tuple[str, str]]:
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT memory, body FROM episodes WHERE memory = ANY(%s)", (memories,)
        ).fetchall()
    return [(m, b) for m, b in rows]


def check_batch(
    lines: list[bytes], batch_file: Path, memory_episodes: dict[str, set[int]], env: dict[str, str]
) -> list[str]:
    """Run ``search --batch`` over ``lines``; each non-blank line must be answered once, in order,
    with an error or with results of the memory it named only."""
    batch_file.write_bytes(b"\n".join(lines) + b"\n")
    outcome = run_main(["search", "--batch", str(batch_file)], env)
    problems = _output_problems("search --batch", outcome)
    expected_lines = [i for i, line in enumerate(lines, 1) if line.strip()]
    try:
        # Split at "\n" only: the output is JSON lines, and JSON text may hold U+2028 or U+0085,
        # which str.splitlines() would also break at.
        documents = [json.loads(line) for line in outcome.out.split("\n") if line]
    except ValueError as exc:
        return problems + [f"search --batch: a line of output is not JSON ({exc})"]
    if [d.get("line") for d in documents] != expected_lines:
        problems.append(
            f"search --batch answered lines {[d.get('line') for d in documents]}, expected {expected_lines}"
        )
    failures = sum(1 for d in documents if "error" in d)
    expected_code = 3 if failures else 0
    if outcome.code != expected_code:
        problems.append(
            f"search --batch: exit {outcome.code}, expected {expected_code}\n{outcome.err[-1000:]}"
        )
    for document in documents:
        if "error" in document:
            if not isinstance(document["error"], str) or not document["error"]:
                problems.append(f"line {document.get('line')}: an empty error")
            continue
        own = memory_episodes.get(document.get("memory"), set())
        foreign = [r["episodeId"] for r in document.get("results", []) if r["episodeId"] not in own]
        if foreign:
            problems.append(
                f"line {document['line']}: episodes {foreign} are not in memory {document.get('memory')!r}"
            )
    return problems


def check_query(
    query: str, memory: str, memory_episodes: dict[str, set[int]], env: dict[str, str]
) -> list[str]:
    """One ``search QUERY --memory M --json``: exit 0 with results of M only, or exit 2."""
    # After "--": a query that starts with "-" is text, not an option (as a shell user writes it).
    outcome = run_main(["search", "--memory", memory, "--json", "--", query], env)
    problems = _output_problems("search", outcome)
    if outcome.code not in (0, 2):
        problems.append(f"search {query!r}: exit {outcome.code}\n{outcome.err[-1000:]}")
    if outcome.code == 0:
        doc = json.loads(outcome.out)
        foreign = [
            r["episodeId"] for r in doc["results"] if r["episodeId"] not in memory_episodes[memory]
        ]
        if foreign:
            problems.append(f"search {query!r}: episodes {foreign} are not in memory {memory!r}")
    elif (
        outcome.code == 2
        and not outcome.err.startswith("memory-pipeline: ")
        and "memory-pipeline: error:" not in outcome.err
    ):
        problems.append(f"search {query!r}: exit 2 without a plain message: {outcome.err[-500:]}")
    return problems


def memory_episodes(db_url: str, memories: list[str]) -> dict[str, set[int]]:
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT memory, id FROM episodes WHERE memory = ANY(%s)", (memories,)
        ).fetchall()
    found: dict[str, set[int]] = {m: set() for m in memories}
    for memory, episode_id in rows:
        found[memory].add(episode_id)
    return found
