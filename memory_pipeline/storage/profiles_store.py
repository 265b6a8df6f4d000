"""Embedding profiles in the database: registering the configured one and finding the active one."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from memory_pipeline.embedders.base import EmbeddingProfile


@dataclass(frozen=True)
class StoredProfile:
    id: int
    name: str
    provider: str
    model: str
    dim: int
    generation: int
    is_active: bool

    @property
    def profile(self) -> EmbeddingProfile:
        return EmbeddingProfile(self.provider, self.model, self.dim)


_COLUMNS = "id, name, provider, model, dim, generation, is_active"


def get_profile(conn: psycopg.Connection, profile: EmbeddingProfile) -> StoredProfile | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM embedding_profiles WHERE name = %s", (profile.name,)
    ).fetchone()
    return StoredProfile(*row) if row else None


def active_profile(conn: psycopg.Connection) -> StoredProfile | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM embedding_profiles WHERE is_active").fetchone()
    return StoredProfile(*row) if row else None


def activate_profile(conn: psycopg.Connection, profile: EmbeddingProfile) -> StoredProfile:
    """Register ``profile`` if new and make it the one search uses; other profiles keep their rows.

    Runs in one transaction with a table lock so two runs switching at once cannot leave two
    active profiles (the partial unique index would reject it, but with a confusing error).
    """
    with conn.transaction():
        conn.execute("LOCK TABLE embedding_profiles IN SHARE ROW EXCLUSIVE MODE")
        conn.execute(
            """INSERT INTO embedding_profiles (name, provider, model, dim)
               VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO NOTHING""",
            (profile.name, profile.provider, profile.model, profile.dim),
        )
        conn.execute(
            "UPDATE embedding_profiles SET is_active = false WHERE is_active AND name <> %s",
            (profile.name,),
        )
        conn.execute("UPDATE embedding_profiles SET is_active = true WHERE name = %s", (profile.name,))
        stored = get_profile(conn, profile)
    assert stored is not None
    return stored
