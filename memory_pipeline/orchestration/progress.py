"""Progress inside Dagster runs: the core's ``Progress`` events as log lines and metadata.

A run's long steps (a day's ``embeddings``, the ``backlog``) log the same line the CLI prints
(``progress.describe``) every MEMORY_PIPELINE_PROGRESS_SECONDS and when a stage ends, and put
the last figures in their metadata (``RunProgress.metadata``). A command that runs a job in its
own process (``memory-pipeline demo``) can watch the same events (``watching``) and draw them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from memory_pipeline.config import progress_every_seconds
from memory_pipeline.progress import Meter, Progress, ProgressCallback, describe

_watchers: list[ProgressCallback] = []


@contextlib.contextmanager
def watching(callback: ProgressCallback) -> Iterator[None]:
    """Runs executed in this process (``execute_in_process``) tell ``callback`` their progress too."""
    _watchers.append(callback)
    try:
        yield
    finally:
        _watchers.remove(callback)


class RunProgress:
    """A ``ProgressCallback`` for a step: ``log`` (the step's ``context.log``) gets a line every
    ``every`` seconds and one per finished stage; ``prefix`` names the day or step."""

    def __init__(self, log, *, prefix: str = "", every: float | None = None):
        self.log, self.prefix = log, prefix
        self.every = progress_every_seconds() if every is None else every
        self.meters: dict[str, Meter] = {}
        self.last: dict[str, Progress] = {}
        self.logged_at = time.monotonic()

    def __call__(self, progress: Progress) -> None:
        meter = self.meters.setdefault(progress.stage, Meter())
        meter.update(progress)
        self.last[progress.stage] = progress
        now = time.monotonic()
        if progress.finished or now - self.logged_at >= self.every:
            self.log.info(self.prefix + describe(progress, meter))
            self.logged_at = now
        for watcher in list(_watchers):
            watcher(progress)

    def metadata(self, stage: str = "index") -> dict:
        """The stage's last figures: its line, and its rate per second of its unit."""
        progress, meter = self.last.get(stage), self.meters.get(stage)
        if progress is None or meter is None:
            return {}
        elapsed = meter.elapsed
        return {
            "progress": describe(progress, meter),
            f"{stage.replace(' ', '_')}_{progress.unit}_per_second": round(
                progress.done / elapsed, 2
            )
            if elapsed > 0
            else 0.0,
        }
