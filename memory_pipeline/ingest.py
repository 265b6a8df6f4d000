"""Ingest: parse source files into episodes and store them for an ingest day.

Shared by the CLI (``memory-pipeline ingest``) and the ``episodes`` asset (the day's inbox), so
both report and reject exactly the same way; ``day_episodes`` is what a day then holds.

Episodes are stored while the files are still being parsed, ``BATCH`` at a time, each batch in
one transaction: memory stays flat whatever the size of the input. A database failure part way
leaves the batches before it stored; ingesting the same files again stores the rest and counts
those as already stored (bodies are unique per memory), so a retry is always safe.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from memory_pipeline.domain.sources import EpisodeDraft, Rejection, parse_paths
from memory_pipeline.progress import ProgressCallback
from memory_pipeline.storage import episodes_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.episodes_store import store_episodes

# Episodes stored per transaction while the files are parsed.
BATCH = 2000


@dataclass
class IngestReport:
    ingest_day: dt.date
    files_read: int = 0
    inserted_ids: list[int] = field(default_factory=list)
    duplicates: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    revised: int = 0  # of the new episodes, new revisions of a stored source (DESIGN.md)
    restored: int = 0  # earlier revisions whose body came back, current again

    @property
    def inserted(self) -> int:
        return len(self.inserted_ids)

    def to_json(self) -> dict:
        """``ingest --json``: what ``add`` answers (``stored_json``) and the files read."""
        return {
            "ingestDay": self.ingest_day.isoformat(),
            "filesRead": self.files_read,
            **stored_json(self),
        }

    def summary(self) -> str:
        revisions = f" ({self.revised} new revision(s) of stored sources)" if self.revised else ""
        restored = f", {self.restored} earlier revision(s) current again" if self.restored else ""
        return (
            f"{self.inserted} new episode(s){revisions}{restored}, {self.duplicates} already stored, "
            f"{len(self.rejections)} rejected, from {self.files_read} file(s); ingest day {self.ingest_day}"
        )


def stored_json(report) -> dict:
    """What an ingest or an add stored, one document for the CLI, the HTTP API and MCP
    (``IngestReport`` and ``memory.AddReport`` both have these fields)."""
    return {
        "inserted": report.inserted,
        "episodeIds": report.inserted_ids,
        "revised": report.revised,
        "restored": report.restored,
        "duplicates": report.duplicates,
        "rejected": [{"location": r.location, "reason": r.reason} for r in report.rejections],
    }


def utc_today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def ingest_paths(
    db: Database,
    paths: Iterable[str | os.PathLike],
    *,
    memory: str | None = None,
    kind: str | None = None,
    ingest_day: dt.date | None = None,
    on_progress: ProgressCallback | None = None,
) -> IngestReport:
    day = ingest_day or utc_today()
    report = IngestReport(day)
    batch: list[EpisodeDraft] = []

    def store() -> None:
        with db.connection() as conn:
            stored = store_episodes(conn, batch, day)
        report.inserted_ids.extend(stored.inserted_ids)
        report.duplicates += stored.duplicates
        report.revised += stored.revised
        report.restored += stored.restored
        batch.clear()

    def keep(draft: EpisodeDraft) -> None:
        batch.append(draft)
        if len(batch) >= BATCH:
            store()

    parsed = parse_paths(list(paths), memory=memory, kind=kind, sink=keep, on_progress=on_progress)
    if batch:
        store()
    report.files_read, report.rejections = parsed.files_read, list(parsed.rejections)
    return report


@dataclass
class DayEpisodes:
    """What an ingest day holds: episodes per memory and kind, and the first few."""

    summary: list[dict]  # memory, kind, episodes
    preview: list[dict]

    @property
    def episodes(self) -> int:
        return sum(r["episodes"] for r in self.summary)


def day_episodes(db: Database, day: dt.date) -> DayEpisodes:
    with db.connection() as conn:
        return DayEpisodes(
            episodes_store.day_summary(conn, day), episodes_store.day_preview(conn, day)
        )
