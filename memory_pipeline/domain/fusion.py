"""Fusing the ranked lists of search channels into one order: reciprocal rank, then salience and
recency to break near-ties.

Each channel of a search (``vector``, ``keyword``, ``graph``) returns chunk keys in its own
order. Their raw scores (a cosine distance, a ``ts_rank``, a mention count) are on scales that
cannot be compared, so fusion looks only at ranks (1-based)::

    rrf(key)   = Σ over channels c that returned key:  weight_c / (k + rank_c(key))
    score(key) = rrf(key) + NEAR_TIE × step × nudge(key)

    step   = (smallest positive channel weight) × (1 / (k + 1) − 1 / (k + 2))
    nudge  = (salience_weight × (salience − 0.5) + recency_factor(age_days) − 1) / span
             span = salience_weight + (1 − floor), so the nudges of any two keys differ by <= 1
    recency_factor = floor + (1 − floor) × 0.5 ** (age_days / half_life_days)   in (floor, 1]

with ``k = 60``, weights ``vector 1.0, keyword 1.0, graph 0.7``, ``NEAR_TIE = 0.5``,
``half_life_days = 180`` and ``floor = 0.9``. A key listed twice by one channel counts once, at
its better rank.

Why these constants:

- ``k = 60`` is the constant of Cormack et al. (2009) and of pgvector's hybrid search example.
  It keeps rank 1 from dominating: ranks 1 and 10 of one channel differ by a factor 70/61 ≈ 1.15.
- The graph channel lists recent chunks of episodes that mention an entity of the query: it says
  "about the same person or project", not "answers the question", so it counts 0.7 of a channel.
- Salience and recency only break near-ties. ``step`` is the smallest amount by which one rank
  at the top of any channel changes a score; salience and recency together move a score by less
  than half of it. So a key that every channel that ran put first is first, whatever its age or
  salience (the two scores differ by at least one step), and between keys whose rank sums are
  (nearly) equal, e.g. ranks 1 + 3 against 2 + 2, the more salient and newer comes first. An
  earlier version multiplied the RRF sum by the two factors (±5% salience, up to −10% age); on
  the sample corpus that put a chunk ranked 2 and 4 above one ranked first by both channels.
- ``salience_weight`` (a policy setting) is salience's share of the nudge against recency's
  ``1 − floor``: 0 ignores salience, 0.1 (the default) weighs it as much as age.

The order is deterministic: score descending, then the best rank the key had in any channel,
then the key itself (keys must be orderable; chunk ids are strings). Sums are taken with
``math.fsum``, which is exact up to one final rounding, so the order of the channels in the
input cannot change a score by even the last bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60
CHANNEL_WEIGHTS: Mapping[str, float] = {
    "vector": 1.0, "keyword": 1.0, "graph": 0.7, "observation": 1.0, "belief": 0.7,
}
RECENCY_HALF_LIFE_DAYS = 180
RECENCY_FLOOR = 0.9
DEFAULT_SALIENCE_WEIGHT = 0.1
# Salience and recency together move a score by less than this share of one top-rank step.
NEAR_TIE = 0.5
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class ChunkFacts:
    """What fusion needs to know about a chunk beyond its ranks (both come from its episode)."""

    salience: float  # in [0, 1]
    occurred_at: datetime  # timezone-aware, like ``now``


@dataclass(frozen=True)
class Fused(Generic[K]):
    """One fused result: its final score, the plain RRF sum behind it, and the ranks it had."""

    key: K
    score: float
    rrf: float
    # hash=False: a dict cannot be hashed, and results stay hashable by their other fields.
    ranks: dict[str, int] = field(hash=False)  # channel -> 1-based rank

    @property
    def best_rank(self) -> int:
        """The best (smallest) rank any channel gave this key."""
        return min(self.ranks.values())


def _best_ranks(
    ranked: Mapping[str, Sequence[K]], weights: Mapping[str, float]
) -> dict[K, dict[str, int]]:
    """key -> {channel: best 1-based rank}, channels in the order of ``weights``."""
    unknown = [channel for channel in ranked if channel not in weights]
    if unknown:
        expected = ", ".join(weights)
        raise ValueError(
            f"no weight for channel {', '.join(repr(c) for c in unknown)} (expected {expected})"
        )
    ranks: dict[K, dict[str, int]] = {}
    # Walking the channels in the weights' order, not the input's, keeps each ``ranks`` dict the
    # same whichever order the caller built ``ranked`` in.
    for channel in weights:
        for position, key in enumerate(ranked.get(channel, ()), start=1):
            channels = ranks.setdefault(key, {})
            # The first sighting is the best rank; a later repeat must not count twice.
            channels.setdefault(channel, position)
    return ranks


def _check_k(k: float) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not k >= 0 or math.isinf(k):
        raise ValueError(f"RRF k must be a finite number >= 0, got {k!r}")


def _check_weights(weights: Mapping[str, float]) -> None:
    for channel, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ValueError(f"weight of channel {channel!r} must be a number, got {weight!r}")
        if not (weight >= 0 and math.isfinite(weight)):
            raise ValueError(
                f"weight of channel {channel!r} must be finite and >= 0, got {weight!r}"
            )


def _rrf(ranks: Mapping[str, int], weights: Mapping[str, float], k: float) -> float:
    return math.fsum(weights[channel] / (k + rank) for channel, rank in ranks.items())


def reciprocal_rank_fusion(
    ranked: Mapping[str, Sequence[K]],
    *,
    k: float = RRF_K,
    weights: Mapping[str, float] = CHANNEL_WEIGHTS,
) -> dict[K, float]:
    """key -> Σ weight_c / (k + rank_c(key)) over the channels that returned it (ranks 1-based).

    Every channel in ``ranked`` needs a weight in ``weights`` (ValueError otherwise); a channel
    missing from ``ranked`` or with an empty list simply contributes nothing. A key repeated
    within one list counts once, at its best rank. Only ranks are used, never channel scores.
    """
    _check_k(k)
    _check_weights(weights)
    return {key: _rrf(ranks, weights, k) for key, ranks in _best_ranks(ranked, weights).items()}


def recency_factor(
    age_days: float,
    *,
    half_life_days: float = RECENCY_HALF_LIFE_DAYS,
    floor: float = RECENCY_FLOOR,
) -> float:
    """``floor + (1 - floor) * 0.5 ** (age_days / half_life_days)``: 1.0 new, floor at the limit.

    The part above the floor halves every half-life. A negative age (an episode dated in the
    future, or a clock skew between machines) counts as new: 1.0.
    """
    if isinstance(age_days, bool) or not isinstance(age_days, (int, float)) or math.isnan(age_days):
        raise ValueError(f"age_days must be a number, got {age_days!r}")
    if not (half_life_days > 0 and math.isfinite(half_life_days)):
        raise ValueError(f"half_life_days must be finite and > 0, got {half_life_days!r}")
    # The floor must stay above zero: "never reaches zero" is the point of having one.
    if not 0 < floor <= 1:
        raise ValueError(f"floor must be in (0, 1], got {floor!r}")
    if age_days <= 0:
        return 1.0
    return floor + (1.0 - floor) * 0.5 ** (age_days / half_life_days)


def salience_factor(salience: float, weight: float) -> float:
    """``1 + weight * (salience - 0.5)``: 1.0 at salience 0.5 or weight 0, in [0.5, 1.5] always."""
    if isinstance(salience, bool) or not isinstance(salience, (int, float)) \
            or not 0 <= salience <= 1:
        raise ValueError(f"salience must be a number in [0, 1], got {salience!r}")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
        raise ValueError(f"salience weight must be a number in [0, 1], got {weight!r}")
    return 1.0 + weight * (salience - 0.5)


def rank_step(weights: Mapping[str, float], k: float) -> float:
    """The smallest score change one rank at the top of a channel makes: the lightest positive
    channel weight times ``1/(k+1) - 1/(k+2)`` (0 when no channel has a positive weight)."""
    positive = [w for w in weights.values() if w > 0]
    return min(positive) * (1.0 / (k + 1) - 1.0 / (k + 2)) if positive else 0.0


def tie_nudge(
    facts: ChunkFacts,
    now: datetime,
    *,
    salience_weight: float = DEFAULT_SALIENCE_WEIGHT,
    half_life_days: float = RECENCY_HALF_LIFE_DAYS,
) -> float:
    """Salience and recency as one number whose values for any two chunks differ by at most 1
    (higher: more salient and newer). 0 for a neutral salience and a chunk of today."""
    salience_part = salience_factor(facts.salience, salience_weight) - 1.0
    age_days = (now - facts.occurred_at).total_seconds() / _SECONDS_PER_DAY
    recency_part = recency_factor(age_days, half_life_days=half_life_days) - 1.0
    span = salience_weight + (1.0 - RECENCY_FLOOR)
    return (salience_part + recency_part) / span


def fuse(
    ranked: Mapping[str, Sequence[K]],
    facts: Mapping[K, ChunkFacts],
    *,
    now: datetime,
    salience_weight: float = DEFAULT_SALIENCE_WEIGHT,
    weights: Mapping[str, float] = CHANNEL_WEIGHTS,
    k: float = RRF_K,
    half_life_days: float = RECENCY_HALF_LIFE_DAYS,
) -> list[Fused[K]]:
    """Every key of every channel once, best first: RRF, near-ties broken by salience and recency.

    ``facts`` must hold every key that any channel returned (KeyError naming the missing ones);
    extra entries are ignored. ``now`` and the ``occurred_at`` values must both be timezone-aware
    (or both naive). Exact ties are broken by the best single-channel rank, then by the key.
    """
    _check_k(k)
    _check_weights(weights)
    salience_factor(0.5, salience_weight)  # validate once, before any work
    best = _best_ranks(ranked, weights)

    missing = [key for key in best if key not in facts]
    if missing:
        shown = ", ".join(repr(key) for key in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise KeyError(
            f"no ChunkFacts for {len(missing)} ranked key{'s' if len(missing) > 1 else ''}: "
            f"{shown}{more}"
        )

    band = NEAR_TIE * rank_step(weights, k)
    results: list[Fused[K]] = []
    for key, ranks in best.items():
        rrf = _rrf(ranks, weights, k)
        nudge = tie_nudge(facts[key], now, salience_weight=salience_weight, half_life_days=half_life_days)
        results.append(Fused(key=key, score=rrf + band * nudge, rrf=rrf, ranks=ranks))
    results.sort(key=lambda fused: (-fused.score, fused.best_rank, fused.key))
    return results
