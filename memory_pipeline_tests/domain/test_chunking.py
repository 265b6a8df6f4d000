"""Tests for the paragraph packer: exact examples first, then properties over generated bodies."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline.domain.chunking import (
    MAX_CHUNK_CHARS,
    Chunk,
    chunk_body,
    chunk_id,
    content_hash,
    split_paragraphs,
)


def _sha(content_hash_hex: str, text: str) -> str:
    # Independent of the module: the id definition written out with hashlib.
    return hashlib.sha256(
        content_hash_hex.encode("utf-8") + b"\x00" + text.encode("utf-8")
    ).hexdigest()


def _texts(chunks: list[Chunk]) -> list[str]:
    return [c.text for c in chunks]


def _assert_invariants(body: str, chunks: list[Chunk]) -> None:
    assert "".join(_texts(chunks)) == body
    position = 0
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert chunk.start == position
        assert chunk.end > chunk.start
        assert body[chunk.start : chunk.end] == chunk.text
        assert len(chunk.text) <= MAX_CHUNK_CHARS
        position = chunk.end
    assert position == len(body)


def _para(n: int, letter: str = "a") -> str:
    """A one-line paragraph of exactly n characters."""
    return letter * n


# --- hashing -----------------------------------------------------------------------------------


def test_content_hash_is_sha256_of_utf8():
    body = "Привет 🙂\r\nworld"
    assert content_hash(body) == hashlib.sha256(body.encode("utf-8")).hexdigest()


def test_chunk_id_matches_independent_sha256():
    h = content_hash("whatever")
    assert chunk_id(h, "ж🙂 text") == _sha(h, "ж🙂 text")
    assert len(chunk_id(h, "x")) == 64
    assert all(ch in "0123456789abcdef" for ch in chunk_id(h, "x"))


def test_chunk_id_nul_separates_hash_from_text():
    assert chunk_id("ab", "c") != chunk_id("a", "bc")


def test_chunk_body_ids_use_body_hash_by_default():
    body = "first paragraph\n\nsecond"
    h = hashlib.sha256(body.encode("utf-8")).hexdigest()
    chunks = chunk_body(body)
    assert [c.chunk_id for c in chunks] == [_sha(h, c.text) for c in chunks]
    assert chunk_body(body, h) == chunks


def test_explicit_content_hash_is_used():
    body = "hello"
    [chunk] = chunk_body(body, "f" * 64)
    assert chunk.chunk_id == _sha("f" * 64, "hello")


def test_different_content_hash_gives_different_ids():
    body = "same text\n\nin both"
    a = chunk_body(body, "a" * 64)
    b = chunk_body(body, "b" * 64)
    assert _texts(a) == _texts(b)
    assert all(x.chunk_id != y.chunk_id for x, y in zip(a, b))


def test_repeated_paragraph_shares_an_id_within_an_episode():
    para = _para(1000, "r")
    body = f"{para}\n\n{para}\n\n{para}"
    chunks = chunk_body(body)
    # Each 1002-char piece cannot share a chunk with the next, so three chunks; the first two
    # are the identical "para\n\n" and must share an id, the last lacks the separator.
    assert _texts(chunks) == [para + "\n\n", para + "\n\n", para]
    assert chunks[0].chunk_id == chunks[1].chunk_id
    assert chunks[1].chunk_id != chunks[2].chunk_id


def test_hard_cut_repeats_share_an_id():
    chunks = chunk_body("z" * 3200)
    assert len(chunks) == 2 and chunks[0].chunk_id == chunks[1].chunk_id


def test_ids_are_stable_across_runs():
    body = "one\n\ntwo\r\n\r\nthree " * 300
    assert chunk_body(body) == chunk_body(body)


# --- edge cases ------------------------------------------------------------------------------


def test_empty_body_gives_no_chunks():
    assert chunk_body("") == []
    assert split_paragraphs("") == []


@pytest.mark.parametrize("body", [" ", "\n", "\n\n", " \t\n  \r\n\t", "\r\n\r\n", "\r", "\t\r \n"])
def test_whitespace_only_body_is_one_chunk(body):
    assert split_paragraphs(body) == []
    chunks = chunk_body(body)
    assert _texts(chunks) == [body]
    _assert_invariants(body, chunks)


def test_long_whitespace_only_body_still_respects_the_limit():
    body = "\n" * 3500
    chunks = chunk_body(body)
    assert [len(c.text) for c in chunks] == [1600, 1600, 300]
    _assert_invariants(body, chunks)


def test_one_short_paragraph():
    chunks = chunk_body("Just one line.")
    assert len(chunks) == 1
    c = chunks[0]
    assert (c.ordinal, c.start, c.end, c.text) == (0, 0, 14, "Just one line.")


def test_exactly_max_chars_is_one_chunk():
    body = _para(MAX_CHUNK_CHARS)
    chunks = chunk_body(body)
    assert [(c.start, c.end) for c in chunks] == [(0, 1600)]


def test_one_over_max_is_cut_at_max():
    body = _para(MAX_CHUNK_CHARS + 1)
    chunks = chunk_body(body)
    assert [(c.start, c.end) for c in chunks] == [(0, 1600), (1600, 1601)]
    _assert_invariants(body, chunks)


def test_5000_char_paragraph_is_cut_every_1600():
    body = "".join(chr(ord("a") + i % 26) for i in range(5000))
    chunks = chunk_body(body)
    assert [len(c.text) for c in chunks] == [1600, 1600, 1600, 200]
    assert [(c.start, c.end) for c in chunks] == [
        (0, 1600),
        (1600, 3200),
        (3200, 4800),
        (4800, 5000),
    ]
    assert [c.ordinal for c in chunks] == [0, 1, 2, 3]
    _assert_invariants(body, chunks)


def test_long_paragraph_starts_a_fresh_chunk_and_its_tail_packs_with_what_follows():
    body = "short\n\n" + _para(3300, "L") + "\n\nafter"
    chunks = chunk_body(body)
    assert _texts(chunks) == [
        "short\n\n",
        "L" * 1600,
        "L" * 1600,
        "L" * 100 + "\n\nafter",
    ]
    _assert_invariants(body, chunks)


def test_many_short_paragraphs_are_packed_up_to_the_limit():
    # 100-char paragraphs + "\n\n": each piece is 102 chars, so 15 pieces (1530) fit and a 16th
    # (1632) would not.
    paras = [_para(100, chr(ord("a") + i % 26)) for i in range(40)]
    body = "\n\n".join(paras)
    chunks = chunk_body(body)
    _assert_invariants(body, chunks)
    assert [len(c.text) for c in chunks] == [1530, 1530, 10 * 102 - 2]
    assert chunks[0].text == "\n\n".join(paras[:15]) + "\n\n"
    assert chunks[1].start == chunks[0].end == body.index(paras[15])


def test_packing_boundary_is_exact():
    # First chunk: a 1500-char paragraph + "\n\n" = 1502. A next piece of 98 chars fits exactly
    # (1600); of 99 it does not.
    fits = _para(1500) + "\n\n" + _para(96, "b") + "\n\n" + "c"
    chunks = chunk_body(fits)
    assert [len(c.text) for c in chunks] == [1600, 1]
    assert chunks[0].text.endswith("b\n\n")

    too_long = _para(1500) + "\n\n" + _para(97, "b") + "\n\n" + "c"
    chunks = chunk_body(too_long)
    assert [len(c.text) for c in chunks] == [1502, 100]
    assert chunks[1].text == "b" * 97 + "\n\nc"

    # The last piece has no separator after it: exactly 1600 in total still fits.
    last = _para(1500) + "\n\n" + _para(98, "b")
    assert [len(c.text) for c in chunk_body(last)] == [1600]
    assert [len(c.text) for c in chunk_body(last + "b")] == [1502, 99]


def test_separator_overflow_becomes_its_own_part():
    body = _para(1599) + "\n\n" + "next"
    chunks = chunk_body(body)
    assert _texts(chunks) == [_para(1599) + "\n", "\nnext"]
    _assert_invariants(body, chunks)

    trailing = _para(1600) + "\n"
    assert _texts(chunk_body(trailing)) == [_para(1600), "\n"]


def test_single_newline_does_not_separate():
    body = "line one\nline two\nline three"
    assert split_paragraphs(body) == [(0, len(body))]
    assert _texts(chunk_body(body)) == [body]


def test_long_multiline_paragraph_is_hard_cut_not_split_at_lines():
    body = "\n".join(_para(99) for _ in range(20))  # 20 lines, 1999 chars, one paragraph
    assert len(split_paragraphs(body)) == 1
    assert [len(c.text) for c in chunk_body(body)] == [1600, 399]


def test_crlf_blank_line_separates():
    body = "alpha\r\nstill alpha\r\n\r\nbeta\r\n"
    assert split_paragraphs(body) == [(0, 18), (22, 26)]
    assert body[0:18] == "alpha\r\nstill alpha"
    assert body[22:26] == "beta"
    # Packing with CRLF: two pieces of 1000 and 700 chars cannot share a chunk.
    big = _para(996) + "\r\n\r\n" + _para(700, "b")
    assert _texts(chunk_body(big)) == [_para(996) + "\r\n\r\n", _para(700, "b")]


@pytest.mark.parametrize("blank", ["\n  \n", "\n\t\n", "\n \t \n", "\r\n \t\r\n", "\n\n  \n\t\n"])
def test_whitespace_blank_lines_separate(blank):
    body = "first" + blank + "second"
    assert split_paragraphs(body) == [(0, 5), (5 + len(blank), len(body))]
    left = _para(1000) + blank + _para(700, "b")
    assert _texts(chunk_body(left)) == [_para(1000) + blank, _para(700, "b")]


def test_stray_carriage_returns_count_as_blank_but_do_not_end_lines():
    assert split_paragraphs("\r") == []
    assert split_paragraphs("a\n\r\r\nb") == [(0, 1), (5, 6)]
    assert split_paragraphs("a\n\r") == [(0, 1)]
    assert split_paragraphs("a\r\rb") == [(0, 4)]  # no "\n": one line, one paragraph


def test_text_after_whitespace_on_a_line_is_not_blank():
    body = "one\n  x\ntwo"
    assert split_paragraphs(body) == [(0, len(body))]


def test_leading_and_trailing_whitespace_is_kept():
    body = "\n\n  \nhello\n\nworld\n\n\t\n"
    assert split_paragraphs(body) == [(5, 10), (12, 17)]
    chunks = chunk_body(body)
    assert _texts(chunks) == [body]
    # Forced apart, the leading blank lines stay with the first chunk, the trailing with the last.
    body = "\n\n" + _para(1000) + "\n\n" + _para(1000, "b") + "\n \n"
    assert _texts(chunk_body(body)) == ["\n\n" + _para(1000) + "\n\n", _para(1000, "b") + "\n \n"]


def test_indentation_belongs_to_the_paragraph():
    body = "intro\n\n    indented code\n    more"
    assert split_paragraphs(body) == [(0, 5), (7, len(body))]


def test_cyrillic_is_counted_in_code_points():
    body = "ж" * 1700
    assert len(body.encode("utf-8")) == 3400
    chunks = chunk_body(body)
    assert [(c.start, c.end) for c in chunks] == [(0, 1600), (1600, 1700)]
    assert chunks[0].text == "ж" * 1600
    assert chunks[0].chunk_id == _sha(content_hash(body), "ж" * 1600)


def test_emoji_count_as_one_character():
    assert len("🙂") == 1
    body = "🙂" * 1600
    assert _texts(chunk_body(body)) == [body]
    body = "🙂" * 1601
    assert [len(c.text) for c in chunk_body(body)] == [1600, 1]
    mixed = "Привет 🙂 мир\n\n" + "🙂ж" * 900
    _assert_invariants(mixed, chunk_body(mixed))


def test_separators_are_kept_and_concatenation_is_exact():
    body = "a\n\nb\r\n\r\nc\n \t\nd\n\n\n\ne  \n"
    chunks = chunk_body(body)
    assert "".join(_texts(chunks)) == body
    assert len(split_paragraphs(body)) == 5


def test_offsets_are_contiguous_and_ordinals_run_from_zero():
    body = "\n\n".join(_para(n, "q") for n in (500, 900, 300, 1700, 50, 1599, 3))
    chunks = chunk_body(body)
    _assert_invariants(body, chunks)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert all(a.end == b.start for a, b in zip(chunks, chunks[1:]))


def test_token_estimate():
    def chunk_of(text: str) -> Chunk:
        return Chunk(0, 0, len(text), text, chunk_id("h", text))

    assert chunk_of("").token_estimate == 0
    assert chunk_of("a").token_estimate == 1
    assert chunk_of("abc").token_estimate == 1
    assert chunk_of("abcd").token_estimate == 1
    assert chunk_of("abcdefgh").token_estimate == 2
    assert chunk_of("abcdefghi").token_estimate == 2
    assert chunk_body("x" * 1600)[0].token_estimate == 400
    assert chunk_of("🙂" * 8).token_estimate == 2  # code points, not bytes


def test_chunk_is_frozen():
    chunk = chunk_body("x")[0]
    with pytest.raises(AttributeError):
        chunk.text = "y"  # type: ignore[misc]


# --- properties --------------------------------------------------------------------------------

_fragments = st.one_of(
    st.sampled_from(
        ["word", "слово", "🙂", "ж", " ", "\t", "\n", "\n\n", "\r\n", "\r\n\r\n", "\n \n", "\r"]
    ),
    st.text(max_size=20),
    st.builds(
        lambda ch, n: ch * n,
        st.sampled_from(["a", "ж", "🙂", " ", "\n", "\r\n", "word "]),
        st.integers(min_value=1, max_value=2000),
    ),
)
bodies = st.lists(_fragments, max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(bodies)
def test_property_concatenation_size_and_contiguity(body):
    chunks = chunk_body(body)
    _assert_invariants(body, chunks)
    assert all(c.text for c in chunks)
    assert all(1 <= c.token_estimate <= MAX_CHUNK_CHARS // 4 for c in chunks)
    if body:
        assert chunks
    else:
        assert chunks == []


@settings(max_examples=300, deadline=None)
@given(bodies)
def test_property_ids_are_stable_and_content_addressed(body):
    first = chunk_body(body)
    second = chunk_body(body)
    assert first == second
    h = hashlib.sha256(body.encode("utf-8")).hexdigest()
    for chunk in first:
        assert chunk.chunk_id == _sha(h, chunk.text)
    by_text: dict[str, str] = {}
    for chunk in first:
        assert by_text.setdefault(chunk.text, chunk.chunk_id) == chunk.chunk_id


@settings(max_examples=300, deadline=None)
@given(bodies)
def test_property_cuts_fall_at_paragraphs_or_are_full_and_packing_is_greedy(body):
    paragraphs = split_paragraphs(body)
    starts = {start for start, _ in paragraphs}
    # Where each piece (a paragraph with the separator after it) ends.
    piece_end = {start: end for (start, _), (end, _) in zip(paragraphs, paragraphs[1:])}
    if paragraphs:
        piece_end[paragraphs[-1][0]] = len(body)
    chunks = chunk_body(body)
    for chunk, following in zip(chunks, chunks[1:]):
        if len(chunk.text) == MAX_CHUNK_CHARS:
            continue
        # A short chunk ends only where the next paragraph begins, and only because that
        # paragraph's whole piece would not have fitted.
        assert chunk.end in starts
        assert piece_end[chunk.end] - chunk.start > MAX_CHUNK_CHARS
        assert following.start == chunk.end


@settings(max_examples=300, deadline=None)
@given(bodies)
def test_property_paragraph_spans_are_ordered_non_blank_and_separated_by_blank_lines(body):
    spans = split_paragraphs(body)
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end <= len(body)
        text = body[start:end]
        assert text.strip(" \t\r\n") != ""
        assert not text.endswith("\n")
        previous_end = end
    for (_, end), (start, _) in zip(spans, spans[1:]):
        gap = body[end:start]
        assert set(gap) <= set(" \t\r\n")
        assert gap.count("\n") >= 2
    # Outside the paragraphs there is only whitespace.
    covered = set()
    for start, end in spans:
        covered.update(range(start, end))
    assert all(body[i] in " \t\r\n" for i in range(len(body)) if i not in covered)
