"""Bearer tokens through ``Memory`` (the ``Tokens`` part of its class): what the HTTP and MCP
servers check (``tokens`` makes and hashes them)."""

from __future__ import annotations

from memory_pipeline import tokens
from memory_pipeline.errors import InputError
from memory_pipeline.storage import tokens_store
from memory_pipeline.storage.database import Database


class Tokens:
    """``Memory``'s token methods (its class derives from this one)."""

    db: Database

    def create_token(
        self, name: str, memories: list[str], access: str
    ) -> tuple[str, tokens_store.StoredToken]:
        """A new bearer token for ``memories`` (``["*"]``: all) with ``access`` "read" or "write";
        returns the token itself (shown once, only its hash is stored) and its record."""
        return tokens.create(self.db, name, memories, access)

    def tokens(self) -> list[tokens_store.StoredToken]:
        with self.db.connection() as conn:
            return tokens_store.list_tokens(conn)

    def revoke_token(self, name: str) -> None:
        with self.db.connection() as conn:
            if not tokens_store.revoke(conn, name):
                raise InputError(f"no token named {name!r}")

    def token_access(self, token: str) -> tokens_store.StoredToken | None:
        """The record of a presented token, or None when it is unknown or revoked."""
        with self.db.connection() as conn:
            return tokens_store.find(conn, token)

    def tokens_configured(self) -> bool:
        with self.db.connection() as conn:
            return tokens_store.any_tokens(conn)
