"""How long indexing what is pending will take, from the profile's measured speed.

Every index run of some length records its profile's speed (characters of episode bodies per
second of its passes: the model's cost follows the text's length, not the episodes' count);
``memory-pipeline index`` says before a long backlog how long it will take, and ``status``
beside the pending count. Until a run has measured it, the bundled model is assumed to run at
its rough speed on a small CPU, so a first big index on it is no surprise; other models are
not guessed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.progress import duration
from memory_pipeline.storage import index_store, profiles_store
from memory_pipeline.storage.database import Database

# A run shorter than this measures its start-up (loading the model, the canary), not its speed.
MIN_MEASURED_SECONDS = 5.0
# The bundled model on two small CPU cores, until a run here measured it (benchmarks/README.md).
BUNDLED_CHARACTERS_PER_SECOND = 600.0
# A backlog estimated to take at least this long is announced before the index starts.
LONG_INDEX_SECONDS = 600.0


@dataclass(frozen=True)
class Estimate:
    profile: str
    local: bool
    characters: int
    characters_per_second: float | None
    measured: bool

    @property
    def seconds(self) -> float | None:
        if not self.characters_per_second or not self.characters:
            return None
        return self.characters / self.characters_per_second

    @property
    def long(self) -> bool:
        return (self.seconds or 0.0) >= LONG_INDEX_SECONDS

    def phrase(self) -> str | None:
        """ "about 2 h 40 min with the bundled model; ..." (None: nothing to say)."""
        seconds = self.seconds
        if seconds is None:
            return None
        how = "measured here" if self.measured else "its usual speed, not measured here yet"
        if not self.local:
            return f"about {duration(seconds)} with {self.profile} ({how})"
        return (
            f"about {duration(seconds)} with the bundled model ({how}); an Ollama server is "
            "faster: docs/configuration.md"
        )

    def to_json(self) -> dict:
        return {
            "profile": self.profile,
            "characters": self.characters,
            "charactersPerSecond": self.characters_per_second,
            "measured": self.measured,
            "seconds": round(self.seconds, 1) if self.seconds is not None else None,
            "summary": self.phrase(),
        }


def estimate(db: Database, profile: EmbeddingProfile, day: dt.date | None = None) -> Estimate:
    """The pending backlog (of one ingest day) of ``profile``'s written generation and how long
    it takes."""
    with db.connection() as conn:
        stored = profiles_store.writing_target(conn, profile)
        characters = index_store.pending_characters(conn, stored, day)
        speed = profiles_store.stored_speed(conn, stored.id) if stored else None
    local = profile.provider == "local"
    if speed is None and local:
        return Estimate(profile.name, local, characters, BUNDLED_CHARACTERS_PER_SECOND, False)
    return Estimate(profile.name, local, characters, speed, speed is not None)


class SpeedMeter:
    """Counts the episodes a run commits (``committed`` wraps the run's own callback) and
    records the profile's speed at the end (``record``)."""

    def __init__(self, then: Callable[[list[int]], None] | None = None):
        self.then = then
        self.episode_ids: list[int] = []

    def committed(self, episode_ids: list[int]) -> None:
        self.episode_ids.extend(episode_ids)
        if self.then is not None:
            self.then(episode_ids)

    def record(self, db: Database, profile: EmbeddingProfile, seconds: float) -> float | None:
        """Store the run's speed when it ran long enough to measure one; that speed."""
        if seconds < MIN_MEASURED_SECONDS or not self.episode_ids:
            return None
        with db.connection() as conn:
            characters = index_store.characters_of(conn, self.episode_ids)
            stored = profiles_store.get_profile(conn, profile)
            if stored is None or not characters:
                return None
            speed = characters / seconds
            profiles_store.record_speed(conn, stored.id, speed)
        return speed
