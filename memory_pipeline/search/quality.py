"""Scoring a memory's labelled questions on the search users get: each question is searched as
``Memory.search`` does (the default policy, its limit of 8) for the fused figures, and each
channel's own ranked list, as that same search's fusion read it, for the channel's figures; the
misses say what came first instead."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from memory_pipeline.domain.quality import RECALL_AT, Figures, figures, first_rank
from memory_pipeline.search.channels.base import Hits
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import profiles_store, questions_store
from memory_pipeline.storage.database import POOL_SIZE
from memory_pipeline.storage.profiles_store import StoredProfile
from memory_pipeline.storage.questions_store import StoredQuestion, Target

# Questions searched at the same time: each search runs its channels on their own connections,
# so a few in flight keep PostgreSQL busy without emptying the pool.
WORKERS = 2
FUSED = "fused"


@dataclass(frozen=True)
class Miss:
    """A question whose expected answer did not come first, and what did."""

    question_id: int
    question: str
    expected: str
    rank: int | None  # where the expected answer came (None: not in the 8 results)
    first: str  # the title (or statement text) of the first result, "" for none

    def to_json(self) -> dict:
        return {
            "questionId": self.question_id,
            "question": self.question,
            "expected": self.expected,
            "rank": self.rank,
            "first": self.first,
        }


@dataclass
class MemoryQuality:
    """One memory's figures: the fused search's and each channel's, and its misses."""

    memory: str
    fused: Figures
    channels: dict[str, Figures]
    misses: list[Miss] = field(default_factory=list)
    profile: str | None = None
    generation: int | None = None
    seconds: float = 0.0

    @property
    def questions(self) -> int:
        return self.fused.questions

    def figures_json(self) -> dict:
        return {FUSED: self.fused.to_json()} | {
            name: f.to_json() for name, f in self.channels.items()
        }

    def to_json(self) -> dict:
        return {
            "memory": self.memory,
            "questions": self.questions,
            "profile": self.profile,
            "generation": self.generation,
            "seconds": round(self.seconds, 3),
            "figures": self.figures_json(),
            "misses": [m.to_json() for m in self.misses],
        }


@dataclass(frozen=True)
class _Scored:
    fused_rank: int | None
    first: str
    channel_ranks: dict[str, int | None]


def score_memory(
    service: SearchService,
    memory: str,
    *,
    workers: int = WORKERS,
    on_question: Callable[[int, int], None] | None = None,
    candidate: StoredProfile | None = None,
) -> MemoryQuality:
    """Search each of ``memory``'s questions and compute its figures (nothing is stored);
    ``candidate``: read that generation instead of the serving one (the quality guard)."""
    started = time.perf_counter()
    with service.db.connection() as conn:
        questions = questions_store.list_questions(conn, memory)
        wanted = questions_store.targets(conn, memory)
        serving = candidate or profiles_store.active_profile(conn)
    done = [0]

    def one(q: StoredQuestion) -> _Scored:
        scored = _score_question(service, memory, q.question, wanted[q.id], candidate)
        done[0] += 1
        if on_question is not None:
            on_question(done[0], len(questions))
        return scored

    workers = max(1, min(workers, POOL_SIZE - 1, len(questions) or 1))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="quality") as pool:
        scored = list(pool.map(one, questions))
    names = sorted({name for s in scored for name in s.channel_ranks})
    misses = [
        Miss(q.id, q.question, q.expected or str(q.expect), s.fused_rank, s.first)
        for q, s in zip(questions, scored, strict=True)
        if s.fused_rank != 1
    ]
    return MemoryQuality(
        memory=memory,
        fused=figures(s.fused_rank for s in scored),
        channels={n: figures(s.channel_ranks.get(n) for s in scored) for n in names},
        misses=misses,
        profile=serving.name if serving else None,
        generation=serving.generation if serving else None,
        seconds=time.perf_counter() - started,
    )


def _score_question(
    service: SearchService,
    memory: str,
    question: str,
    target: Target,
    candidate: StoredProfile | None,
) -> _Scored:
    ranked: dict[str, Hits] = {}
    response = service.search(
        memory, question, limit=RECALL_AT[-1], candidate=candidate, channel_lists=ranked
    )
    fused = first_rank(
        response.results,
        lambda r: target.matches_result(r.episode_id, r.chunk_id, r.sources is not None),
    )
    first = response.results[0] if response.results else None
    chunk_keys = sorted({key for hits in ranked.values() for key, _ in hits if ":" not in key})
    with service.db.connection() as conn:
        holders = questions_store.chunk_episodes(conn, memory, chunk_keys)

    def matches(key: str) -> bool:
        if ":" in key:  # a statement, "<kind>:<id>"
            return key == target.statement_key
        return bool(holders.get(key, frozenset()) & target.episode_ids)

    return _Scored(
        fused_rank=fused,
        first="" if first is None else (first.title or first.text[:80]),
        channel_ranks={
            name: first_rank((key for key, _ in hits), matches) for name, hits in ranked.items()
        },
    )


def record(service: SearchService, quality: MemoryQuality) -> None:
    """Store one memory's figures, the latest that ``status`` and the APIs report."""
    with service.db.connection() as conn:
        questions_store.record(
            conn,
            quality.memory,
            profile=quality.profile,
            generation=quality.generation,
            questions=quality.questions,
            figures=quality.figures_json(),
        )
