"""Fused candidates made into results: adjacent chunks of one episode sewn into passages."""

from __future__ import annotations

from collections.abc import Callable

from memory_pipeline.domain import passages
from memory_pipeline.domain.fusion import Fused
from memory_pipeline.domain.policies import Policy
from memory_pipeline.domain.windows import window_focus
from memory_pipeline.search.results import SearchResult, make_snippet
from memory_pipeline.storage.observations_store import StoredObservation
from memory_pipeline.storage.search_store import ChunkRow


def passages_of(
    final: list[Fused],
    scores: dict[str, float],
    rows: dict[str, ChunkRow],
    statements: dict[str, StoredObservation],
    windows: dict[str, int],
    query: str,
    chosen: Policy,
    texts: Callable[[list[str]], dict[str, str]],
    *,
    sew: bool = True,
    distinct: bool = True,
) -> list[SearchResult]:
    """The ranked chunks sewn into at most ``chosen.limit`` passages (``domain.passages``), one
    an episode unless ``distinct`` is off;
    a statement is a result of its own (its own negative "episode": adjacent to nothing).
    ``texts`` reads the texts of the passages' chunks (only theirs: one query)."""
    hits = (
        passages.Hit(f.key, rows[f.key].episode_id, rows[f.key].start, rows[f.key].end)
        if f.key in rows
        else passages.Hit(f.key, -statements[f.key].id, 0, len(statements[f.key].text))
        for f in final
    )
    ranks = {f.key: f.ranks for f in final}
    sewn = passages.sew(hits, chosen.limit, join=sew, distinct=distinct)
    text = texts([key for passage in sewn for key in passage.keys if key not in statements])
    results = []
    for passage in sewn:
        key = passage.best.key
        if key in statements:
            results.append(statement_result(key, statements[key], ranks[key], scores, chosen))
            continue
        best = rows[key]
        results.append(
            SearchResult(
                episode_id=best.episode_id,
                chunk_id=best.chunk_id,
                title=best.title,
                kind=best.kind,
                occurred_at=best.occurred_at,
                snippet=make_snippet(
                    text[key],
                    query,
                    focus=window_focus(text[key], windows.get(best.chunk_id), title=best.title),
                ),
                start=passage.start,
                end=passage.end,
                text="".join(text[k] for k in passage.keys),
                score=scores[best.chunk_id],
                ranks={ch: ranks[best.chunk_id].get(ch) for ch in chosen.channels},
                chunk_ids=tuple(passage.keys),
                anchor=rows[passage.keys[0]].anchor,
            )
        )
    return results


def statement_result(
    key: str, o: StoredObservation, ranks: dict, scores: dict[str, float], chosen: Policy
) -> SearchResult:
    return SearchResult(
        episode_id=o.episode_ids[0] if o.episode_ids else None,
        chunk_id=key,
        title=f"{o.kind} #{o.id}" + (f" ({o.status})" if o.status != "active" else ""),
        kind=o.kind,
        occurred_at=o.observed_at,
        snippet=make_snippet(o.text, ""),
        start=0,
        end=len(o.text),
        text=o.text,
        score=scores[key],
        ranks={ch: ranks.get(ch) for ch in chosen.channels},
        status=o.status,
        sources={"episodeIds": list(o.episode_ids), "passages": list(o.passages)},
    )
