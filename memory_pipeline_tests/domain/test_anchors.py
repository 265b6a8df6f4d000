"""Heading anchors: which headings each chunk of a body sits under (pure)."""

from __future__ import annotations

from memory_pipeline.domain.anchors import anchored, chunk_anchors, headings, model_text
from memory_pipeline.domain.chunking import chunk_body

PARA = "Words about the matter at hand. " * 30  # ~960 characters: one paragraph a chunk


def test_each_chunk_knows_the_title_section_and_subsection_above_it():
    body = (
        f"# Bread Book\n\n{PARA}\n\n## Proofing\n\n{PARA}\n\n### Second rise\n\n{PARA}\n\n"
        f"## Baking\n\n{PARA}\n"
    )
    chunks = chunk_body(body)
    assert len(chunks) == 4
    assert chunk_anchors(body, chunks) == [
        "Bread Book",
        "Bread Book > Proofing",
        "Bread Book > Proofing > Second rise",
        "Bread Book > Baking",
    ]
    # Chunks are cut exactly as before: anchors are beside them, not in them.
    with_anchors = anchored(body, chunks)
    assert [(c.start, c.end, c.text, c.chunk_id) for c in with_anchors] == [
        (c.start, c.end, c.text, c.chunk_id) for c in chunks
    ]
    assert [c.anchor for c in with_anchors] == chunk_anchors(body, chunks) and "".join(
        c.text for c in with_anchors
    ) == body


def test_a_chunk_that_starts_inside_a_section_inherits_it():
    body = "## Setup\n\n" + "\n\n".join([PARA] * 4)
    chunks = chunk_body(body)
    assert len(chunks) >= 3
    assert set(chunk_anchors(body, chunks)) == {"Setup"}


def test_a_body_without_headings_gets_no_anchor_and_its_model_text_is_unchanged():
    body = "Just a note.\n\nWith two paragraphs."
    chunks = chunk_body(body)
    assert chunk_anchors(body, chunks) == [""]
    assert model_text("", chunks[0].text) == chunks[0].text
    assert model_text("Book > Part", "text") == "Book > Part\n\ntext"


def test_headings_inside_fenced_code_and_empty_headings_are_not_headings():
    body = "# Real\n\n```\n# not a heading\n```\n\n#\n\n#hashtag\n\n## Closed ##\n"
    assert [(level, text) for _, level, text in headings(body)] == [(1, "Real"), (2, "Closed")]


def test_a_deeper_heading_replaces_only_the_levels_below_it():
    body = f"## A\n\n### A1\n\n{PARA}\n\n## B\n\n{PARA}\n\n#### B-deep\n\n{PARA}\n"
    chunks = chunk_body(body)
    assert chunk_anchors(body, chunks) == ["A > A1", "B", "B > B-deep"]
