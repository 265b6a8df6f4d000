"""Fusing the lists of search channels into one order: the channels' normalized scores summed
(CombSUM), or reciprocal rank when there are no scores, then salience and recency to break
near-ties.

Channels score on scales that cannot be compared, but each one's spread can: min-max
normalization gives a channel's clearly best candidate its whole weight and spreads it over
candidates that are all alike. A ``ChannelScale`` (the keyword channel's, ``domain.evidence``)
scales a channel by how strong its best match is. Salience and recency move a score by less than
half a step (one rank at the top of a channel, or 1% of the lightest channel's range), so they
only reorder near-ties. The weights and the method were chosen leave-one-out
(``benchmarks/locomo_loo.py``, ``benchmarks/fusion_loo.py``); docs/retrieval.md#fusion has the
formulas and the reasons. The order is deterministic: sums use ``math.fsum`` in the weights'
channel order, ties fall to the best rank, then the key.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60
CHANNEL_WEIGHTS: Mapping[str, float] = {
    "vector": 1.0,
    "keyword": 1.0,
    "graph": 0.0,
    "date": 1.5,
    "observation": 0.5,
    "belief": 0.5,
}
# Channels whose list is a set, not an order: equal scores count as equal (1.0 each), not as
# places. The date channel lists every chunk of the named days alike; graph's equal scores are
# an order (newest first).
FLAT_CHANNELS = frozenset({"date"})
RECENCY_HALF_LIFE_DAYS = 180
RECENCY_FLOOR = 0.9
DEFAULT_SALIENCE_WEIGHT = 0.1
# Salience and recency together move a score by less than this share of one top-rank step.
NEAR_TIE = 0.5
# CombSUM's step: 1% of a channel's normalized range (a channel's scores span 0..weight).
SCORE_STEP = 0.01
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class ChunkFacts:
    """What fusion needs to know about a chunk beyond its ranks (both come from its episode)."""

    salience: float  # in [0, 1]
    occurred_at: datetime  # timezone-aware, like ``now``


@dataclass(frozen=True)
class Fused(Generic[K]):
    """One fused result: its final score, the plain sum behind it (CombSUM or RRF; ``rrf`` keeps
    its first name), and the ranks it had."""

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


def _alone_counts(
    ranked: Mapping[str, Sequence], weights: Mapping[str, float]
) -> Mapping[str, float]:
    """``weights``, except that when no channel that returned something has a positive weight
    (a policy of only the graph channel, whose default weight is 0), those channels weigh 1.0:
    a channel searched alone is ordered by its own ranks, not by salience and recency."""
    returned = [channel for channel, keys in ranked.items() if keys and channel in weights]
    if not returned or any(weights[channel] > 0 for channel in returned):
        return weights
    return {**weights, **{channel: 1.0 for channel in returned}}


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
    if (
        isinstance(salience, bool)
        or not isinstance(salience, (int, float))
        or not 0 <= salience <= 1
    ):
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


@dataclass(frozen=True)
class ChannelScale:
    """What a channel's raw scores mean as evidence in one search: a best candidate at or below
    ``floor`` is no evidence, one at or above ``reach`` is as strong as the channel's evidence
    gets (``domain.evidence``: for the keyword channel, shares of the BM25 a chunk holding every
    query word would score). ``normalized_scores`` scales the channel's min-max normalized
    scores by how far its best candidate gets from ``floor`` to ``reach``, so a channel whose
    best match is weak (one incidental word of a question) weighs little, however far that
    match is ahead of the channel's other candidates."""

    floor: float
    reach: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.floor) and math.isfinite(self.reach)):
            raise ValueError(f"a channel scale must be finite, got {self!r}")
        if not self.reach > self.floor:
            raise ValueError(f"a channel scale's reach must exceed its floor, got {self!r}")

    def strength(self, best: float) -> float:
        """How much of the channel's weight a best score of ``best`` earns, in [0, 1]."""
        return min(max((best - self.floor) / (self.reach - self.floor), 0.0), 1.0)


def normalized_scores(
    scores: Sequence[float], *, flat: bool = False, scale: ChannelScale | None = None
) -> list[float]:
    """One channel's scores on [0, 1]: min-max, its best 1.0, its worst 0.0; when they are all
    equal, 1.0 each with ``flat`` (a channel listing a set, ``FLAT_CHANNELS``), otherwise the
    places stand in for scores (a channel that orders without scoring, like graph's
    newest-first): 1, 1 - 1/n, 1 - 2/n, ... With ``scale``, all of them times the strength of
    the best score (``ChannelScale.strength``): a lone weak candidate is no longer 1.0."""
    values = [float(value) for value in scores]
    if any(not math.isfinite(value) for value in values):
        raise ValueError("channel scores must be finite numbers")
    if not values:
        return []
    high, low = max(values), min(values)
    strength = 1.0 if scale is None else scale.strength(high)
    if high == low:
        spread = (
            [1.0] * len(values) if flat else [1.0 - i / len(values) for i in range(len(values))]
        )
    else:
        spread = [(value - low) / (high - low) for value in values]
    return [value * strength for value in spread] if strength != 1.0 else spread


def _combsum(
    ranked: Mapping[str, Sequence[K]],
    scores: Mapping[str, Sequence[float]],
    weights: Mapping[str, float],
    scales: Mapping[str, ChannelScale] | None = None,
) -> dict[K, float]:
    """key -> Σ weight_c × normalized score_c(key) over the channels that returned it (a key
    listed twice by one channel counts once, at its first place)."""
    scales = scales or {}
    sums: dict[K, list[float]] = {}
    for channel in weights:  # the weights' order, so the input's order cannot change a sum
        keys = ranked.get(channel, ())
        if len(scores.get(channel, ())) != len(keys):
            raise ValueError(
                f"channel {channel!r} has {len(keys)} keys but "
                f"{len(scores.get(channel, ()))} scores"
            )
        seen: set[K] = set()
        normalized = normalized_scores(
            scores.get(channel, ()), flat=channel in FLAT_CHANNELS, scale=scales.get(channel)
        )
        for key, value in zip(keys, normalized):
            if key not in seen:
                seen.add(key)
                sums.setdefault(key, []).append(weights[channel] * value)
    return {key: math.fsum(parts) for key, parts in sums.items()}


def combsum(
    ranked: Mapping[str, Sequence[K]],
    scores: Mapping[str, Sequence[float]],
    weights: Mapping[str, float],
    scales: Mapping[str, ChannelScale] | None = None,
) -> dict[K, float]:
    """key -> Σ weight_c × normalized score_c(key) over the channels that returned it
    (``scores``: each channel's scores in the order of its keys; ``scales``: the channels whose
    scores are read against a ``ChannelScale``); no salience or recency."""
    _check_weights(weights)
    _best_ranks(ranked, weights)  # every channel needs a weight
    return _combsum(ranked, scores, weights, scales)


def fuse(
    ranked: Mapping[str, Sequence[K]],
    facts: Mapping[K, ChunkFacts],
    *,
    now: datetime,
    salience_weight: float = DEFAULT_SALIENCE_WEIGHT,
    weights: Mapping[str, float] = CHANNEL_WEIGHTS,
    k: float = RRF_K,
    half_life_days: float = RECENCY_HALF_LIFE_DAYS,
    scores: Mapping[str, Sequence[float]] | None = None,
    scales: Mapping[str, ChannelScale] | None = None,
) -> list[Fused[K]]:
    """Every key of every channel once, best first: CombSUM of the channels' normalized scores
    when ``scores`` (each channel's scores, in the order of its keys in ``ranked``) is given, RRF
    over ranks when not; near-ties broken by salience and recency.

    A key that every channel that returned something put first is first. ``facts`` must hold
    every key that any channel returned (KeyError naming the missing ones); extra entries are
    ignored. ``now`` and the ``occurred_at`` values must both be timezone-aware (or both naive).
    Exact ties are broken by the best single-channel rank, then by the key.
    """
    _check_k(k)
    _check_weights(weights)
    salience_factor(0.5, salience_weight)  # validate once, before any work
    weights = _alone_counts(ranked, weights)
    best = _best_ranks(ranked, weights)
    sums = _combsum(ranked, scores, weights, scales) if scores is not None else None

    missing = [key for key in best if key not in facts]
    if missing:
        shown = ", ".join(repr(key) for key in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise KeyError(
            f"no ChunkFacts for {len(missing)} ranked key{'s' if len(missing) > 1 else ''}: "
            f"{shown}{more}"
        )

    ran = [channel for channel, keys in ranked.items() if keys]
    # The band is measured on the channels that returned something: a policy's weight for a
    # channel with nothing to say (no statements in this memory) must not change how ties break.
    ran_weights = {channel: weights[channel] for channel in ran}
    band = NEAR_TIE * (score_step(ran_weights) if sums is not None else rank_step(ran_weights, k))
    results: list[Fused[K]] = []
    for key, ranks in best.items():
        rrf = sums[key] if sums is not None else _rrf(ranks, weights, k)
        nudge = tie_nudge(
            facts[key], now, salience_weight=salience_weight, half_life_days=half_life_days
        )
        results.append(Fused(key=key, score=rrf + band * nudge, rrf=rrf, ranks=ranks))
    # Scores have no smallest step, so a nudge could lift a near-equal key past the one every
    # channel put first; agreement of every channel is the strongest evidence a search has.
    results.sort(
        key=lambda fused: (
            not _first_everywhere(fused.ranks, ran),
            -fused.score,
            fused.best_rank,
            fused.key,
        )
    )
    return results


def _first_everywhere(ranks: Mapping[str, int], ran: Sequence[str]) -> bool:
    return all(ranks.get(channel) == 1 for channel in ran)


def score_step(weights: Mapping[str, float]) -> float:
    """CombSUM's near-tie unit: SCORE_STEP of the lightest positive channel weight's range."""
    positive = [w for w in weights.values() if w > 0]
    return min(positive) * SCORE_STEP if positive else 0.0
