"""Where the project's SQL files live (``sql/`` at the project root)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SQL_DIR = PROJECT_ROOT / "sql"


@lru_cache(maxsize=None)
def query(name: str) -> str:
    """The text of ``sql/queries/<name>.sql``, read once per process."""
    return (SQL_DIR / "queries" / f"{name}.sql").read_text(encoding="utf-8")
