"""Apply ``sql/migrations/NNNN_*.sql`` exactly once each, safely when processes race."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

from memory_pipeline.storage.paths import SQL_DIR, query

MIGRATION_RE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# Any constant works; it only has to be the same in every process of the project.
ADVISORY_LOCK_KEY = 0x6D656D70  # "memp"


def migration_files(directory: Path = SQL_DIR / "migrations") -> list[tuple[int, str, Path]]:
    found = []
    for path in sorted(directory.iterdir()):
        match = MIGRATION_RE.match(path.name)
        if match:
            found.append((int(match.group(1)), path.stem, path))
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number in {directory}")
    return found


def apply_migrations(
    conn: psycopg.Connection, directory: Path = SQL_DIR / "migrations"
) -> list[str]:
    """Apply pending migrations in one transaction; return the names applied now.

    The advisory lock is taken before anything else, including creating the bookkeeping table,
    because two concurrent ``CREATE TABLE IF NOT EXISTS`` can still collide in the catalog.
    PostgreSQL DDL is transactional, so a failing migration leaves nothing half-applied.
    """
    applied_now: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_LOCK_KEY,))
        conn.execute(query("schema_migrations_create"))
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for version, name, path in migration_files(directory):
            if version in done:
                continue
            conn.execute(path.read_text(encoding="utf-8"))
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name)
            )
            applied_now.append(name)
    return applied_now
