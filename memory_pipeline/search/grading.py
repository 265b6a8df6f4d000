"""Grades for a search's results (``domain.grades``) from what its channels already measured:
the vector channel's cosines and the serving profile's calibration, the keyword channel's BM25
and the query's attainable BM25, the date channel's list. No query of its own."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from memory_pipeline.domain import grades
from memory_pipeline.domain.grades import Evidence
from memory_pipeline.search.channels.run import Candidates
from memory_pipeline.search.results import SearchResult


@dataclass(frozen=True)
class Match:
    """How well a search's best result matches (``grade``: strong, weak, none; None when the
    search could not be graded) and, when it is none or ungraded, why, in words."""

    grade: str | None
    reason: str | None = None


def ungraded_reason(found: Candidates) -> str | None:
    """Why this search's results cannot be graded; None when they can."""
    if found.calibration is None:
        if found.vector_status.startswith("unavailable"):
            return "ungraded: the vector channel was unavailable"
        return "ungraded: the vector channel did not run"
    if not found.calibration.measured:
        return (
            "ungraded: the profile has no calibration"
            + (f" ({found.calibration.reason})" if found.calibration.reason else "")
            + "; scores are relative to this search"
        )
    return None


@dataclass(frozen=True)
class Measured:
    """What one search's channels measured, by candidate key: cosines, BM25 scores, the date
    channel's keys (each channel's first listing of a key is its best)."""

    cosines: dict[str, float]
    bm25: dict[str, float]
    dated: frozenset[str]

    @classmethod
    def of(cls, found: Candidates) -> Measured:
        def first(hits) -> dict[str, float]:
            out: dict[str, float] = {}
            for key, score in hits:
                out.setdefault(key, score)
            return out

        return cls(
            first(found.ranked.get("vector", ())),
            first(found.ranked.get("keyword", ())),
            frozenset(key for key, _ in found.ranked.get("date", ())),
        )


def evidence_of(keys: tuple[str, ...], found: Candidates, measured: Measured) -> Evidence:
    """The best evidence any of a result's chunks has (a passage answers with all of them)."""
    assert found.calibration is not None
    cosines = [measured.cosines[k] for k in keys if k in measured.cosines]
    bm25 = [measured.bm25[k] for k in keys if k in measured.bm25]
    attainable = found.keyword_attainable
    return Evidence(
        vector=grades.position(max(cosines), found.calibration) if cosines else None,
        keyword=grades.keyword_share(max(bm25), attainable) if bm25 and attainable else None,
        date=not measured.dated.isdisjoint(keys),
    )


def grade_results(
    memory: str, results: list[SearchResult], found: Candidates
) -> tuple[list[SearchResult], Match]:
    """``results`` with their grades and evidence, and the search's match; unchanged results and
    the reason when the search cannot be graded."""
    reason = ungraded_reason(found)
    if reason is not None:
        return results, Match(None, reason)
    out = []
    measured = Measured.of(found)
    for result in results:
        evidence = evidence_of(result.chunk_ids, found, measured)
        out.append(
            dataclasses.replace(result, grade=grades.grade(evidence), evidence=evidence.to_json())
        )
    best = grades.best([r.grade for r in out if r.grade is not None])
    if best != grades.NONE:
        return out, Match(best)
    return out, Match(
        grades.NONE,
        f"nothing in memory {memory!r} matches this question well"
        + ("; the closest results follow, and none of them is an answer" if out else ""),
    )
