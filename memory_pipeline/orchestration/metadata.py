"""Materialization metadata helpers: every asset says what it did without opening the logs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg


def markdown_table(rows: Iterable[Mapping], columns: list[str] | None = None) -> dg.MetadataValue:
    rows = list(rows)
    if not rows:
        return dg.MetadataValue.md("_nothing to show_")
    columns = columns or list(rows[0].keys())
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [str(row.get(c, "")).replace("|", "\\|").replace("\n", " ") for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return dg.MetadataValue.md("\n".join(lines))
