"""Ingest: parse source files into episodes and store them for an ingest day.

Shared by the CLI (``memory-pipeline ingest``) and the ``episodes`` asset (the day's inbox), so
both report and reject exactly the same way.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from memory_pipeline.domain.sources import Rejection, parse_paths
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.episodes_store import store_episodes


@dataclass
class IngestReport:
    ingest_day: dt.date
    files_read: int = 0
    inserted_ids: list[int] = field(default_factory=list)
    duplicates: int = 0
    rejections: list[Rejection] = field(default_factory=list)

    @property
    def inserted(self) -> int:
        return len(self.inserted_ids)

    def summary(self) -> str:
        return (
            f"{self.inserted} new episode(s), {self.duplicates} already stored, "
            f"{len(self.rejections)} rejected, from {self.files_read} file(s); ingest day {self.ingest_day}"
        )


def utc_today() -> dt.date:
    return dt.datetime.now(dt.timezone.utc).date()


def ingest_paths(
    db: Database,
    paths: Iterable[str | Path],
    *,
    memory: str | None = None,
    kind: str | None = None,
    ingest_day: dt.date | None = None,
) -> IngestReport:
    day = ingest_day or utc_today()
    parsed = parse_paths(list(paths), memory=memory, kind=kind)
    report = IngestReport(day, files_read=parsed.files_read, rejections=list(parsed.rejections))
    if parsed.episodes:
        with db.connection() as conn:
            stored = store_episodes(conn, parsed.episodes, day)
        report.inserted_ids = stored.inserted_ids
        report.duplicates = stored.duplicates
    return report
