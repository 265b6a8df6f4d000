"""Tests for parsing episode source files into drafts and located rejections."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.domain.sources import SUPPORTED_SUFFIXES, ParseResult, Rejection, parse_paths

UTC = UTC
MTIME = 1_700_000_000  # 2023-11-14T22:13:20Z
MTIME_AT = datetime.fromtimestamp(MTIME, tz=UTC)


def line(**fields) -> bytes:
    base = {
        "memory": "alice",
        "kind": "note",
        "title": "A title",
        "occurred_at": "2024-05-01T10:00:00Z",
        "body": "A body.",
    }
    base.update(fields)
    return json.dumps(
        {k: v for k, v in base.items() if v is not _DROP}, ensure_ascii=False
    ).encode()


_DROP = object()


def write(path: Path, content: str | bytes, *, mtime: int | None = MTIME) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(content)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def messages(result: ParseResult) -> list[str]:
    return [str(rejection) for rejection in result.rejections]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run from tmp_path so files can be named relatively, as a user would type them."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_rejection_reads_as_location_colon_reason():
    assert str(Rejection("inbox.jsonl:12", "empty body")) == "inbox.jsonl:12: empty body"


def test_jsonl_bad_lines_are_rejected_where_they_are_and_valid_lines_survive(in_tmp):
    lines = [
        line(title="First", body="one"),  # 1
        b'{"title": "x",}',  # 2
        b"",  # 3: blank, skipped
        line(body=_DROP),  # 4
        line(body="  \n\t "),  # 5
        line(occurred_at="yesterday"),  # 6
        json.dumps({**json.loads(line()), "body": "before\u0000after"}).encode(),  # 7
        line(body="caf").replace(b'"caf"', b'"caf\xe9"'),  # 8: Latin-1 byte, not UTF-8
        line(salience=1.5),  # 9
        line(salience=-0.1),  # 10
        line(salience="high"),  # 11
        line(salience=True),  # 12
        line(title=_DROP),  # 13
        line(tags=["x"]),  # 14
        b"[1, 2]",  # 15
        line(
            title="Встреча 🚀",
            body="Обсудили план. 🎉\nВторая строка.",
            occurred_at="2024-05-02T12:00:00+03:00",
            salience=0.9,
            source="chat:42",
            metadata={"tags": ["работа"], "n": 1},
            id="msg-7",
            kind="chat",
        ),  # 16
        b"   ",  # 17: whitespace only, skipped
        line(title="Last", body="three", salience=0),  # 18, no final newline
    ]
    write(in_tmp / "inbox.jsonl", b"\n".join(lines))

    result = parse_paths(["inbox.jsonl"])

    invalid_utf8_at = lines[7].index(b"\xe9") + 1
    assert messages(result) == [
        "inbox.jsonl:2: malformed JSON: Expecting property name enclosed in double quotes at column 15",
        "inbox.jsonl:4: missing field 'body'",
        "inbox.jsonl:5: empty body",
        "inbox.jsonl:6: unparseable date: 'yesterday'",
        "inbox.jsonl:7: NUL character in 'body' (PostgreSQL text cannot hold it)",
        f"inbox.jsonl:8: invalid UTF-8 at byte {invalid_utf8_at} of the line (0xe9)",
        "inbox.jsonl:9: salience outside [0, 1]: 1.5",
        "inbox.jsonl:10: salience outside [0, 1]: -0.1",
        'inbox.jsonl:11: salience must be a number in [0, 1], got "high"',
        "inbox.jsonl:12: salience must be a number in [0, 1], got true",
        "inbox.jsonl:13: missing field 'title'",
        "inbox.jsonl:14: unknown field 'tags'",
        "inbox.jsonl:15: not a JSON object (got array)",
    ]
    assert result.files_read == 1
    first, middle, last = result.episodes
    assert (first.title, first.body, first.source, first.salience) == (
        "First",
        "one",
        "inbox.jsonl:1",
        0.5,
    )
    assert first.occurred_at == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert first.external_id is None and first.metadata == {}
    assert middle.memory == "alice" and middle.kind == "chat"
    assert middle.title == "Встреча 🚀"
    assert middle.body == "Обсудили план. 🎉\nВторая строка."
    assert middle.occurred_at == datetime(2024, 5, 2, 9, tzinfo=UTC)
    assert (middle.salience, middle.source, middle.external_id) == (0.9, "chat:42", "msg-7")
    assert middle.metadata == {"tags": ["работа"], "n": 1}
    assert (last.title, last.body, last.source, last.salience) == (
        "Last",
        "three",
        "inbox.jsonl:18",
        0.0,
    )


def test_jsonl_other_line_problems(in_tmp):
    write(
        in_tmp / "more.jsonl",
        b"\n".join(
            [
                b'{"title": "a", "title": "b"}',
                line(titel="typo", title=_DROP),
                line(body=_DROP, title=_DROP),
                line(metadata=["a"]),
                line(kind="Note"),
                line(id=""),
                b'{"body": "a\x00b"}',
                line(body=None, title=None, salience=None),
                b"[" * 100_000 + b"]" * 100_000,
                b'{"n": ' + b"1" * 5000 + b"}",
            ]
        ),
    )
    assert messages(parse_paths(["more.jsonl"])) == [
        "more.jsonl:1: malformed JSON: duplicate key 'title'",
        "more.jsonl:2: unknown field 'titel'",
        "more.jsonl:3: missing fields 'title', 'body'",
        "more.jsonl:4: metadata must be a JSON object, got array",
        "more.jsonl:5: invalid kind 'Note': use 1 to 40 lowercase letters, digits, '_' or '-', "
        "starting with a letter",
        "more.jsonl:6: empty 'id'",
        "more.jsonl:7: NUL character at column 12 (PostgreSQL text cannot hold it)",
        "more.jsonl:8: missing fields 'title', 'body'",
        "more.jsonl:9: malformed JSON: nested too deeply",
        "more.jsonl:10: malformed JSON: a number has too many digits",
    ]


def test_jsonl_memory_and_kind_arguments_are_defaults_a_line_can_override(in_tmp):
    write(
        in_tmp / "mixed.jsonl",
        b"\n".join(
            [
                line(memory=_DROP, kind=_DROP, title="defaults"),
                line(memory="carol", kind="email", title="own values"),
                line(memory=None, kind=None, title="nulls mean absent"),
            ]
        ),
    )
    result = parse_paths(["mixed.jsonl"], memory="bob", kind="journal")
    assert result.rejections == []
    assert [(e.title, e.memory, e.kind) for e in result.episodes] == [
        ("defaults", "bob", "journal"),
        ("own values", "carol", "email"),
        ("nulls mean absent", "bob", "journal"),
    ]

    without_defaults = parse_paths(["mixed.jsonl"])
    assert messages(without_defaults) == [
        "mixed.jsonl:1: missing fields 'memory', 'kind' (or pass --memory)",
        "mixed.jsonl:3: missing fields 'memory', 'kind' (or pass --memory)",
    ]
    assert [e.title for e in without_defaults.episodes] == ["own values"]


def test_invalid_default_arguments_are_refused_before_reading(in_tmp):
    with pytest.raises(ValueError, match="^invalid memory name 'no spaces'"):
        parse_paths(["missing.jsonl"], memory="no spaces")
    with pytest.raises(ValueError, match="^invalid kind 'Chat'"):
        parse_paths(["missing.jsonl"], kind="Chat")


def test_jsonl_with_bom_and_crlf_line_ends(in_tmp):
    write(
        in_tmp / "windows.jsonl",
        b"\xef\xbb\xbf"
        + line(title="one")
        + b"\r\n\r\n"
        + line(title="two", body="x\r\ny")
        + b"\r\n",
    )
    result = parse_paths(["windows.jsonl"])
    assert result.rejections == []
    assert [(e.title, e.source) for e in result.episodes] == [
        ("one", "windows.jsonl:1"),
        ("two", "windows.jsonl:3"),
    ]
    # A CR escaped inside the JSON string is content, not a line end.
    assert result.episodes[1].body == "x\r\ny"


def test_utf16_file_is_rejected_whole_with_advice(in_tmp):
    write(
        in_tmp / "utf16.jsonl", "\ufeff".encode("utf-16-le") + line().decode().encode("utf-16-le")
    )
    assert messages(parse_paths(["utf16.jsonl"])) == [
        "utf16.jsonl:1: the file is UTF-16 text; save it as UTF-8"
    ]


def test_folders_are_walked_recursively_in_sorted_order(in_tmp):
    write(in_tmp / "notes/b.md", "# B note\n\nbody b\n")
    write(in_tmp / "notes/a.txt", "text a\n")
    write(in_tmp / "notes/sub/c.jsonl", line(title="C") + b"\n" + line(title="D") + b"\n")
    write(in_tmp / "notes/sub/deeper/e.markdown", "body e\n")
    write(in_tmp / "notes/image.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    write(in_tmp / "notes/.hidden.md", "# hidden\n\nsecret\n")
    write(in_tmp / "notes/.obsidian/workspace.md", "# tool state\n")
    write(in_tmp / "notes/sub/README", "no suffix, ignored inside a folder\n")

    result = parse_paths(["notes"], memory="alice")

    assert result.rejections == []
    assert result.files_read == 4
    assert [(e.source, e.title, e.kind) for e in result.episodes] == [
        ("notes/a.txt", "a", "note"),
        ("notes/b.md", "B note", "note"),
        ("notes/sub/c.jsonl:1", "C", "note"),
        ("notes/sub/c.jsonl:2", "D", "note"),
        ("notes/sub/deeper/e.markdown", "e", "note"),
    ]


def test_explicit_paths_missing_or_unsupported_are_rejected_at_line_0(in_tmp):
    write(in_tmp / "report.odt", b"PK")
    write(in_tmp / "Makefile", "all:\n")
    write(in_tmp / ".explicit.txt", "named on purpose\n")
    result = parse_paths(["nowhere.md", "report.odt", "Makefile", ".explicit.txt"], memory="alice")
    expected = ".jsonl, .md, .markdown, .txt, .html, .htm, .pdf, .docx"
    assert messages(result) == [
        "nowhere.md:0: no such file or folder",
        f"report.odt:0: unsupported file type '.odt' (expected {expected})",
        f"Makefile:0: unsupported file type (no suffix; expected {expected})",
    ]
    # A hidden file named explicitly is read: only folder walks skip hidden files.
    assert [e.source for e in result.episodes] == [".explicit.txt"]
    assert result.files_read == 1
    assert SUPPORTED_SUFFIXES == (
        ".jsonl",
        ".md",
        ".markdown",
        ".txt",
        ".html",
        ".htm",
        ".pdf",
        ".docx",
    )


def test_a_file_named_twice_is_read_once(in_tmp):
    write(in_tmp / "notes/a.md", "body\n")
    result = parse_paths(["notes/a.md", "notes", Path("notes") / "a.md"], memory="alice")
    assert [e.source for e in result.episodes] == ["notes/a.md"]
    assert result.files_read == 1


def test_single_path_argument_is_not_iterated_character_by_character(in_tmp):
    write(in_tmp / "one.txt", "body\n")
    assert [e.title for e in parse_paths("one.txt", memory="m").episodes] == ["one"]


def test_markdown_front_matter_sets_fields_and_the_rest_becomes_metadata(in_tmp):
    text = (
        "---\n"
        "title: Поездка в Казань 🚆\n"
        "date: 2024-03-05\n"
        "kind: journal\n"
        "memory: carol\n"
        "salience: 0.8\n"
        "tags: [travel, family]\n"
        "when: 2024-03-06T10:00:00+03:00\n"
        "count: 3\n"
        "---\n"
        "# Heading stays in the body\n"
        "\n"
        "Текст заметки.\n"
    )
    write(in_tmp / "trip.md", text)
    result = parse_paths(["trip.md"], memory="alice", kind="note")
    assert result.rejections == []
    (draft,) = result.episodes
    assert draft.title == "Поездка в Казань 🚆"
    assert draft.occurred_at == datetime(2024, 3, 5, tzinfo=UTC)
    assert (draft.kind, draft.memory, draft.salience, draft.source) == (
        "journal",
        "carol",
        0.8,
        "trip.md",
    )
    assert draft.metadata == {
        "tags": ["travel", "family"],
        "when": "2024-03-06T10:00:00+03:00",
        "count": 3,
    }
    assert draft.body == "# Heading stays in the body\n\nТекст заметки.\n"


def test_front_matter_names_and_titles_are_taken_as_written(in_tmp):
    write(
        in_tmp / "n.md",
        "---\ntitle: 1984\nmemory: yes\noccurred_at: 2024-01-02T03:04:05Z\n---\nbody\n",
    )
    (draft,) = parse_paths(["n.md"]).episodes
    assert (draft.title, draft.memory) == ("1984", "yes")
    assert draft.occurred_at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_markdown_title_from_first_heading_and_date_from_mtime(in_tmp):
    text = "Intro line\n\n```sh\n# not a heading, a shell comment\n```\n\n## Привет, мир 🌍 ##\n\nBody.\n# Later\n"
    write(in_tmp / "greeting.md", text)
    (draft,) = parse_paths(["greeting.md"], memory="alice").episodes
    assert draft.title == "Привет, мир 🌍"
    assert draft.occurred_at == MTIME_AT
    assert draft.body == text
    assert (draft.kind, draft.memory, draft.metadata, draft.salience) == ("note", "alice", {}, 0.5)


def test_markdown_without_front_matter_or_heading_uses_the_file_stem(in_tmp):
    write(
        in_tmp / "my-note.draft.md", "#hashtag is not a heading\nplain text\n", mtime=1_600_000_000
    )
    (draft,) = parse_paths(["my-note.draft.md"], memory="alice", kind="doc").episodes
    assert draft.title == "my-note.draft"
    assert draft.kind == "doc"
    assert draft.occurred_at == datetime.fromtimestamp(1_600_000_000, tz=UTC)


def test_a_modification_time_in_the_future_is_capped_at_now(in_tmp):
    now = datetime(2024, 1, 1, tzinfo=UTC)
    write(in_tmp / "ahead.txt", "body\n", mtime=int(datetime(2030, 1, 1, tzinfo=UTC).timestamp()))
    write(in_tmp / "past.txt", "body two\n")
    result = parse_paths(["ahead.txt", "past.txt"], memory="alice", now=now)
    assert [e.occurred_at for e in result.episodes] == [now, MTIME_AT]


def test_markdown_problems_are_located(in_tmp):
    files = {
        "fm_bad.md": "---\ntitle: a\n  b: c\n---\nbody\n",
        "fm_open.md": "---\ntitle: a\nbody\n",
        "fm_list.md": "---\n- a\n- b\n---\nbody\n",
        "fm_salience.md": "---\ntitle: t\n\nsalience: 2\n---\nbody\n",
        "fm_memory.md": "---\nmemory: not valid\n---\nbody\n",
        "fm_both.md": "---\ndate: 2024-01-01\noccurred_at: 2024-01-02\n---\nbody\n",
        "fm_date.md": "---\ndate: next week\n---\nbody\n",
        "fm_binary.md": "---\nblob: !!binary aGVsbG8=\n---\nbody\n",
        "fm_title_long.md": "---\ntitle: " + "t" * 501 + "\n---\nbody\n",
        "fm_empty_body.md": "---\ntitle: x\n---\n\n   \n",
        "fm_nothing_after.md": "---\ntitle: x\n---\n",
        "fm_nul.md": '---\ntitle: "a\\0b"\n---\nbody\n',
        "body_nul.md": "line one\nline\x00two\n",
        "bad_utf8.md": b"line one\nline two\ncaf\xc3 au lait\n",
        "empty.txt": "",
    }
    for name, content in files.items():
        write(in_tmp / name, content)
    result = parse_paths(list(files), memory="alice")
    assert result.episodes == []
    assert result.files_read == len(files)
    assert messages(result) == [
        "fm_bad.md:3: malformed front matter: mapping values are not allowed here",
        "fm_open.md:1: front matter opened on line 1 is never closed by a '---' line",
        "fm_list.md:2: front matter must be keys and values, got array",
        "fm_salience.md:4: salience outside [0, 1]: 2",
        "fm_memory.md:2: invalid memory name 'not valid': use 1 to 128 letters, digits, '.', '_', "
        "'@' or '-', starting with a letter or digit",
        "fm_both.md:3: set 'occurred_at' or 'date' in front matter, not both",
        "fm_date.md:2: unparseable date: 'next week'",
        "fm_binary.md:2: front matter 'blob' holds binary data, which metadata cannot store",
        "fm_title_long.md:2: title too long: 501 characters (at most 500)",
        "fm_empty_body.md:4: empty body",
        "fm_nothing_after.md:3: empty body",
        "fm_nul.md:2: NUL character in 'title' (PostgreSQL text cannot hold it)",
        "body_nul.md:2: NUL character in 'body' (PostgreSQL text cannot hold it)",
        "bad_utf8.md:3: invalid UTF-8 at byte 4 of the line (0xc3)",
        "empty.txt:1: empty body",
    ]


def test_no_memory_is_a_whole_file_rejection_at_line_1(in_tmp):
    write(in_tmp / "a.md", "# Title\n\nbody\n")
    write(in_tmp / "b.txt", "body\n")
    write(in_tmp / "c.md", "---\nmemory: dana\n---\nbody\n")
    result = parse_paths(["a.md", "b.txt", "c.md"])
    assert messages(result) == [
        "a.md:1: no memory: pass --memory or set 'memory' in front matter",
        "b.txt:1: no memory: pass --memory",
    ]
    assert [(e.source, e.memory) for e in result.episodes] == [("c.md", "dana")]


def test_text_file_is_one_episode_with_its_whole_text(in_tmp):
    text = "\ufeffПервая строка 😀\r\nВторая\r\n"
    write(in_tmp / "diary 2024.txt", text.encode("utf-8"))
    (draft,) = parse_paths(["diary 2024.txt"], memory="alice").episodes
    assert draft.title == "diary 2024"
    # The BOM is an encoding mark and CRLF a platform habit: neither is content.
    assert draft.body == "Первая строка 😀\nВторая\n"
    assert (draft.kind, draft.source, draft.occurred_at) == ("note", "diary 2024.txt", MTIME_AT)


def test_markdown_with_crlf_front_matter(in_tmp):
    write(in_tmp / "w.md", "---\r\ntitle: Windows\r\n---\r\nbody line\r\n")
    (draft,) = parse_paths(["w.md"], memory="alice").episodes
    assert (draft.title, draft.body) == ("Windows", "body line\n")


def test_a_long_heading_title_is_shortened_not_fatal(in_tmp):
    write(in_tmp / "long.md", "# " + "я" * 600 + "\n\nbody\n")
    (draft,) = parse_paths(["long.md"], memory="alice").episodes
    assert len(draft.title) == 500 and draft.title.endswith("…")


_storable_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1
).filter(str.strip)


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(_storable_text, min_size=1, max_size=5))
def test_any_storable_bodies_survive_a_jsonl_round_trip(tmp_path, bodies):
    path = tmp_path / "round.jsonl"
    path.write_bytes(b"\n".join(line(body=body) for body in bodies))
    result = parse_paths([path])
    assert result.rejections == []
    assert [e.body for e in result.episodes] == bodies


def test_an_overflowing_salience_costs_only_its_own_line_or_file(in_tmp):
    huge = "1" + "0" * 400
    good = line(body="kept one").decode(), line(body="kept two").decode()
    bad = line(body="lost").decode().replace('"body"', f'"salience": {huge}, "body"')
    write(in_tmp / "mixed.jsonl", "\n".join([good[0], bad, good[1]]) + "\n")
    write(in_tmp / "fm.md", f"---\nmemory: alice\ntitle: t\nsalience: {huge}\n---\nbody\n")
    write(in_tmp / "ok.md", "---\nmemory: alice\nsalience: 0.75\n---\nfine\n")
    result = parse_paths(["mixed.jsonl", "fm.md", "ok.md"])
    assert [e.body for e in result.episodes] == ["kept one", "kept two", "fine\n"]
    assert [str(r).split(": salience outside")[0] for r in result.rejections] == [
        "mixed.jsonl:2",
        "fm.md:4",
    ]


def _laughs(levels: int) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(levels):
        name, previous = chr(ord("b") + i), chr(ord("a") + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "---\nmemory: alice\n" + "\n".join(lines) + "\n---\nbody\n"


def test_yaml_alias_bombs_are_rejected_quickly_at_the_alias(in_tmp):
    import time

    write(in_tmp / "bomb.md", _laughs(8))  # 9**9 strings once expanded, from ~400 bytes
    write(in_tmp / "loop.md", "---\nmemory: alice\nself: &s [1, *s]\n---\nbody\n")
    write(in_tmp / "shared.md", "---\nmemory: alice\nbase: &b {x: 1}\nalso: *b\n---\nbody\n")
    started = time.perf_counter()
    result = parse_paths(["bomb.md", "loop.md", "shared.md"])
    assert time.perf_counter() - started < 2.0
    assert messages(result) == [
        # line 7 is "e: &e [*d, ...]": a..d expand to 8,302 values, e to 66,430 more.
        "bomb.md:7: front matter expands to more than 10000 values through YAML aliases",
        "loop.md:3: front matter refers to itself through a YAML alias",
    ]
    # A modest alias is still fine: the value is copied where it is referred to.
    assert [e.metadata for e in result.episodes] == [{"base": {"x": 1}, "also": {"x": 1}}]


def test_a_file_name_that_is_not_utf8_is_ingested_under_an_escaped_name(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    raw = os.path.join(os.fsencode(folder), b"caf\xff.md")
    with open(raw, "wb") as handle:
        handle.write(b"a note whose name is Latin-1\n")
    write(folder / "x.jsonl", line(body="x"))
    result = parse_paths([folder], memory="alice")
    assert result.rejections == []
    by_body = {e.body: e for e in result.episodes}
    note = by_body["a note whose name is Latin-1\n"]
    assert note.source.endswith("caf\\xff.md") and note.title == "caf\\xff"
    assert all("\udcff" not in e.source and "\udcff" not in e.title for e in result.episodes)


def test_front_matter_salience_in_exponent_form_is_a_number(in_tmp):
    # YAML 1.1 reads a plain 1e-3 (no dot) as text; every other reader calls it a number.
    write(in_tmp / "a.md", "---\nmemory: alice\nsalience: 1e-3\n---\nbody\n")
    write(in_tmp / "b.md", "---\nmemory: alice\nsalience: '0.5'\n---\nbody two\n")
    result = parse_paths(["a.md", "b.md"])
    assert [e.salience for e in result.episodes] == [0.001]
    assert messages(result) == ['b.md:3: salience must be a number in [0, 1], got "0.5"']


def test_a_front_matter_key_given_twice_is_refused_at_its_second_line(in_tmp):
    # Found by the fuzz suite: with salience twice, YAML kept the last value (1e300, out of
    # range) while the plain-number reading kept the first, so the file was stored as valid.
    write(
        in_tmp / "r.md",
        "---\nmemory: alice\nsalience: 5e-324\nsalience: 1" + "0" * 300 + "\n---\nb\n",
    )
    write(in_tmp / "ok.md", "---\nmemory: alice\nsalience: 0.5\n---\nkept\n")
    result = parse_paths(["r.md", "ok.md"])
    assert [e.title for e in result.episodes] == ["ok"]
    assert messages(result) == ["r.md:4: front matter key 'salience' repeated (first on line 3)"]


def test_a_value_yaml_cannot_build_is_located_at_its_key(in_tmp):
    # Found by the fuzz suite: the rejection pointed at the first front matter line.
    write(in_tmp / "d.md", "---\nmemory: alice\ntitle: t\ndate: 2024-13-45\n---\nbody\n")
    assert messages(parse_paths(["d.md"])) == [
        "d.md:4: malformed front matter: month must be in 1..12"
    ]


def test_many_plain_front_matter_keys_are_refused_for_their_number_not_for_aliases(in_tmp):
    keys = "\n".join(f"key{i}: {i}" for i in range(20_000))
    write(in_tmp / "keys.md", f"---\nmemory: alice\n{keys}\n---\nbody\n")
    write(
        in_tmp / "few.md",
        "---\nmemory: alice\n" + "\n".join(f"k{i}: {i}" for i in range(50)) + "\n---\nok\n",
    )
    result = parse_paths(["keys.md", "few.md"])
    (message,) = messages(result)
    assert message.startswith("keys.md:5002: front matter holds more than 10000 keys and values")
    assert "alias" not in message
    assert [len(e.metadata) for e in result.episodes] == [50]


def test_jsonl_metadata_and_source_are_bounded_at_their_line(in_tmp):
    big = "x" * 20_000_000
    write(
        in_tmp / "big.jsonl",
        b"\n".join(
            [
                line(body="kept"),
                line(body="meta", metadata={"small": 1, "blob": big}),
                line(body="src", source=big),
                line(body="fine", metadata={"tags": ["a"] * 100}, source="export.json:12"),
            ]
        ),
    )
    result = parse_paths(["big.jsonl"])
    assert [e.body for e in result.episodes] == ["kept", "fine"]
    assert messages(result) == [
        "big.jsonl:2: metadata too large: 20,000,021 bytes as JSON (at most 65,536); "
        "'metadata.blob' alone is 20,000,002",
        "big.jsonl:3: source too long: 20,000,000 characters (at most 8,192)",
    ]


def test_a_front_matter_value_over_the_metadata_limit_is_refused_at_its_key(in_tmp):
    write(
        in_tmp / "fm.md", "---\nmemory: alice\nnote: short\nblob: " + "y" * 70_000 + "\n---\nbody\n"
    )
    assert messages(parse_paths(["fm.md"])) == [
        "fm.md:4: metadata too large: 70,026 bytes as JSON (at most 65,536); "
        "'metadata.blob' alone is 70,002"
    ]


def test_bidi_controls_in_a_file_name_do_not_reach_the_title(in_tmp):
    write(in_tmp / "invoice\u202etxt.exe.md", "hello\n")
    write(in_tmp / "report\u2066x\u2069\u200b.txt", "plain\n")
    write(in_tmp / "\u202e.md", "only a control\n")
    titles = sorted(e.title for e in parse_paths(["."], memory="alice").episodes)
    assert titles == [".md", "invoicetxt.exe", "reportx"]
