"""Entities through ``Memory`` (the ``Entities`` part of its class): importing them, and a
memory's most mentioned."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from memory_pipeline.storage import entities_store
from memory_pipeline.storage.database import Database


class Entities:
    """``Memory``'s entity methods (its class derives from this one)."""

    db: Database

    if TYPE_CHECKING:

        def require_memory(self, memory: object) -> str: ...

    def import_entities(self, pairs: Iterable[tuple[str, Any]]) -> entities_store.EntityReport:
        """Store entities given as (memory, ``domain.entities.Entity``) pairs (what
        ``parse_entity_import`` reads), merging those a memory knows already by name or alias,
        and link each touched memory's episodes that mention them (the graph channel)."""
        report = entities_store.EntityReport()
        with self.db.connection() as conn:
            touched = entities_store.import_entities(conn, list(pairs), report)
            for memory in sorted(touched):
                entities_store.link_mentions(conn, memory, report)
        return report

    def entities(self, memory: str, *, limit: int = 10) -> list[dict]:
        """A memory's entities with their aliases, source and episode count, most mentioned
        first; UnknownMemory when it has no episodes."""
        memory = self.require_memory(memory)
        with self.db.connection() as conn:
            return entities_store.top_entities(conn, [memory], limit=limit)
