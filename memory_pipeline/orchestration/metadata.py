"""Materialization metadata helpers: every asset says what it did without opening the logs.

A preview is a pandas DataFrame (``preview_frame``) rendered as a Markdown table, so the figures
an asset shows and those ``memory-pipeline quality --csv`` exports come from one kind of table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg
import pandas as pd


def preview_frame(rows: Iterable[Mapping], columns: list[str] | None = None) -> pd.DataFrame:
    """The rows as a DataFrame with ``columns`` (default: the first row's keys), in order."""
    rows = list(rows)
    columns = columns or (list(rows[0].keys()) if rows else [])
    return pd.DataFrame.from_records(
        [{c: row.get(c, "") for c in columns} for row in rows], columns=columns
    )


def frame_markdown(frame: pd.DataFrame) -> str:
    """A DataFrame as a compact Markdown table (pipes and line breaks in cells escaped)."""
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    for values in frame.itertuples(index=False):
        cells = [str(v).replace("|", "\\|").replace("\n", " ") for v in values]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_table(rows: Iterable[Mapping], columns: list[str] | None = None) -> dg.MetadataValue:
    frame = preview_frame(rows, columns)
    if frame.empty:
        return dg.MetadataValue.md("_nothing to show_")
    return dg.MetadataValue.md(frame_markdown(frame))
