"""Where the project's SQL files live (``sql/`` at the project root)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SQL_DIR = PROJECT_ROOT / "sql"


@cache
def query(name: str) -> str:
    """The text of ``sql/queries/<name>.sql``, read once per process, without its whole-line
    comments: they are for readers, not the server, and psycopg converts a query's
    placeholders once and keeps the result only for queries of up to 4 KiB (a commented
    keyword query was converted again on every search)."""
    text = (SQL_DIR / "queries" / f"{name}.sql").read_text(encoding="utf-8")
    return (
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")) + "\n"
    )
