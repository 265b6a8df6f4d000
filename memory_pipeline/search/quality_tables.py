"""The scoring's figures and misses as pandas DataFrames: one table that the ``retrieval_quality``
asset shows as metadata, ``memory-pipeline quality`` prints and ``--csv`` exports."""

from __future__ import annotations

import pandas as pd

from memory_pipeline.search.quality import FUSED, MemoryQuality

FIGURE_COLUMNS = ["memory", "ranking", "questions", "first@1", "recall@3", "recall@8", "MRR"]
MISS_COLUMNS = ["memory", "question", "expected", "rank", "first"]


def figures_frame(scored: list[MemoryQuality]) -> pd.DataFrame:
    """One row per memory and ranking: the fused search first, then each channel by name."""
    rows = []
    for one in scored:
        for ranking, f in [(FUSED, one.fused), *sorted(one.channels.items())]:
            rows.append(
                [one.memory, ranking, f.questions, f.first_at_1, f.recall_at_3]
                + [f.recall_at_8, f.mrr]
            )
    return pd.DataFrame(rows, columns=FIGURE_COLUMNS)


def misses_frame(scored: list[MemoryQuality]) -> pd.DataFrame:
    """One row per question whose expected answer did not come first (rank empty: not in 8)."""
    rows = [
        [one.memory, m.question, m.expected, m.rank, m.first] for one in scored for m in one.misses
    ]
    frame = pd.DataFrame(rows, columns=MISS_COLUMNS)
    frame["rank"] = frame["rank"].astype("Int64")
    return frame


def markdown(frame: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table (pipes in cells escaped), ``_none_`` when empty."""
    if frame.empty:
        return "_none_"
    shown = frame.astype(object).where(frame.notna(), "")
    shown = shown.map(lambda v: str(v).replace("|", "\\|").replace("\n", " "))
    return shown.to_markdown(index=False)
