"""Snippets: pure functions over a chunk's text."""

from __future__ import annotations

from memory_pipeline.search.results import make_snippet

TEXT = (
    "First line of the chunk.\n\n"
    + "filler words here " * 20
    + "\n\n  The   answer\tis here.  "
    + "tail " * 60
)


def test_short_text_is_the_snippet_whitespace_collapsed():
    assert make_snippet("a  b\n\nc", "q") == "a b c"


def test_focus_starts_the_snippet_at_that_paragraph_even_without_query_words():
    focus = TEXT.index("  The   answer")
    snippet = make_snippet(TEXT, "unrelated", width=40, focus=focus)
    assert snippet.startswith("…The answer is here. tail")
    assert snippet.endswith("…") and len(snippet) == 42


def test_without_focus_the_snippet_is_around_the_first_query_word():
    snippet = make_snippet(TEXT, "answer", width=40)
    assert "answer" in snippet and snippet.startswith("…")
    assert make_snippet(TEXT, "zz", width=40).startswith("First line of the chunk.")


def test_a_focus_near_the_end_still_fills_the_width():
    snippet = make_snippet(TEXT, "q", width=40, focus=len(TEXT) - 3)
    assert snippet.startswith("…") and not snippet.endswith("…") and len(snippet) == 41
