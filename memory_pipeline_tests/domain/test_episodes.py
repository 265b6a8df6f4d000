"""Tests for episode validation: names, kinds, timestamps and make_episode's rules."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_pipeline.domain.episodes import (
    MAX_BODY_CHARS,
    MAX_TITLE_CHARS,
    EpisodeDraft,
    InvalidEpisode,
    make_episode,
    parse_timestamp,
    validate_kind,
    validate_memory_name,
)

UTC = UTC


def episode(**overrides):
    fields = dict(
        memory="alice",
        kind="note",
        title="A title",
        occurred_at="2024-05-01T10:00:00Z",
        body="Some body text.",
    )
    fields.update(overrides)
    return make_episode(**fields)


def rejection(**overrides) -> str:
    with pytest.raises(ValueError) as caught:
        episode(**overrides)
    return str(caught.value)


@pytest.mark.parametrize(
    "name", ["alice", "A", "0", "agent-7@team.example", "a_b.c", "x" * 128, "Bob42"]
)
def test_valid_memory_names_pass_unchanged(name):
    assert validate_memory_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", "-alice", ".alice", "@a", "al ice", "x" * 129, "память", "alice\n", "a/b", "a:b"],
)
def test_invalid_memory_names_are_refused_with_the_rule(name):
    with pytest.raises(ValueError, match=r"^invalid memory name '[^\n]*': use 1 to 128 letters"):
        validate_memory_name(name)


def test_names_in_reasons_are_shown_on_one_line():
    with pytest.raises(ValueError) as caught:
        validate_memory_name("alice\n")
    assert str(caught.value).startswith("invalid memory name 'alice\\n': ")


def test_memory_name_must_be_text():
    with pytest.raises(ValueError, match="^'memory' must be a string, got number$"):
        validate_memory_name(5)
    with pytest.raises(ValueError, match="^missing memory$"):
        validate_memory_name(None)


@pytest.mark.parametrize(
    "kind", ["note", "journal", "chat", "email", "doc", "chat_log", "e-mail", "k" * 40]
)
def test_valid_kinds_pass_unchanged(kind):
    assert validate_kind(kind) == kind


@pytest.mark.parametrize(
    "kind", ["", "Note", "1note", "_note", "k" * 41, "note\n", "no te", "заметка"]
)
def test_invalid_kinds_are_refused_with_the_rule(kind):
    with pytest.raises(ValueError, match=r"^invalid kind '[^\n]*': use 1 to 40 lowercase letters"):
        validate_kind(kind)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01T10:30:00Z", datetime(2024, 5, 1, 10, 30, tzinfo=UTC)),
        ("2024-05-01T10:30:00z", datetime(2024, 5, 1, 10, 30, tzinfo=UTC)),
        ("2024-05-01T10:30:00+03:00", datetime(2024, 5, 1, 7, 30, tzinfo=UTC)),
        ("2024-05-01T01:00:00+03:00", datetime(2024, 4, 30, 22, 0, tzinfo=UTC)),
        ("2024-05-01T10:30:00", datetime(2024, 5, 1, 10, 30, tzinfo=UTC)),
        ("2024-05-01 10:30:00.250", datetime(2024, 5, 1, 10, 30, 0, 250000, tzinfo=UTC)),
        ("  2024-05-01  ", datetime(2024, 5, 1, tzinfo=UTC)),
    ],
)
def test_parse_timestamp_returns_aware_utc(text, expected):
    parsed = parse_timestamp(text)
    assert parsed == expected
    assert parsed.tzinfo is UTC


def test_parse_timestamp_accepts_date_and_datetime_objects():
    assert parse_timestamp(date(2024, 5, 1)) == datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_timestamp(datetime(2024, 5, 1, 12)) == datetime(2024, 5, 1, 12, tzinfo=UTC)
    plus_three = timezone(timedelta(hours=3))
    converted = parse_timestamp(datetime(2024, 5, 1, 12, tzinfo=plus_three))
    assert converted == datetime(2024, 5, 1, 9, tzinfo=UTC) and converted.tzinfo is UTC


@pytest.mark.parametrize(
    "value, message",
    [
        ("yesterday", "unparseable date: 'yesterday'"),
        ("", "unparseable date: ''"),
        ("2024-13-01", "unparseable date: '2024-13-01'"),
        ("2024-02-30", "unparseable date: '2024-02-30'"),
        (1714557600, "unparseable date: 1714557600"),
        (True, "unparseable date: true"),
        ("0001-01-01T00:00:00+03:00", "unparseable date: '0001-01-01T00:00:00+03:00'"),
    ],
)
def test_parse_timestamp_rejects_what_is_not_a_date(value, message):
    with pytest.raises(ValueError) as caught:
        parse_timestamp(value)
    assert str(caught.value) == message


def test_make_episode_returns_a_validated_draft_with_defaults():
    draft = episode(title="  Padded title \n")
    assert draft == EpisodeDraft(
        memory="alice",
        kind="note",
        title="Padded title",
        occurred_at=datetime(2024, 5, 1, 10, tzinfo=UTC),
        body="Some body text.",
        salience=0.5,
        source="",
        metadata={},
        external_id=None,
    )
    assert draft.content_hash == hashlib.sha256(b"Some body text.").hexdigest()
    with pytest.raises(dataclasses.FrozenInstanceError):
        draft.body = "changed"  # type: ignore[misc]
    assert hash(draft) == hash(episode(title="Padded title"))


def test_body_is_kept_exactly_and_unicode_is_preserved():
    body = "\n  Привет, мир! 👋🏽 — «ёлка»\n\n"
    draft = episode(title="Заметка 🧠", body=body)
    assert draft.body == body
    assert draft.title == "Заметка 🧠"
    assert draft.content_hash == hashlib.sha256(body.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(body=None), "missing body"),
        (dict(body=""), "empty body"),
        (dict(body=" \n\t\u3000 "), "empty body"),
        (dict(body=42), "'body' must be a string, got number"),
        (dict(body="a\x00b"), "NUL character in 'body' (PostgreSQL text cannot hold it)"),
        (dict(body="a\ud800b"), "lone surrogate character in 'body' (not valid Unicode text)"),
        (dict(title="x\x00"), "NUL character in 'title' (PostgreSQL text cannot hold it)"),
        (dict(memory="al\x00ice"), "NUL character in 'memory' (PostgreSQL text cannot hold it)"),
        (dict(kind="no\x00te"), "NUL character in 'kind' (PostgreSQL text cannot hold it)"),
        (dict(source="a\x00"), "NUL character in 'source' (PostgreSQL text cannot hold it)"),
        (dict(title="   "), "empty title"),
        (dict(title=None), "missing title"),
        (dict(title=["a"]), "'title' must be a string, got array"),
        (dict(occurred_at=None), "missing occurred_at"),
        (dict(occurred_at="soon"), "unparseable date: 'soon'"),
        (dict(salience=1.5), "salience outside [0, 1]: 1.5"),
        (dict(salience=-0.1), "salience outside [0, 1]: -0.1"),
        (dict(salience=math.nan), "salience outside [0, 1]: NaN"),
        (dict(salience=math.inf), "salience outside [0, 1]: Infinity"),
        (dict(salience="high"), 'salience must be a number in [0, 1], got "high"'),
        (dict(salience="0.5"), 'salience must be a number in [0, 1], got "0.5"'),
        (dict(salience=True), "salience must be a number in [0, 1], got true"),
        (dict(salience=[0.5]), "salience must be a number in [0, 1], got [0.5]"),
        (dict(metadata=["a"]), "metadata must be a JSON object, got array"),
        (dict(metadata="{}"), "metadata must be a JSON object, got string"),
        (
            dict(metadata={"tags": ["ok", "b\x00d"]}),
            "NUL character in 'metadata.tags[1]' (PostgreSQL text cannot hold it)",
        ),
        (
            dict(metadata={"a\x00": 1}),
            "NUL character in 'metadata.a\\x00' (PostgreSQL text cannot hold it)",
        ),
        (dict(metadata={"deep": {"x": math.nan}}), "'metadata.deep.x' is not a finite number"),
        (dict(metadata={"when": date(2024, 1, 1)}), "'metadata.when' is not JSON (got date)"),
        (dict(metadata={1: "a"}), "metadata keys must be strings, got 1 in 'metadata'"),
        (dict(external_id=""), "empty 'id'"),
        (dict(external_id=1.5), "'id' must be a string or an integer, got number"),
        (dict(memory="bad name"), None),
        (dict(kind="Note"), None),
    ],
)
def test_make_episode_rejects_with_one_plain_reason(overrides, message):
    reason = rejection(**overrides)
    if message is not None:
        assert reason == message
    else:
        assert reason.startswith("invalid ")


def test_rejections_name_the_field_they_concern():
    with pytest.raises(InvalidEpisode) as caught:
        episode(metadata={"tags": {"inner": "b\x00d"}})
    assert (caught.value.field, caught.value.metadata_key) == ("metadata", "tags")
    with pytest.raises(InvalidEpisode) as caught:
        episode(salience=2)
    assert caught.value.field == "salience"


def test_title_and_body_limits_count_characters_not_bytes():
    assert episode(title="я" * MAX_TITLE_CHARS).title == "я" * MAX_TITLE_CHARS
    assert rejection(title="я" * (MAX_TITLE_CHARS + 1)) == (
        f"title too long: {MAX_TITLE_CHARS + 1} characters (at most {MAX_TITLE_CHARS})"
    )
    # Four UTF-8 bytes each: a byte count would refuse this body.
    assert len(episode(body="😀" * MAX_BODY_CHARS).body) == MAX_BODY_CHARS
    assert rejection(body="x" * (MAX_BODY_CHARS + 1)) == (
        f"body too long: {MAX_BODY_CHARS + 1} characters (at most {MAX_BODY_CHARS})"
    )


def test_salience_bounds_and_numbers_are_accepted():
    assert episode(salience=0).salience == 0.0
    assert episode(salience=1).salience == 1.0
    assert episode(salience=0.25).salience == 0.25
    assert isinstance(episode(salience=1).salience, float)


def test_metadata_is_a_plain_deep_copy():
    original = {"tags": ("a", "b"), "nested": {"n": 1, "ok": True, "none": None}}
    draft = episode(metadata=original)
    assert draft.metadata == {"tags": ["a", "b"], "nested": {"n": 1, "ok": True, "none": None}}
    original["nested"]["n"] = 2
    assert draft.metadata["nested"]["n"] == 1


def test_external_id_is_text():
    assert episode(external_id="msg-1").external_id == "msg-1"
    assert episode(external_id=12).external_id == "12"


@given(
    body=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        min_size=1,
    ).filter(str.strip)
)
def test_any_storable_non_blank_body_is_accepted_verbatim(body):
    draft = episode(body=body)
    assert draft.body == body
    assert draft.content_hash == hashlib.sha256(body.encode("utf-8")).hexdigest()


def test_a_salience_too_large_for_a_float_is_rejected_not_raised():
    # JSON's 1 followed by 400 zeros is an exact int that float() cannot hold (OverflowError).
    huge = int("1" + "0" * 400)
    assert rejection(salience=huge) == "salience outside [0, 1]: " + ("1" + "0" * 58 + "…")
    assert rejection(salience=-huge).startswith("salience outside [0, 1]: -1000")


def test_a_salience_too_small_for_a_real_column_is_zero():
    # Found by the fuzz suite: PostgreSQL's real cannot hold 1.8e-54 and refused the whole ingest.
    assert episode(salience=1.7691508576147286e-54).salience == 0.0
    assert episode(salience=1e-30).salience == 1e-30
