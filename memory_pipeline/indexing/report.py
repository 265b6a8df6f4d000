"""What a run of the index pass did: ``IndexReport``, filled commit by commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory_pipeline.storage.index_store import EpisodeWork, WriteReport


@dataclass
class DayFigures:
    """What a run wrote for one ingest day (a run over many days tells each its own)."""

    episodes: int = 0
    chunks: int = 0
    vectors: int = 0
    windows: int = 0

    def add(self, other: DayFigures) -> None:
        self.episodes += other.episodes
        self.chunks += other.chunks
        self.vectors += other.vectors
        self.windows += other.windows


@dataclass
class IndexReport:
    profile: str
    passes: int = 0
    episodes: int = 0
    chunks: int = 0
    vectors: int = 0
    windows: int = 0  # paragraph-window vectors embedded along with the chunk vectors
    statement_vectors: int = 0  # observations and beliefs embedded (index_pending)
    model_calls: int = 0
    embed_seconds: float = 0.0
    store_seconds: float = 0.0
    seconds: float = 0.0
    skipped_locked: int = 0
    pending_after: int | None = None
    pending_days: dict[str, int] | None = None  # pending episodes per ingest day after the run
    canary_checked: bool = False  # a pass ran the canary (the first one's result is kept)
    canary_cosine: float | None = None  # None when checked: recorded for the first time
    analyzed: bool = False  # the pass ANALYZEd what it wrote beside itself (``ANALYZE_AFTER``)
    switched: str | None = None
    # The quality guard's verdict on the switch (search.quality_guard.Verdict.to_json), when one
    # was due and a memory has labelled questions; "blocked": the switch was refused.
    quality_guard: dict | None = None
    preview: list[dict] = field(default_factory=list)
    # champions_store.ChampionBuild of the lists the run built (``serving.leave_search_fast``).
    keyword_lists: list = field(default_factory=list)
    # serving.SearchReady: the HNSW index, lists and statistics the run left (index_pending).
    search_ready: Any = None
    # The figures above split by ingest day (ISO date), from the episodes written.
    days: dict[str, DayFigures] = field(default_factory=dict)

    def day(self, day: str) -> DayFigures:
        return self.days.setdefault(day, DayFigures())

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    @property
    def vectors_per_second(self) -> float:
        return self.vectors / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        """The run's document, as ``index --json`` prints it and ``POST /v1/index`` serves it
        (the HTTP API gives a token of some memories only the profile and the seconds)."""
        return {
            "profile": self.profile,
            "episodes": self.episodes,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "windowVectors": self.windows,
            "seconds": round(self.seconds, 3),
            "pendingEpisodes": self.pending_after,
            "keywordLists": [b.to_json() for b in self.keyword_lists],
            "searchReady": self.search_ready.to_json() if self.search_ready else None,
            "qualityGuard": self.quality_guard,
        }

    def add(self, other: IndexReport) -> None:
        for name in (
            "passes",
            "episodes",
            "chunks",
            "vectors",
            "windows",
            "model_calls",
            "skipped_locked",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("embed_seconds", "store_seconds", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.preview = (self.preview + other.preview)[:5]
        self.analyzed = self.analyzed or other.analyzed
        for day, figures in other.days.items():
            self.day(day).add(figures)


def count(
    report: IndexReport, works: list[EpisodeWork], written: WriteReport, seconds: float
) -> None:
    """Add one commit of ``works`` to ``report`` (its figures and the first five as a preview)."""
    report.store_seconds += seconds
    report.episodes += written.episodes
    report.chunks += written.chunks
    report.vectors += written.vectors
    report.skipped_locked += written.skipped_locked
    if not written.skipped_locked:  # else which were written is not known here: no day is told
        for w in works:
            figures = report.day(w.episode.ingest_day.isoformat())
            figures.episodes += 1
            figures.chunks += 0 if w.has_stored_chunks else len(w.chunks)
            figures.vectors += len(w.missing)
            figures.windows += sum(
                0 if v.windows is None else len(v.windows) for v in w.vectors.values()
            )
    for w in works[: max(0, 5 - len(report.preview))]:
        report.preview.append(
            {
                "episode_id": w.episode.id,
                "memory": w.episode.memory,
                "ingest_day": w.episode.ingest_day.isoformat(),
                "chunks": len(w.chunks),
                "first_chunk": w.chunks[0].text[:80] if w.chunks else "",
            }
        )
