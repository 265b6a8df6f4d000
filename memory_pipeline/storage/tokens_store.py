"""API tokens (``api_tokens``, migration 0009): only a token's SHA-256 is stored."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

import psycopg

from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.paths import query


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class StoredToken:
    name: str
    memories: tuple[str, ...]  # ("*",): every memory
    access: str  # "read" or "write"
    created_at: dt.datetime

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "memories": list(self.memories),
            "access": self.access,
            "createdAt": self.created_at.isoformat(),
        }


def create(
    conn: psycopg.Connection, name: str, token: str, memories: list[str], access: str
) -> StoredToken:
    """Store a new token (its hash); psycopg.errors.UniqueViolation when the name is taken."""
    row = one_row(
        conn,
        query("api_token_insert"),
        (name, token_hash(token), memories, access),
    )
    return StoredToken(row[0], tuple(row[1]), row[2], row[3])


def find(conn: psycopg.Connection, token: str) -> StoredToken | None:
    row = conn.execute(
        "SELECT name, memories, access, created_at FROM api_tokens WHERE token_hash = %s",
        (token_hash(token),),
    ).fetchone()
    return StoredToken(row[0], tuple(row[1]), row[2], row[3]) if row else None


def list_tokens(conn: psycopg.Connection) -> list[StoredToken]:
    rows = conn.execute(
        "SELECT name, memories, access, created_at FROM api_tokens ORDER BY name"
    ).fetchall()
    return [StoredToken(r[0], tuple(r[1]), r[2], r[3]) for r in rows]


def revoke(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("DELETE FROM api_tokens WHERE name = %s", (name,)).rowcount > 0


def any_tokens(conn: psycopg.Connection) -> bool:
    return one_row(conn, "SELECT EXISTS (SELECT 1 FROM api_tokens)")[0]
