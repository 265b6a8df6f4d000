"""The canary's proof inside an index pass: which embedded episodes a matching canary vouches for.

By default every model call carries the canary phrase first and its vectors count only when that
canary matches the generation's: a model swapped at any moment writes nothing, whichever server
behind one URL answers. With ``canary_every`` N > 1 (one server behind the URL) one call in N
carries it, and an episode is proven only by a matching canary that started after its own calls
ended. N > 1 cannot see a model swapped and back between two canaries, or a load-balanced server
that answered no canary: hence the default of 1.
"""

from __future__ import annotations

import time

import numpy as np

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing.canary import (
    CANARY_MIN_COSINE,
    check_canary,
    cosine_of,
    refuse,
    stored_canary,
)
from memory_pipeline.indexing.report import IndexReport
from memory_pipeline.storage import profiles_store
from memory_pipeline.storage.index_store import EpisodeWork
from memory_pipeline.storage.profiles_store import StoredProfile

# With ``Embedder.canary_every`` above 1, the canary still rides at least this often, so
# vectors wait little for the canary that proves them (module docstring).
CANARY_EVERY_SECONDS = 0.25


class CanaryProof:
    """The generation's canary for one pass: when the next call carries it (``due``), and the
    embedded episodes waiting for a canary sent after their calls ended (``wait``, ``prove``,
    ``proven``)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.profile: StoredProfile | None = None  # registered by ``start``
        self.canary: np.ndarray | None = None
        # The last call that carried the canary: the pass's probe (``check_canary``) is call -1.
        self.last_call, self.last_sent = -1, time.perf_counter()
        # Embedded episodes with the end of their last call, until a canary sent after that end
        # matches (``proven_until``: the latest such canary's start).
        self.unproven: list[tuple[float, EpisodeWork]] = []
        self.proven_until = float("-inf")

    def start(self, conn, report: IndexReport) -> StoredProfile:
        """Register the profile and check the canary before the pass's first write: a wrong
        dimension, an unreachable server or a changed model stops the pass here; a new
        generation's canary is recorded. The generation the pass writes."""
        self.profile = profiles_store.register_profile(conn, self.embedder.profile).writing()
        report.canary_cosine = check_canary(conn, self.embedder, self.profile)
        report.canary_checked = True
        report.model_calls += 1
        self.canary = stored_canary(conn, self.profile)
        return self.profile

    def due(self, call: int, now: float) -> bool:
        """Whether call number ``call``, sent ``now``, carries the canary."""
        return (
            call - self.last_call >= self.embedder.canary_every
            or now - self.last_sent >= CANARY_EVERY_SECONDS
        )

    def sent(self, call: int, now: float) -> None:
        self.last_call, self.last_sent = call, now

    def mismatch(self, vector: np.ndarray) -> float | None:
        """The cosine of ``vector`` to the generation's canary when it does not match; None
        when it does."""
        assert self.canary is not None  # set by ``start``
        cosine = cosine_of(vector, self.canary)
        return cosine if cosine < CANARY_MIN_COSINE else None

    def prove(self, started: float) -> None:
        """A canary sent at ``started`` matched: every call that had ended before it is proven."""
        self.proven_until = max(self.proven_until, started)

    def refuse(self, conn, cosine: float, *, kept: int) -> None:
        """The model changed: mark the generation stale and raise ``ModelRefused``."""
        assert self.profile is not None
        refuse(conn, self.profile, cosine, kept=kept)

    def wait(self, ended: float, work: EpisodeWork) -> None:
        """``work`` is embedded, its last call ended at ``ended`` (-inf: its own canary proved it)."""
        self.unproven.append((ended, work))

    def proven(self) -> list[EpisodeWork]:
        """The waiting episodes whose calls are all proven now (no longer waiting)."""
        done = [work for ended, work in self.unproven if ended <= self.proven_until]
        self.unproven = [(e, w) for e, w in self.unproven if e > self.proven_until]
        return done
