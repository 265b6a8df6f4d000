"""Embedding profiles and their generations: registering, canaries, reindexing, switching, rollback.

Vocabulary:
- a profile's ``generation`` is the one search serves (when the profile is active);
- ``building_generation`` is the one a reindex is filling; index passes write there;
- a generation row keeps the canary (a fixed phrase and its vector) and a state:
  building -> ready (complete) -> retired (replaced), or stale (the model changed under it).
A switch (new generation or new profile becoming active) happens in one transaction, only when
nothing is pending for it; old vectors are never deleted, so rolling back is one UPDATE.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg.types.json import Jsonb

from memory_pipeline.domain import calibration
from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.paths import query


@dataclass(frozen=True)
class StoredProfile:
    id: int
    name: str
    provider: str
    model: str
    dim: int
    generation: int
    is_active: bool
    building_generation: int | None = None

    @property
    def profile(self) -> EmbeddingProfile:
        return EmbeddingProfile(self.provider, self.model, self.dim)

    @property
    def write_generation(self) -> int:
        return self.building_generation or self.generation

    def writing(self) -> StoredProfile:
        """This profile as index passes see it: ``generation`` is the one being written."""
        return dataclasses.replace(self, generation=self.write_generation)


@dataclass(frozen=True)
class Generation:
    profile_id: int
    generation: int
    state: str
    stale_reason: str | None
    canary_text: str | None
    canary_vector: np.ndarray | None


_COLUMNS = "id, name, provider, model, dim, generation, is_active, building_generation"


def _profile(row) -> StoredProfile | None:
    return StoredProfile(*row) if row else None


def get_profile(conn: psycopg.Connection, profile: EmbeddingProfile) -> StoredProfile | None:
    return _profile(
        conn.execute(
            f"SELECT {_COLUMNS} FROM embedding_profiles WHERE name = %s", (profile.name,)
        ).fetchone()
    )


def writing_target(conn: psycopg.Connection, profile: EmbeddingProfile) -> StoredProfile | None:
    """The stored ``profile`` as the generation index passes write (its building one, if any);
    None when it was never registered: then every episode is pending for it."""
    stored = get_profile(conn, profile)
    return stored.writing() if stored else None


def active_profile(conn: psycopg.Connection) -> StoredProfile | None:
    return _profile(
        conn.execute(f"SELECT {_COLUMNS} FROM embedding_profiles WHERE is_active").fetchone()
    )


def serving_profile(
    conn: psycopg.Connection,
) -> tuple[StoredProfile | None, tuple[str, str | None] | None]:
    """``active_profile`` and its ``generation_state`` in one round trip (every search asks)."""
    profile, state, _ = serving(conn)
    return profile, state


def serving(
    conn: psycopg.Connection,
) -> tuple[StoredProfile | None, tuple[str, str | None] | None, Calibration]:
    """``serving_profile`` and the serving generation's calibration (the defaults when none is
    stored), in the same round trip (``serving_profile.sql``)."""
    row = conn.execute(query("serving_profile"), {"memory": None}).fetchone()
    if row is None:
        return None, None, calibration.DEFAULT
    state = None if row[8] is None else (row[8], row[9])
    stored = calibration.DEFAULT if row[10] is None else Calibration.from_json(row[10])
    return _profile(row[:8]), state, stored


@dataclass(frozen=True)
class Serving:
    """What the vector channel reads first, in one round trip (``serving_profile.sql``): the
    active profile, its generation's state, its calibration (the defaults, unmeasured, when none
    is stored) and the searched memory's chunk-row count (None: no statistics)."""

    profile: StoredProfile | None
    state: tuple[str, str | None] | None
    calibration: Calibration
    rows: int | None


def serving_in(conn: psycopg.Connection, memory: str) -> Serving:
    return _serving_of(conn.execute(query("serving_profile"), {"memory": memory}).fetchone())


def _serving_of(row) -> Serving:
    if row is None:
        return Serving(None, None, calibration.DEFAULT, None)
    state = None if row[8] is None else (row[8], row[9])
    stored = calibration.DEFAULT if row[10] is None else Calibration.from_json(row[10])
    return Serving(_profile(row[:8]), state, stored, row[11])


class ServingRead:
    """``serving_in`` sent beside another statement, in its round trip (``vector_store.
    nearest_chunks``): ``send`` queues it on a connection in pipeline mode and returns what
    reads its answer once the pipeline has synced; ``serving`` is then set."""

    def __init__(self, memory: str):
        self.memory = memory
        self.serving: Serving | None = None

    def send(self, conn: psycopg.Connection) -> Callable[[], None]:
        cursor = conn.execute(query("serving_profile"), {"memory": self.memory})

        def read() -> None:
            self.serving = _serving_of(cursor.fetchone())

        return read


def candidate_in(conn: psycopg.Connection, candidate: StoredProfile, memory: str) -> Serving:
    """``serving_in`` for a generation that does not serve yet (``candidate.generation``): what
    the quality guard scores beside the serving one before a switch (``search.quality_guard``)."""
    state = generation_state(conn, candidate.id, candidate.generation)
    measured = stored_calibration(conn, candidate.id, candidate.generation)
    rows = conn.execute(
        "SELECT chunks FROM keyword_memory_stats WHERE memory = %s", (memory,)
    ).fetchone()
    return Serving(
        candidate, state, measured or calibration.DEFAULT, None if rows is None else rows[0]
    )


def record_calibration(
    conn: psycopg.Connection, profile_id: int, generation: int, measured: Calibration
) -> None:
    conn.execute(
        "UPDATE embedding_generations SET calibration = %s WHERE profile_id = %s AND generation = %s",
        (Jsonb(measured.to_json()), profile_id, generation),
    )


def stored_calibration(
    conn: psycopg.Connection, profile_id: int, generation: int
) -> Calibration | None:
    """A generation's stored calibration; None when it was never measured."""
    row = conn.execute(
        "SELECT calibration FROM embedding_generations WHERE profile_id = %s AND generation = %s",
        (profile_id, generation),
    ).fetchone()
    return None if row is None or row[0] is None else Calibration.from_json(row[0])


def record_speed(conn: psycopg.Connection, profile_id: int, characters_per_second: float) -> None:
    """The speed a run of the profile just reached (``indexing.estimate``)."""
    conn.execute(
        query("profile_record_speed"),
        (characters_per_second, profile_id),
    )


def stored_speed(conn: psycopg.Connection, profile_id: int) -> float | None:
    """Characters per second the profile's last measured run reached; None: never measured."""
    row = conn.execute(
        "SELECT characters_per_second FROM embedding_profiles WHERE id = %s", (profile_id,)
    ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def generation_state(
    conn: psycopg.Connection, profile_id: int, generation: int
) -> tuple[str, str | None] | None:
    """(state, stale reason) of one generation, without its canary: what every search checks."""
    return conn.execute(
        "SELECT state, stale_reason FROM embedding_generations WHERE profile_id = %s AND generation = %s",
        (profile_id, generation),
    ).fetchone()


def get_generation(conn: psycopg.Connection, profile_id: int, generation: int) -> Generation | None:
    row = conn.execute(
        query("generation_get"),
        (profile_id, generation),
    ).fetchone()
    if row is None:
        return None
    vector = np.asarray(row[5].to_numpy(), dtype=np.float32) if row[5] is not None else None
    return Generation(row[0], row[1], row[2], row[3], row[4], vector)


def register_profile(conn: psycopg.Connection, profile: EmbeddingProfile) -> StoredProfile:
    """The stored profile for ``profile``, created if new (active at once if none is active yet)."""
    with conn.transaction():
        conn.execute("LOCK TABLE embedding_profiles IN SHARE ROW EXCLUSIVE MODE")
        stored = get_profile(conn, profile)
        if stored is None:
            first = active_profile(conn) is None
            conn.execute(
                "INSERT INTO embedding_profiles (name, provider, model, dim, is_active) VALUES (%s, %s, %s, %s, %s)",
                (profile.name, profile.provider, profile.model, profile.dim, first),
            )
            stored = get_profile(conn, profile)
            assert stored is not None
        conn.execute(
            query("generation_register"),
            (stored.id, stored.write_generation),
        )
    return stored


def record_canary(
    conn: psycopg.Connection, profile_id: int, generation: int, text: str, vector: np.ndarray
) -> None:
    conn.execute(
        query("generation_record_canary"),
        (text, HalfVector(vector), profile_id, generation),
    )


def mark_stale(conn: psycopg.Connection, profile_id: int, generation: int, reason: str) -> None:
    conn.execute(
        "UPDATE embedding_generations SET state = 'stale', stale_reason = %s WHERE profile_id = %s AND generation = %s",
        (reason, profile_id, generation),
    )


def clear_stale(
    conn: psycopg.Connection, profile_id: int, generation: int, *, building: bool
) -> None:
    """The original model is back: a stale generation's vectors are comparable again."""
    conn.execute(
        query("generation_clear_stale"),
        ("building" if building else "ready", profile_id, generation),
    )


def mark_built(conn: psycopg.Connection, profile_id: int, generation: int) -> None:
    """A generation that was building is complete: ready to serve."""
    conn.execute(
        query("generation_mark_built"),
        (profile_id, generation),
    )


def start_reindex(
    conn: psycopg.Connection, profile: EmbeddingProfile
) -> tuple[StoredProfile, bool]:
    """Begin (or resume) building a new generation of ``profile``; returns (profile, resumed).

    A building generation is resumed unless it is stale: the model changed under it too, so
    its vectors can never be completed by the model served now. It is then left stale (its
    vectors kept, never served) and the next generation starts, so after any number of model
    changes a reindex builds from the model now served."""
    register_profile(conn, profile)
    with conn.transaction():
        # Locked and re-read: two reindexes started at once must not both pick the next number.
        conn.execute("LOCK TABLE embedding_profiles IN SHARE ROW EXCLUSIVE MODE")
        stored = get_profile(conn, profile)
        assert stored is not None  # registered above; profiles are never deleted
        if stored.building_generation is not None:
            state = generation_state(conn, stored.id, stored.building_generation)
            if state is None or state[0] != "stale":
                return stored, True
        next_generation = one_row(
            conn,
            "SELECT coalesce(max(generation), 0) + 1 FROM embedding_generations WHERE profile_id = %s",
            (stored.id,),
        )[0]
        conn.execute(
            "UPDATE embedding_profiles SET building_generation = %s WHERE id = %s",
            (next_generation, stored.id),
        )
        conn.execute(
            "INSERT INTO embedding_generations (profile_id, generation, state) VALUES (%s, %s, 'building')",
            (stored.id, next_generation),
        )
    return get_profile(conn, profile), False  # type: ignore[return-value]


def promote(conn: psycopg.Connection, stored: StoredProfile) -> str | None:
    """Make the written generation the one search serves; call only when nothing is pending for it.

    Returns a sentence describing the switch, or None when there was nothing to switch.
    """
    target = stored.write_generation
    with conn.transaction():
        conn.execute("LOCK TABLE embedding_profiles IN SHARE ROW EXCLUSIVE MODE")
        current = conn.execute(
            f"SELECT {_COLUMNS} FROM embedding_profiles WHERE id = %s", (stored.id,)
        ).fetchone()
        stored = _profile(current)  # type: ignore[assignment]
        if stored.write_generation != target:
            return None  # someone else switched meanwhile
        state = conn.execute(
            "SELECT state FROM embedding_generations WHERE profile_id = %s AND generation = %s",
            (stored.id, target),
        ).fetchone()
        if state and state[0] == "stale":
            return None
        previous = active_profile(conn)
        changed_generation = stored.building_generation is not None
        if changed_generation:
            conn.execute(
                "UPDATE embedding_generations SET state = 'retired' WHERE profile_id = %s AND generation = %s AND state = 'ready'",
                (stored.id, stored.generation),
            )
            conn.execute(
                "UPDATE embedding_profiles SET generation = building_generation, building_generation = NULL WHERE id = %s",
                (stored.id,),
            )
        mark_built(conn, stored.id, target)
        changed_profile = not stored.is_active
        if changed_profile:
            conn.execute("UPDATE embedding_profiles SET is_active = false WHERE is_active")
            conn.execute(
                "UPDATE embedding_profiles SET is_active = true WHERE id = %s", (stored.id,)
            )
    if changed_profile:
        before = f"{previous.name} generation {previous.generation}" if previous else "nothing"
        return f"search now uses {stored.name} generation {target} (was {before})"
    if changed_generation:
        return f"search now uses {stored.name} generation {target} (was generation {stored.generation})"
    return None


def rollback_target(conn: psycopg.Connection) -> tuple[StoredProfile, Generation]:
    """The active profile and the generation ``rollback`` would serve: the last good one (ready
    or retired) before the serving one, passing over stale ones; LookupError saying why none."""
    active = active_profile(conn)
    if active is None:
        raise LookupError("nothing to roll back: no profile is active")
    row = conn.execute(
        query("generation_rollback_target"),
        (active.id, active.generation),
    ).fetchone()
    if row is None:
        earlier = conn.execute(
            query("generation_previous"),
            (active.id, active.generation),
        ).fetchone()
        if earlier is not None and earlier[1] == "stale":
            raise LookupError(
                f"nothing to roll back: generation {earlier[0]} of {active.name} is stale ({earlier[2]}); "
                "its vectors are not served again"
            )
        raise LookupError(f"nothing to roll back: {active.name} has no earlier generation")
    generation = get_generation(conn, active.id, row[0])
    assert generation is not None
    return active, generation


def rollback(conn: psycopg.Connection, expected: int | None = None) -> str:
    """Serve the last good generation before the active one (its vectors were kept), abandoning
    a reindex in progress. A stale generation stays stale, never 'retired': it must never be
    rolled back to. ``expected``: the generation the caller checked (``rollback_target``);
    LookupError if another one would be served by now."""
    with conn.transaction():
        conn.execute("LOCK TABLE embedding_profiles IN SHARE ROW EXCLUSIVE MODE")
        active, target = rollback_target(conn)
        if expected is not None and expected != target.generation:
            raise LookupError(
                f"the generations changed meanwhile (generation {target.generation} is now the "
                "one to roll back to): run it again"
            )
        conn.execute(
            query("generation_retire"),
            (active.id, active.generation),
        )
        conn.execute(
            "UPDATE embedding_generations SET state = 'ready' WHERE profile_id = %s AND generation = %s",
            (active.id, target.generation),
        )
        conn.execute(
            "UPDATE embedding_profiles SET generation = %s, building_generation = NULL WHERE id = %s",
            (target.generation, active.id),
        )
    return (
        f"search now uses {active.name} generation {target.generation} "
        f"(was generation {active.generation})"
    )
