"""Sewing ranked chunks into passages: adjacent chunks of one episode read as one contiguous text.

Chunks of an episode are contiguous (``chunk.end`` of one is ``chunk.start`` of the next), so
two hits of the same episode are adjacent exactly when one ends where the other starts. A user
or a model reading two adjacent hits as separate results reads one text cut in two, out of
order, and pays for two headers; a passage is that text once.

The rule: walk the hits best first. A hit adjacent to a passage already taken joins it (and may
join two passages it sits between into one); any other hit opens a new passage while fewer than
``limit`` are open, and ends the walk otherwise. A passage keeps the rank of its best hit, so
the passages come out in the order of their best hits; the limit counts passages, not chunks.

One passage an episode (``distinct``, search's default): a hit of an episode that already has a
passage, and is not adjacent to it, is passed over instead of opening a second one. A document
is then judged as a document, by its best passage, and the limit is spent on as many episodes as
it allows; ``--passages`` (``distinct`` off) gives every passage of an episode its own result.
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


def sew(
    hits: Iterable[Hit[Key]], limit: int, *, join: bool = True, distinct: bool = True
) -> list[Passage[Key]]:
    """Passages of ``hits`` (best first) by the rule in this module's docstring; with ``join``
    off every hit stays a passage of its own (chunk-level results, for measuring); with
    ``distinct`` off an episode may hold several passages."""
    passages: list[Passage[Key]] = []
    seen: set[tuple[int, int, int]] = set()
    # distinct: the hits passed over, by episode; one joins later if a bridging hit reaches it.
    parked: dict[int, list[Hit[Key]]] = {}
    for rank, hit in enumerate(hits):
        span = (hit.episode_id, hit.start, hit.end)
        if span in seen:  # the same text reached twice (identical chunks share an id)
            continue
        seen.add(span)
        touching = [p for p in passages if join and _touches(p, hit)]
        if touching:
            _join(passages, touching, hit)
            if distinct:
                _unpark(_best(touching), parked)
        elif distinct and join and any(p.episode_id == hit.episode_id for p in passages):
            parked.setdefault(hit.episode_id, []).append(hit)
        elif len(passages) >= limit:
            break
        else:
            passages.append(Passage(hit.episode_id, hit.start, hit.end, hit, rank, [hit]))
    return passages


def _touches(p: Passage[Key], hit: Hit[Key]) -> bool:
    return p.episode_id == hit.episode_id and (p.end == hit.start or hit.end == p.start)


def _best(touching: list[Passage[Key]]) -> Passage[Key]:
    return min(touching, key=lambda p: p.rank)


def _join(passages: list[Passage[Key]], touching: list[Passage[Key]], hit: Hit[Key]) -> None:
    """``hit`` added to the passages it touches; between two, it bridges them: the better-ranked
    one absorbs the other."""
    keep = _best(touching)
    for other in touching:
        if other is not keep:
            keep.hits.extend(other.hits)
            passages.remove(other)
    keep.hits.append(hit)
    keep.hits.sort(key=lambda h: h.start)
    keep.start, keep.end = keep.hits[0].start, keep.hits[-1].end


def _unpark(passage: Passage[Key], parked: dict[int, list[Hit[Key]]]) -> None:
    """The parked hits of ``passage``'s episode that it now reaches join it, in turn."""
    waiting = parked.get(passage.episode_id, [])
    grew = True
    while grew:
        grew = False
        for hit in [h for h in waiting if _touches(passage, h)]:
            waiting.remove(hit)
            _join([passage], [passage], hit)
            grew = True
