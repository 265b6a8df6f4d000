"""Observations and beliefs through ``Memory`` (the ``Observing`` part of its class): saving one
beside the close ones, importing a JSONL file of them, listing a memory's, setting a status
(``statements`` holds the saving rules)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_pipeline import statements
from memory_pipeline.domain.episodes import validate_memory_name
from memory_pipeline.domain.observations import (
    InvalidObservation,
    make_observation,
    parse_observation_lines,
)
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import InputError
from memory_pipeline.memory.adding import checked
from memory_pipeline.storage import observations_store
from memory_pipeline.storage.database import Database

# At most this many statements in one listing.
MAX_LIST_STATEMENTS = 1000


def import_file(
    db: Database,
    path: str | os.PathLike,
    embedder: Callable[[], Embedder | None],
    *,
    memory: str | None,
    force: bool,
) -> tuple[list[statements.SaveOutcome], list[str]]:
    """``Memory.import_observations``: the outcomes, and ``FILE:LINE: reason`` per rejected line."""
    display = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{display}: cannot read: {exc.strerror or exc}") from None
    drafts, rejections = parse_observation_lines(data, display, memory=memory)
    outcomes = []
    model = embedder() if drafts else None
    for line, draft in drafts:
        try:
            outcome = statements.save(db, draft, embedder=model, decision="add", force=force)
        except InputError as exc:  # e.g. an episode of another memory: this line only
            rejections.append((line, f"{display}:{line}: {exc}"))
            continue
        if outcome.action == "refused":
            rejections.append(
                (
                    line,
                    f"{display}:{line}: near-exact duplicate of statement "
                    f"#{outcome.duplicate_of} (force saves it anyway)",
                )
            )
        outcomes.append(outcome)
    return outcomes, [text for _, text in sorted(rejections)]


def listing(db: Database, memory: str, *, kind: str | None, with_retired: bool, limit: int) -> list:
    """A memory's statements, newest first (retired versions only ``with_retired``)."""
    if kind is not None and kind not in ("observation", "belief"):
        raise InputError(f"unknown kind {kind!r} (expected observation or belief)")
    if (
        isinstance(limit, bool)
        or not isinstance(limit, int)
        or not 1 <= limit <= MAX_LIST_STATEMENTS
    ):
        raise InputError(f"limit {limit!r}: expected 1 to {MAX_LIST_STATEMENTS}")
    with db.connection() as conn:
        return observations_store.listing(
            conn, memory, kind=kind, with_retired=with_retired, limit=limit
        )


class Observing:
    """``Memory``'s statements methods (its class derives from this one)."""

    db: Database
    warnings: list[str]

    if TYPE_CHECKING:

        @property
        def embedder(self) -> Embedder: ...

    def observe(
        self,
        memory: str,
        text: str,
        *,
        kind: str = "observation",
        status: str = "active",
        confidence: float = 1.0,
        episode_ids: Iterable[int] = (),
        passages: Iterable[str] = (),
        author: str = "",
        observed_at: Any = None,
        decision: str = "ask",
        revise_id: int | None = None,
        force: bool = False,
        valid_from: Any = None,
        valid_until: Any = None,
    ) -> statements.SaveOutcome:
        """Save an observation or a belief, showing close existing ones first (``statements``):
        ``decision`` "ask" saves only when nothing is close, "add" saves anyway, "revise" replaces
        ``revise_id`` (kept as history, superseded now); a near-exact duplicate is refused unless
        ``force``. ``valid_from``/``valid_until``: when it holds in the world (default: from
        when observed, until further notice)."""
        try:
            draft = make_observation(
                memory=memory,
                text=text,
                kind=kind,
                status=status,
                confidence=confidence,
                episode_ids=list(episode_ids),
                passages=list(passages),
                author=author,
                observed_at=observed_at,
                valid_from=valid_from,
                valid_until=valid_until,
            )
        except InvalidObservation as exc:
            raise InputError(str(exc)) from None
        return statements.save(
            self.db,
            draft,
            embedder=self._statement_embedder(),
            decision=decision,
            revise_id=revise_id,
            force=force,
        )

    def import_observations(
        self, path: str | os.PathLike, *, memory: str | None = None, force: bool = False
    ) -> tuple[list[statements.SaveOutcome], list[str]]:
        """Save every statement of a JSONL file (``domain.observations.JSONL_FIELDS``) next to the
        close ones ("add"); near-exact duplicates are refused unless ``force``. Returns the outcomes
        and ``FILE:LINE: reason`` for each rejected line (bad fields, a cited episode of another
        memory, or a duplicate)."""
        return import_file(self.db, path, self._statement_embedder, memory=memory, force=force)

    def observations(
        self, memory: str, *, kind: str | None = None, with_retired: bool = False, limit: int = 100
    ) -> list:
        """A memory's statements, newest first (retired versions only ``with_retired``)."""
        memory = checked(validate_memory_name, memory, "memory")
        return listing(self.db, memory, kind=kind, with_retired=with_retired, limit=limit)

    def set_observation_status(self, memory: str, observation_id: int, status: str) -> None:
        """Mark a statement active, contested or retired."""

        statements.set_status(
            self.db, checked(validate_memory_name, memory, "memory"), observation_id, status
        )

    def _statement_embedder(self) -> Embedder | None:
        """The embedder for close-by-vector, or None when it cannot even be built (words only)."""
        try:
            return self.embedder
        except Exception as exc:  # noqa: BLE001 - a provider that cannot start leaves the words
            self.warnings.append(f"close statements by words only: {exc}")
            return None
