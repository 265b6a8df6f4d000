"""Saving statements (observations and beliefs): close existing ones first, revisions, status.

Saving first finds close statements of the same memory, by vector and by words, and shows them
back; the caller's ``decision`` then says ``"ask"`` (save only if none is close), ``"add"``
(save anyway) or ``"revise"`` (replace ``revise_id``, kept retired as history). A near-exact
duplicate is refused unless ``force``; a statement cites only episodes of its own memory.
``save`` stores the new statement's vector at once when it has an embedder of the serving
profile; the index pass writes the missing ones (``indexing.statement_vectors``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.domain.observations import ObservationDraft, is_close, is_near_duplicate
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import EmbedderUnavailable, InputError, ModelRefused
from memory_pipeline.storage import observations_store, profiles_store, search_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.observations_store import StoredObservation

CLOSE_LIMIT = 5
LIVE = ("active", "contested")

log = logging.getLogger(__name__)


class UnknownStatement(InputError):
    """No such live (or, for a status change, any) statement in the memory."""


def _check_sources(db: Database, draft: ObservationDraft) -> None:
    with db.connection() as conn:
        foreign = observations_store.foreign_episodes(conn, draft.memory, draft.episode_ids)
    if foreign:
        listed = ", ".join(map(str, foreign))
        raise InputError(
            f"episode_ids: no episode {listed} in memory {draft.memory!r} "
            "(a statement cites episodes of its own memory)"
        )


@dataclass(frozen=True)
class Close:
    """An existing statement close to the one being saved, and how it was found."""

    observation: StoredObservation
    similarity: float | None  # cosine, when found (or also scored) by vector
    by: str  # "vector", "words" or "vector+words"

    def to_json(self) -> dict:
        return {
            **self.observation.to_json(),
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "foundBy": self.by,
        }


@dataclass
class SaveOutcome:
    action: str  # "added", "revised", "refused" (near duplicate), "undecided" (close ones exist)
    saved_id: int | None = None
    close: list[Close] = field(default_factory=list)
    duplicate_of: int | None = None
    vector: str = "none"  # "stored", "pending" (the index pass embeds it) or "none" (not saved)

    @property
    def saved(self) -> bool:
        return self.saved_id is not None

    @property
    def message(self) -> str:
        """What happened, in words: every interface says "not saved" the same way."""
        if self.action == "refused":
            return (
                f"not saved: a near-exact duplicate of statement #{self.duplicate_of} "
                "(force saves it anyway)"
            )
        if self.action == "undecided":
            return (
                f"not saved: {len(self.close)} close statement(s) already exist; save it next to "
                "them (decision add), replace one (decision revise with its id), or drop it"
            )
        return f"saved as #{self.saved_id}"

    def to_json(self) -> dict:
        return {
            "action": self.action,
            "saved": self.saved,
            "message": self.message,
            "id": self.saved_id,
            "duplicateOf": self.duplicate_of,
            "vector": self.vector,
            "close": [c.to_json() for c in self.close],
        }


def _serving_embedder(conn, embedder: Embedder | None):
    """(profile, embedder, calibration): ``embedder`` when it embeds for the serving profile,
    else None; the serving generation's calibration (its cut-offs; the defaults if unmeasured)."""
    profile, _, measured = profiles_store.serving(conn)
    if profile is None or embedder is None or embedder.profile.name != profile.name:
        return profile, None, measured
    return profile, embedder, measured


def _query_vector(embedder: Embedder | None, text: str) -> np.ndarray | None:
    if embedder is None:
        return None
    try:
        # A statement is compared with statements: embed it as a document, as they were.
        return embedder.embed_documents([text])[0]
    except (EmbedderUnavailable, ModelRefused) as error:
        log.warning("close statements by words only: %s", error)
        return None


def close_existing(
    db: Database,
    draft: ObservationDraft,
    *,
    embedder: Embedder | None = None,
    limit: int = CLOSE_LIMIT,
) -> tuple[list[Close], np.ndarray | None, Calibration]:
    """The live statements (both kinds) of the draft's memory close to it (``domain.observations.
    is_close``: by vector, at the serving profile's calibrated cut-off, or by shared words), most
    similar first; also the draft's vector and the calibration whose cut-offs were used. The
    nearest few by vector and by BM25 are the candidates."""
    with db.connection() as conn:
        profile, usable, measured = _serving_embedder(conn, embedder)
        vector = _query_vector(usable, draft.text)
        by_vector: dict[int, float] = {}
        if vector is not None and profile is not None:
            by_vector = dict(
                observations_store.by_vector(
                    conn,
                    profile,
                    draft.memory,
                    vector,
                    kinds=("observation", "belief"),
                    statuses=LIVE,
                    limit=limit,
                )
            )
        by_words = [
            i
            for i, _ in observations_store.by_words(
                conn,
                draft.memory,
                draft.text,
                kinds=("observation", "belief"),
                statuses=LIVE,
                limit=limit,
            )
        ]
        ids = list(dict.fromkeys([*by_vector, *by_words]))
        stored = observations_store.rows(conn, draft.memory, ids)
        words = set(search_store.query_lexemes(conn, draft.text))
        theirs = {i: set(search_store.query_lexemes(conn, stored[i].text)) for i in ids}
    close = []
    for i in ids:
        if not (
            is_close(by_vector.get(i), words, theirs[i], cut_off=measured.close)
            or is_near_duplicate(draft.text, stored[i].text)
        ):
            continue
        how = "+".join(
            name for name, hit in (("vector", i in by_vector), ("words", i in by_words)) if hit
        )
        close.append(Close(stored[i], by_vector.get(i), how))
    close.sort(
        key=lambda c: (
            -(c.similarity if c.similarity is not None else -1.0),
            ids.index(c.observation.id),
        )
    )
    return close[:limit], vector, measured


def _is_statement_id(value: object) -> bool:
    """Whether ``value`` can name a statement (ids are bigints: a larger number must not reach SQL)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63


def save(
    db: Database,
    draft: ObservationDraft,
    *,
    embedder: Embedder | None = None,
    decision: str = "ask",
    revise_id: int | None = None,
    force: bool = False,
) -> SaveOutcome:
    """Save ``draft`` as ``decision`` says (see the module docstring); InputError for a bad
    decision, a ``revise_id`` that is not a live statement of the memory, or a cited episode
    that is not the memory's."""
    if decision not in ("ask", "add", "revise"):
        raise InputError(f"unknown decision {decision!r} (expected ask, add or revise)")
    if (decision == "revise") != (revise_id is not None):
        raise InputError(
            "revise needs the id of the statement it replaces (and only revise takes one)"
        )
    if revise_id is not None and not _is_statement_id(revise_id):
        raise UnknownStatement(
            f"no active or contested statement #{revise_id} in memory {draft.memory!r} to revise"
        )
    _check_sources(db, draft)
    close, vector, measured = close_existing(db, draft, embedder=embedder)
    outcome = SaveOutcome("undecided", close=close)
    duplicate = next(
        (
            c
            for c in close
            if c.observation.id != revise_id
            and is_near_duplicate(
                draft.text, c.observation.text, c.similarity, cut_off=measured.duplicate
            )
        ),
        None,
    )
    if duplicate is not None and not force:
        outcome.action, outcome.duplicate_of = "refused", duplicate.observation.id
        return outcome
    if decision == "ask" and close:
        return outcome
    with db.connection() as conn:
        if revise_id is not None:  # decision == "revise" (only revise takes one, checked above)
            saved = observations_store.revise(conn, revise_id, draft)
            if saved is None:
                raise UnknownStatement(
                    f"no active or contested statement #{revise_id} in memory {draft.memory!r} "
                    "to revise"
                )
            outcome.action = "revised"
        else:
            saved = observations_store.insert(conn, draft)
            outcome.action = "added"
        outcome.saved_id = saved
        profile, usable, _ = _serving_embedder(conn, embedder)
        if vector is not None and profile is not None:
            observations_store.write_vectors(
                conn, profile, [(saved, draft.memory)], vector[None, :]
            )
            outcome.vector = "stored"
        else:
            outcome.vector = "pending"
    return outcome


def set_status(db: Database, memory: str, observation_id: int, status: str) -> None:
    if status not in ("active", "contested", "retired"):
        raise InputError(f"unknown status {status!r} (expected active, contested or retired)")
    if not _is_statement_id(observation_id):
        raise UnknownStatement(f"no statement #{observation_id} in memory {memory!r}")
    with db.connection() as conn:
        if not observations_store.set_status(conn, memory, observation_id, status):
            raise UnknownStatement(f"no statement #{observation_id} in memory {memory!r}")
