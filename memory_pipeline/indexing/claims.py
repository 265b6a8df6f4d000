"""An index pass's claims: its pending episodes listed once, claimed a round at a time, given back.

A claim is a session advisory lock on the episode (``index_store.claim_episodes``), taken on the
pass's own connection and given back once the episode is written or the pass ends: passes
running at once, in this process or others, never embed the same episode.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import psycopg

from memory_pipeline.storage import index_store
from memory_pipeline.storage.index_store import EpisodeWork, PendingEpisode
from memory_pipeline.storage.profiles_store import StoredProfile

# A pass claims its episodes this many at a time: the next round is claimed and planned while
# the model embeds the last one, so the model is not idle between rounds, and a pass holds at
# most a few rounds of claims (advisory locks) at once.
CLAIM_ROUND = 500


@dataclass(frozen=True)
class Scope:
    """Which pending episodes a pass takes: ``everything`` pending (of one ingest day), or one
    day's ``stored_chunks`` (the ``embeddings`` partition: chunking is the ``chunks`` stage's)."""

    day: dt.date | None = None
    stored_chunks_only: bool = False

    @classmethod
    def everything(cls, day: dt.date | None = None) -> Scope:
        return cls(day)

    @classmethod
    def stored_chunks(cls, day: dt.date) -> Scope:
        return cls(day, stored_chunks_only=True)


EVERYTHING = Scope.everything()


class Claimer:
    """Claims the pending episodes of one pass on ``conn``: up to ``limit`` of the ``scope``,
    listed at the first round (ids only), then ``CLAIM_ROUND`` at a time (``keep`` drops those
    the scope leaves out once they are planned)."""

    def __init__(self, conn, target: StoredProfile | None, *, limit: int, scope: Scope):
        self.conn, self.target, self.limit, self.scope = conn, target, limit, scope
        self.candidates: list[int] | None = None  # pending ids, listed at the first round
        self.cursor = 0  # candidates before it were tried
        self.exhausted = False
        self.claimed: set[int] = set()  # held now
        self.gone = 0  # listed, then found done or held by another pass, or left out

    @property
    def listed(self) -> int | None:
        """How many episodes the pass listed (None before its first round)."""
        return None if self.candidates is None else len(self.candidates)

    def next_round(self) -> list[PendingEpisode]:
        """Claim the next round of listed episodes; those another pass finished meanwhile or
        holds are skipped. Empty when the round found nothing (``exhausted``: nothing left)."""
        if self.candidates is None:
            # One scan for the pass; rounds then claim from this list.
            self.candidates = index_store.pending_ids(
                self.conn, self.target, limit=self.limit, day=self.scope.day
            )
        if self.cursor >= len(self.candidates):
            self.exhausted = True
            return []
        ids = self.candidates[self.cursor : self.cursor + CLAIM_ROUND]
        self.cursor += len(ids)
        pending, finished = index_store.claim_episodes(self.conn, self.target, ids)
        self.release(finished)
        self.claimed.update(p.id for p in pending)
        self.gone += len(ids) - len(pending)
        return pending

    def keep(self, works: list[EpisodeWork]) -> list[EpisodeWork]:
        """The planned episodes this pass does: all, or in a ``stored_chunks`` scope those whose
        chunks are stored. The others stay claimed (so this pass does not claim them again) and
        are given back with the pass's other claims when it ends."""
        if not self.scope.stored_chunks_only:
            return works
        kept = [w for w in works if w.has_stored_chunks]
        self.gone += len(works) - len(kept)
        return kept

    def release(self, episode_ids: list[int]) -> None:
        """Give back claims (their episodes are written, or the pass ends)."""
        if not episode_ids:
            return
        self.claimed.difference_update(episode_ids)
        try:
            index_store.release_claims(self.conn, episode_ids)
        except psycopg.Error:
            pass  # the connection is gone, and its claims with it

    def release_all(self) -> None:
        self.release(list(self.claimed))
