"""Labelled questions and their figures: what a question expects, and first@1, recall@k and MRR
of the ranks at which searches found it (pure; ``search.quality`` runs the searches)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The cut-offs every scoring reports (the default policy returns 8 passages).
RECALL_AT = (3, 8)
STATEMENT_KINDS = ("observation", "belief", "statement")


@dataclass(frozen=True)
class Expectation:
    """What answers a question: exactly one of an episode, a source (``episodes.source_key``:
    any of its revisions counts) or a statement (an observation or belief)."""

    episode_id: int | None = None
    source_key: str | None = None
    observation_id: int | None = None

    def __post_init__(self):
        given = [
            v for v in (self.episode_id, self.source_key, self.observation_id) if v is not None
        ]
        if len(given) != 1:
            raise ValueError("a question expects exactly one episode, source or statement")

    def __str__(self) -> str:
        if self.episode_id is not None:
            return str(self.episode_id)
        if self.source_key is not None:
            return f"source:{self.source_key}"
        return f"statement:{self.observation_id}"


def parse_expectation(value: object) -> Expectation:
    """``123`` or ``episode:123``, ``source:<key>`` (``id:<id>`` or ``file:<path>`` as ingest
    records sources; a bare JSONL id reads as ``id:<id>``), ``observation:12``,
    ``belief:12`` or ``statement:12``; ValueError saying which forms exist."""
    if isinstance(value, bool):
        raise ValueError(f"not an episode, source or statement: {value!r}")
    if isinstance(value, int):
        return Expectation(episode_id=_positive(value, value))
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"not an episode, source or statement: {value!r}")
    text = value.strip()
    prefix, _, rest = text.partition(":")
    if not rest:
        return Expectation(episode_id=_positive(_whole(text, value), value))
    if prefix == "episode":
        return Expectation(episode_id=_positive(_whole(rest, value), value))
    if prefix in STATEMENT_KINDS:
        return Expectation(observation_id=_positive(_whole(rest, value), value))
    if prefix == "source":
        key = rest.strip()
        if not key:
            raise ValueError(f"an empty source: {value!r}")
        return Expectation(source_key=key if key.startswith(("id:", "file:")) else f"id:{key}")
    raise ValueError(
        f"not an episode, source or statement: {value!r} (expected ID, episode:ID, "
        "source:KEY, observation:ID or belief:ID)"
    )


def _whole(text: str, value: object) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"not an episode, source or statement: {value!r}") from None


def _positive(number: int, value: object) -> int:
    if number <= 0:
        raise ValueError(f"an id is a positive whole number: {value!r}")
    return number


@dataclass(frozen=True)
class Figures:
    """The figures of one ranking (fused, or one channel's) over a memory's questions."""

    questions: int
    first_at_1: float
    recall_at_3: float
    recall_at_8: float
    mrr: float

    def to_json(self) -> dict:
        return {
            "questions": self.questions,
            "first_at_1": self.first_at_1,
            "recall_at_3": self.recall_at_3,
            "recall_at_8": self.recall_at_8,
            "mrr": self.mrr,
        }

    @classmethod
    def from_json(cls, data: dict) -> Figures:
        return cls(
            questions=int(data["questions"]),
            first_at_1=float(data["first_at_1"]),
            recall_at_3=float(data["recall_at_3"]),
            recall_at_8=float(data["recall_at_8"]),
            mrr=float(data["mrr"]),
        )


def figures(ranks: Iterable[int | None]) -> Figures:
    """First@1, recall@3, recall@8 and MRR of 1-based ranks (None: not found), rounded to four
    places; all 0 for no question."""
    ranks = list(ranks)
    n = len(ranks)

    def share(hit) -> float:
        return round(sum(1 for r in ranks if r is not None and hit(r)) / n, 4) if n else 0.0

    return Figures(
        questions=n,
        first_at_1=share(lambda r: r == 1),
        recall_at_3=share(lambda r: r <= RECALL_AT[0]),
        recall_at_8=share(lambda r: r <= RECALL_AT[1]),
        mrr=round(sum(1.0 / r for r in ranks if r is not None) / n, 4) if n else 0.0,
    )


def first_rank(keys: Iterable[object], matches) -> int | None:
    """The 1-based position of the first key ``matches`` accepts, or None."""
    for position, key in enumerate(keys, start=1):
        if matches(key):
            return position
    return None


# How far a figure may fall before a model change is refused (absolute, on a 0-1 scale): a
# labelled set of a few dozen questions moves by one question's share on noise alone.
DEFAULT_MARGIN = 0.05
GUARDED = ("first_at_1", "recall_at_8", "mrr")


def drops(before: Figures, after: Figures, margin: float = DEFAULT_MARGIN) -> list[str]:
    """The guarded figures that fell by more than ``margin`` from ``before`` to ``after``, each
    said as ``name before -> after``; empty when none did."""
    fallen = []
    for name in GUARDED:
        old, new = getattr(before, name), getattr(after, name)
        if old - new > margin + 1e-9:
            fallen.append(f"{name} {old:.3f} -> {new:.3f}")
    return fallen
