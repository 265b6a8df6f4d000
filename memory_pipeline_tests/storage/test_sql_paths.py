"""The SQL files as the code sends them (storage.paths.query)."""

from __future__ import annotations

import pytest
from psycopg import _queries

from memory_pipeline.storage.paths import SQL_DIR, query

NAMES = sorted(path.stem for path in (SQL_DIR / "queries").glob("*.sql"))


@pytest.mark.parametrize("name", NAMES)
def test_a_query_is_sent_without_its_whole_line_comments(name):
    text = (SQL_DIR / "queries" / f"{name}.sql").read_text(encoding="utf-8")
    sent = query(name)
    assert not any(line.lstrip().startswith("--") for line in sent.splitlines())
    code = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    assert sent.splitlines() == code  # nothing else changed


@pytest.mark.parametrize(
    "name",
    [
        "keyword_capped",
        "keyword_exact",
        "keyword_bm25",
        "keyword_lexemes",
        "search_results",
        "graph_chunks",
        "graph_chunks_recent_first",
    ],
)
def test_every_search_statement_fits_psycopgs_conversion_cache(name):
    # psycopg converts a statement's %(name)s placeholders once and caches it only up to this
    # length; a longer one is converted again on every search.
    assert len(query(name).encode()) <= _queries.MAX_CACHED_STATEMENT_LENGTH
