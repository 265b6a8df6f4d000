"""Sewing ranked chunks into passages: adjacent chunks of one episode read as one contiguous text.

Chunks of an episode are contiguous (``chunk.end`` of one is ``chunk.start`` of the next), so
two hits of the same episode are adjacent exactly when one ends where the other starts. A user
or a model reading two adjacent hits as separate results reads one text cut in two, out of
order, and pays for two headers; a passage is that text once.

The rule: walk the hits best first. A hit adjacent to a passage already taken joins it (and may
join two passages it sits between into one); any other hit opens a new passage while fewer than
``limit`` are open, and ends the walk otherwise. A passage keeps the rank of its best hit, so
the passages come out in the order of their best hits; the limit counts passages, not chunks.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)  # what identifies a hit: a chunk id, a test's number


@dataclass(frozen=True)
class Hit(Generic[Key]):
    """One ranked chunk: ``key`` identifies it, ``start``/``end`` are offsets in its episode body."""

    key: Key
    episode_id: int
    start: int
    end: int


@dataclass
class Passage(Generic[Key]):
    """Adjacent hits of one episode: ``hits`` in text order, ``best`` the best-ranked of them."""

    episode_id: int
    start: int
    end: int
    best: Hit[Key]
    rank: int  # 0-based rank of ``best`` in the walk
    hits: list[Hit[Key]] = field(default_factory=list)

    @property
    def keys(self) -> list[Key]:
        return [h.key for h in self.hits]


def sew(hits: Iterable[Hit[Key]], limit: int, *, join: bool = True) -> list[Passage[Key]]:
    """Passages of ``hits`` (best first) by the rule in this module's docstring; with ``join``
    off every hit stays a passage of its own (chunk-level results, for measuring)."""
    passages: list[Passage[Key]] = []
    seen: set[tuple[int, int, int]] = set()
    for rank, hit in enumerate(hits):
        span = (hit.episode_id, hit.start, hit.end)
        if span in seen:  # the same text reached twice (identical chunks share an id)
            continue
        touching = [
            p
            for p in passages
            if join
            and p.episode_id == hit.episode_id
            and (p.end == hit.start or hit.end == p.start)
        ]
        if not touching:
            if len(passages) >= limit:
                break
            passages.append(Passage(hit.episode_id, hit.start, hit.end, hit, rank, [hit]))
        else:
            # Between two passages, the hit bridges them: the better-ranked one absorbs the other.
            keep = min(touching, key=lambda p: p.rank)
            for other in touching:
                if other is not keep:
                    keep.hits.extend(other.hits)
                    passages.remove(other)
            keep.hits.append(hit)
            keep.hits.sort(key=lambda h: h.start)
            keep.start, keep.end = keep.hits[0].start, keep.hits[-1].end
        seen.add(span)
    return passages
