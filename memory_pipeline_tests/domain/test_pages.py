"""Pages of an episode: consecutive whole chunks within the budget, covering the body exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline.domain.chunking import MAX_CHUNK_CHARS, chunk_body
from memory_pipeline.domain.pages import PAGE_CHARS, NoSuchPage, page, paginate


def test_chunks_are_packed_until_the_next_would_pass_the_budget():
    spans = [(0, 4), (4, 8), (8, 10), (10, 15), (15, 16)]
    pages = paginate(spans, budget=8)
    assert [(p.number, p.start, p.end, p.first, p.last) for p in pages] == [
        (1, 0, 8, 0, 1),
        (2, 8, 16, 2, 4),
    ]


def test_a_chunk_longer_than_the_budget_is_a_page_of_its_own():
    pages = paginate([(0, 3), (3, 20), (20, 21)], budget=5)
    assert [(p.start, p.end) for p in pages] == [(0, 3), (3, 20), (20, 21)]


def test_an_empty_body_has_one_empty_page():
    (only,) = paginate([])
    assert (only.number, only.start, only.end) == (1, 0, 0)


@pytest.mark.parametrize("bad", [0, -1, 3, True, "1", 1.0, None])
def test_a_page_it_does_not_have_is_refused_with_the_count(bad):
    with pytest.raises(NoSuchPage) as info:
        page([(0, 4), (4, 8)], bad, budget=4)
    assert info.value.pages == 2 and "expected 1 to 2" in str(info.value)


paragraph = st.text(alphabet=st.sampled_from("ab \n"), min_size=1, max_size=2500)


@settings(max_examples=60, deadline=None)
@given(st.lists(paragraph, min_size=1, max_size=40), st.integers(min_value=1, max_value=6000))
def test_pages_cover_the_body_in_order_with_whole_chunks(paragraphs, budget):
    body = "\n\n".join(paragraphs)
    chunks = chunk_body(body)
    spans = [(c.start, c.end) for c in chunks]
    pages = paginate(spans, budget=budget)
    assert "".join(body[p.start : p.end] for p in pages) == body
    assert [p.number for p in pages] == list(range(1, len(pages) + 1))
    assert pages[0].first == 0 and pages[-1].last == len(chunks) - 1
    for before, after in zip(pages, pages[1:]):
        assert before.last + 1 == after.first and before.end == after.start
        # A page closes only when its next chunk would not fit.
        assert chunks[after.first].end - before.start > budget
    for p in pages:
        assert (p.start, p.end) == (chunks[p.first].start, chunks[p.last].end)
        assert p.end - p.start <= budget or p.first == p.last


def test_the_budget_holds_ten_chunks_and_more():
    assert PAGE_CHARS >= 10 * MAX_CHUNK_CHARS
