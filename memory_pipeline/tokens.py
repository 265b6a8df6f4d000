"""Access tokens: a random secret scoped to memories and to reading or writing, stored as a hash.

``Memory.create_token`` makes one; the token itself is shown once, only its hash is stored
(``tokens_store``). The HTTP API and the MCP server check a presented token (``server.access``).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

import psycopg

from memory_pipeline.domain.episodes import validate_memory_name
from memory_pipeline.errors import InputError
from memory_pipeline.storage import tokens_store
from memory_pipeline.storage.database import Database

# The scope of a token for every memory, present and future.
ALL_MEMORIES = "*"
TOKEN_PREFIX = "mpt_"


def new_token() -> str:
    """A fresh random token (256 bits); only its hash is ever stored."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def _scope(memories: Iterable[object]) -> list[str]:
    names = set()
    for memory in memories:
        if memory == ALL_MEMORIES:
            names.add(ALL_MEMORIES)
            continue
        try:
            names.add(validate_memory_name(memory))
        except ValueError as exc:
            raise InputError(f"memory {memory!r}: {exc}") from None
    return sorted(names)


def create(
    db: Database, name: str, memories: list[str], access: str
) -> tuple[str, tokens_store.StoredToken]:
    """A new token named ``name`` for ``memories`` (``[ALL_MEMORIES]``: all) with ``access``
    "read" or "write": the token itself and its stored record. InputError for a bad name, scope
    or access, or a name in use."""
    if not isinstance(name, str) or not name.strip() or len(name) > 100 or "\x00" in name:
        raise InputError("a token needs a name of 1 to 100 characters")
    if access not in ("read", "write"):
        raise InputError(f"access {access!r}: expected read or write")
    if not memories:
        raise InputError("a token needs at least one memory (or '*' for every memory)")
    names = _scope(memories)
    token = new_token()
    try:
        with db.connection() as conn:
            return token, tokens_store.create(conn, name.strip(), token, names, access)
    except psycopg.errors.UniqueViolation:
        raise InputError(
            f"a token named {name.strip()!r} exists already (revoke it first)"
        ) from None
