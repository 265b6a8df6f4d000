"""The guard on model changes: before a new generation serves, each memory's labelled questions
are scored on it beside the serving generation, and a fall beyond the margin refuses the switch
unless the caller accepts it knowingly (``--accept-worse``, Dagster's launch config). The fused
search and the vector channel are compared: a model change shows first in the channel it feeds,
and the fused figures are what users get.

The serving generation is scored now when the configured model is the one it serves (a
reindex of the same profile); when the model changed, query vectors of the serving model
cannot be made, and its latest recorded figures stand in (``retrieval_quality``). A memory
with no figures for the serving generation is not guarded, and the verdict says so."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_pipeline.domain.quality import DEFAULT_MARGIN, Figures, drops
from memory_pipeline.search.quality import score_memory
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import profiles_store, questions_store
from memory_pipeline.storage.profiles_store import StoredProfile

# The rankings compared: the fused search users get, and the channel a model change feeds.
GUARDED_RANKINGS = ("fused", "vector")


@dataclass(frozen=True)
class Comparison:
    """One memory's figures (per guarded ranking) on the serving and on the new generation."""

    memory: str
    serving: dict[str, Figures] | None  # None: none known for the serving generation
    candidate: dict[str, Figures]
    fallen: list[str]
    source: str  # how the serving figures were had: "scored now", "recorded <time>", "none"

    def to_json(self) -> dict:
        return {
            "memory": self.memory,
            "serving": {k: f.to_json() for k, f in self.serving.items()} if self.serving else None,
            "candidate": {k: f.to_json() for k, f in self.candidate.items()},
            "fallen": self.fallen,
            "servingFigures": self.source,
        }


@dataclass
class Verdict:
    serving: str  # "<profile> generation <n>", or "nothing"
    candidate: str
    margin: float
    accepted_worse: bool
    memories: list[Comparison] = field(default_factory=list)

    @property
    def fallen(self) -> bool:
        return any(c.fallen for c in self.memories)

    @property
    def blocked(self) -> bool:
        return self.fallen and not self.accepted_worse

    @property
    def message(self) -> str:
        said = "; ".join(f"{c.memory}: {', '.join(c.fallen)}" for c in self.memories if c.fallen)
        if not self.fallen:
            return f"{self.candidate} scores within {self.margin} of {self.serving}"
        if self.accepted_worse:
            return f"{self.candidate} scores worse than {self.serving} ({said}); accepted"
        return (
            f"the switch to {self.candidate} was refused: it scores worse than {self.serving} "
            f"on the labelled questions ({said}); search keeps serving {self.serving} "
            "(--accept-worse switches anyway)"
        )

    def to_json(self) -> dict:
        return {
            "serving": self.serving,
            "candidate": self.candidate,
            "margin": self.margin,
            "blocked": self.blocked,
            "acceptedWorse": self.accepted_worse,
            "message": self.message,
            "memories": [c.to_json() for c in self.memories],
        }


class SwitchGuard:
    """Asked before a switch (``indexing.generations.promote_when_complete``) whether the
    generation about to serve may; keeps its verdict for the caller's report."""

    def __init__(
        self, service: SearchService, *, accept_worse: bool = False, margin: float = DEFAULT_MARGIN
    ):
        self.service = service
        self.accept_worse = accept_worse
        self.margin = margin
        self.verdict: Verdict | None = None

    def allows(self, candidate: StoredProfile) -> bool:
        self.verdict = judge(
            self.service, candidate, accept_worse=self.accept_worse, margin=self.margin
        )
        return self.verdict is None or not self.verdict.blocked


def judge(
    service: SearchService,
    candidate: StoredProfile,
    *,
    accept_worse: bool = False,
    margin: float = DEFAULT_MARGIN,
) -> Verdict | None:
    """Each memory with questions scored on ``candidate`` beside the serving generation; None
    when no memory has labelled questions (nothing to guard with)."""
    with service.db.connection() as conn:
        names = questions_store.memories_with_questions(conn)
        serving = profiles_store.active_profile(conn)
    if not names:
        return None
    verdict = Verdict(
        serving=f"{serving.name} generation {serving.generation}" if serving else "nothing",
        candidate=f"{candidate.name} generation {candidate.generation}",
        margin=margin,
        accepted_worse=accept_worse,
    )
    for memory in names:
        after = _guarded(score_memory(service, memory, candidate=candidate).figures_json())
        before, source = _serving_figures(service, memory, serving, candidate)
        fallen = [
            f"{ranking} {fell}"
            for ranking in GUARDED_RANKINGS
            if before is not None and ranking in before and ranking in after
            for fell in drops(before[ranking], after[ranking], margin)
        ]
        verdict.memories.append(Comparison(memory, before, after, fallen, source))
    return verdict


def _guarded(figures: dict) -> dict[str, Figures]:
    return {r: Figures.from_json(figures[r]) for r in GUARDED_RANKINGS if r in figures}


def _serving_figures(
    service: SearchService, memory: str, serving: StoredProfile | None, candidate: StoredProfile
) -> tuple[dict[str, Figures] | None, str]:
    if serving is None:
        return None, "none: nothing serves yet"
    if serving.name == candidate.name:  # the same model: its query vectors fit both
        return _guarded(score_memory(service, memory).figures_json()), "scored now"
    with service.db.connection() as conn:
        recorded = questions_store.latest_of_generation(
            conn, memory, serving.name, serving.generation
        )
    if recorded is None:
        return None, "none recorded for the serving generation"
    measured_at, figures = recorded
    return _guarded(figures), f"recorded {measured_at.isoformat()}"
