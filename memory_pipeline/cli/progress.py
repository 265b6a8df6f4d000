"""Long commands' progress on stderr: a progress bar on a terminal, plain periodic lines otherwise.

The core reports ``progress.Progress`` events; this renders them. On a terminal, a rich progress
bar per stage (totals, percentage, rate, time left) that redraws in place; in a pipe or a log
file, one ``progress.describe`` line every MEMORY_PIPELINE_PROGRESS_SECONDS (default 5), and a
last line for a stage that took longer than that. stdout stays the command's result only.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

from memory_pipeline.config import progress_every_seconds
from memory_pipeline.progress import Meter, Progress, describe, figures


class ProgressDisplay:
    """A ``ProgressCallback`` that draws on ``stream`` (stderr by default); use it as a context
    manager, or call ``close`` at the end. ``bar`` None: a bar exactly when the stream is a
    terminal."""

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        bar: bool | None = None,
        every: float | None = None,
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.bar = _is_terminal(self.stream) if bar is None else bar
        self.every = progress_every_seconds() if every is None else every
        self.meters: dict[str, Meter] = {}
        self.printed_at = time.monotonic()
        self.shown: set[str] = set()  # stages a plain line was printed for
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}
        # The bar draws on its own copy of the terminal, taken now: a Dagster run executed in
        # this process (``demo``) points file descriptor 2 at its compute log while its steps
        # run, and a bar on that would be no terminal, drawn once at its end.
        self._terminal = _own_copy(self.stream) if self.bar else None

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __call__(self, progress: Progress) -> None:
        meter = self.meters.get(progress.stage)
        if meter is None:
            meter = self.meters[progress.stage] = Meter()
        meter.update(progress)
        if self.bar:
            self._draw(progress, meter)
        else:
            self._line(progress, meter)

    # -- plain lines ------------------------------------------------------------------------
    def _line(self, progress: Progress, meter: Meter) -> None:
        now = time.monotonic()
        if progress.finished:
            if progress.stage in self.shown or meter.elapsed >= self.every:
                print(describe(progress, meter), file=self.stream, flush=True)
                self.printed_at = now
            self.shown.discard(progress.stage)
            return
        if now - self.printed_at >= self.every:
            print(describe(progress, meter), file=self.stream, flush=True)
            self.printed_at = now
            self.shown.add(progress.stage)

    # -- the bar ----------------------------------------------------------------------------
    def _draw(self, progress: Progress, meter: Meter) -> None:
        if self._rich is None:
            self._rich = _rich_progress(self._terminal or self.stream)
            self._rich.start()
        shown = figures(progress, meter)
        task = self._tasks.get(progress.stage)
        total = None if progress.total is None else max(progress.total, progress.done)
        if task is None:
            task = self._tasks[progress.stage] = self._rich.add_task(
                progress.stage, total=total, figures=shown
            )
        self._rich.update(task, completed=progress.done, total=total, figures=shown)
        if progress.finished:
            self._rich.update(task, completed=progress.done, total=progress.done or 1)

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        if self._terminal is not None:
            self._terminal.close()
            self._terminal = None


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _own_copy(stream: IO[str]) -> IO[str] | None:
    """A new file object on a duplicate of ``stream``'s descriptor (None: it has none), which
    stays the terminal whatever is later pointed at the original descriptor."""
    try:
        fd = os.dup(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return None
    return os.fdopen(fd, "w", encoding=getattr(stream, "encoding", None) or "utf-8")


def _rich_progress(stream: IO[str]):
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn
    from rich.progress import Progress as RichProgress

    try:  # measured on the stream itself: rich measures descriptors 0-2, which a run may move
        width: int | None = os.get_terminal_size(stream.fileno()).columns or None
    except (AttributeError, ValueError, OSError):
        width = None
    return RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[figures]}"),
        console=Console(file=stream, force_terminal=True, width=width),
        refresh_per_second=4,
    )
