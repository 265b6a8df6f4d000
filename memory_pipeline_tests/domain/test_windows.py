"""Tests for paragraph windows: exact examples, then properties over generated chunk texts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline.domain.chunking import MAX_CHUNK_CHARS, chunk_body, split_paragraphs
from memory_pipeline.domain.windows import MAX_WINDOWS, paragraph_windows, window_focus


def test_a_chat_chunk_gives_the_first_turn_then_each_turn_with_the_one_before():
    text = "A: where did you go?\n\nB: to the lake.\n\nA: nice!\n"
    assert paragraph_windows(text) == [
        "A: where did you go?",
        "A: where did you go?\n\nB: to the lake.",
        "B: to the lake.\n\nA: nice!",
    ]


def test_separators_are_kept_as_written():
    text = "  indented first\r\n \t\r\nsecond line one\nsecond line two"
    assert paragraph_windows(text) == [
        "  indented first",
        "  indented first\r\n \t\r\nsecond line one\nsecond line two",
    ]


def test_fewer_than_two_paragraphs_have_no_windows():
    assert paragraph_windows("") == []
    assert paragraph_windows("   \n\n\t\n") == []
    assert paragraph_windows("one paragraph\nover two lines\n\n") == []


def test_many_short_paragraphs_are_grouped_to_at_most_max_windows():
    paras = [f"item {i}" for i in range(40)]
    text = "\n\n".join(paras)
    windows = paragraph_windows(text)
    assert len(windows) == MAX_WINDOWS
    # Groups of 2 or 3 consecutive items; every item is in some window, in order.
    firsts = [w.split("\n\n")[0] for w in windows[1:]]
    assert firsts == sorted(firsts, key=lambda s: int(s.split()[1]))
    assert all(p in "".join(windows) for p in paras)
    assert windows[0] in ("item 0\n\nitem 1", "item 0\n\nitem 1\n\nitem 2")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab \t\r\n", max_size=30), max_size=30))
def test_windows_are_slices_that_cover_every_paragraph(parts):
    body = "\n\n".join(parts)
    for chunk in chunk_body(body):
        windows = paragraph_windows(chunk.text)
        paras = split_paragraphs(chunk.text)
        if len(paras) < 2:
            assert windows == []
            continue
        assert 2 <= len(windows) <= MAX_WINDOWS
        assert all(w in chunk.text and len(w) <= MAX_CHUNK_CHARS for w in windows)
        assert windows[0] == chunk.text[paras[0][0] : len(windows[0]) + paras[0][0]]
        # Every paragraph's text lies inside at least one window.
        for start, end in paras:
            assert any(chunk.text[start:end] in w for w in windows)


def test_window_focus_is_where_the_windows_own_paragraph_starts():
    text = "A: where did you go?\n\nB: to the lake.\n\nA: nice!\n"
    assert [text[window_focus(text, i) :].split("\n")[0] for i in range(3)] == [
        "A: where did you go?",
        "B: to the lake.",
        "A: nice!",
    ]
    assert window_focus(text, 3) is None and window_focus(text, -1) is None
    assert window_focus("one paragraph", 0) is None


def test_a_heading_is_no_window_of_its_own():
    # A document of one abstract: its title alone would be a window that short queries match by
    # the title's few words; without it the chunk is scored by its own vector, title and text.
    assert paragraph_windows("# Statins and cancer\n\nWe followed 9,000 women for ten years.") == []
    text = "# Bread\n\nMix the flour.\n\n## Proofing\n\nWait an hour.\n\nBake it."
    windows = paragraph_windows(text)
    assert windows == [
        "# Bread\n\nMix the flour.",
        "## Proofing\n\nWait an hour.",
        "Wait an hour.\n\nBake it.",
    ]
    # The focus of each window is its own paragraph, never a heading.
    assert [text[window_focus(text, i) :].split("\n")[0] for i in range(3)] == [
        "Mix the flour.",
        "Wait an hour.",
        "Bake it.",
    ]
    # A "#" that is not a heading (no space after it) is text like any other.
    assert paragraph_windows("#hashtag\n\nbody")[0] == "#hashtag"


def test_a_paragraph_repeating_the_episodes_title_is_a_heading_too():
    # A document written as its title, a blank line and the text (a JSONL episode's body).
    text = "Statins and cancer\n\nWe followed 9,000 women.\n\nNo link was found."
    assert paragraph_windows(text)[0] == "Statins and cancer"  # without the title: a paragraph
    windows = paragraph_windows(text, title=" Statins and cancer ")
    assert windows == [
        "Statins and cancer\n\nWe followed 9,000 women.",
        "We followed 9,000 women.\n\nNo link was found.",
    ]
    assert text[window_focus(text, 0, title="Statins and cancer") :].startswith("We followed")
    assert (
        paragraph_windows("Statins and cancer\n\nOne abstract.", title="Statins and cancer") == []
    )
