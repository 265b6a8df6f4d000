"""Progress of long work, as the core reports it: ``Progress`` events, and the rate and time left.

The core (ingest, the index pass, statements' vectors, index builds) tells whoever called it how
far it is through a callback (``ProgressCallback``); it never prints. An adapter renders the
events: the CLI as a progress bar on a terminal or plain periodic lines otherwise, a Dagster run
as log lines and metadata. ``Meter`` turns a stage's successive events into a rate and the time
left, and ``describe`` into the one line both print, so every path reads the same.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Count:
    """A figure shown beside the stage's own: ``done`` of ``total`` ``unit``."""

    unit: str
    done: int
    total: int | None = None


@dataclass(frozen=True)
class Progress:
    """How far one stage of a piece of work is. ``done`` and ``total`` count ``unit`` (the
    measure of the percentage and the rate); ``total`` None: not known yet; ``estimated``: the
    total is extrapolated from the part planned so far. ``also``: other figures shown beside
    (episodes next to vectors). ``note``: what the stage is doing when no count says it."""

    stage: str
    done: float
    total: float | None
    unit: str
    estimated: bool = False
    also: tuple[Count, ...] = ()
    note: str = ""
    finished: bool = False

    @property
    def fraction(self) -> float | None:
        if self.total is None:
            return None
        if self.total <= 0:
            return 1.0 if self.finished else None
        return min(1.0, max(0.0, self.done / self.total))


ProgressCallback = Callable[[Progress], None]

# The rate is measured over the last this many seconds of samples (a pass speeds up once the
# model is warm and slows down on long documents: the recent rate predicts the rest best).
RATE_WINDOW_SECONDS = 30.0


class Meter:
    """Rate and time left of one stage from its successive ``Progress`` events."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.started = clock()
        self.samples: deque[tuple[float, float]] = deque()
        self.last: Progress | None = None

    def update(self, progress: Progress) -> None:
        now = self.clock()
        if self.last is not None and progress.stage != self.last.stage:
            self.started, self.samples = now, deque()
        self.last = progress
        self.samples.append((now, progress.done))
        while len(self.samples) > 2 and now - self.samples[1][0] >= RATE_WINDOW_SECONDS:
            self.samples.popleft()

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    @property
    def rate(self) -> float | None:
        """Units per second over the recent window; None until there is something to measure."""
        if len(self.samples) < 2:
            if self.last is not None and self.last.done > 0 and self.elapsed > 0:
                return self.last.done / self.elapsed
            return None
        (t0, d0), (t1, d1) = self.samples[0], self.samples[-1]
        if t1 <= t0 or d1 <= d0:
            return None if d1 <= 0 else d1 / max(self.elapsed, 1e-9)
        return (d1 - d0) / (t1 - t0)

    @property
    def seconds_left(self) -> float | None:
        p, rate = self.last, self.rate
        if p is None or p.total is None or not rate or rate <= 0:
            return None
        return max(0.0, (p.total - p.done) / rate)


def duration(seconds: float) -> str:
    """A person's duration: "41 s", "3 min 20 s", "1 h 05 min"."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def _figure(done: float, total: float | None, unit: str, estimated: bool = False) -> str:
    if total is None:
        return f"{int(done):,} {unit}"
    return f"{int(done):,}/{'~' if estimated else ''}{int(total):,} {unit}"


def describe(progress: Progress, meter: Meter | None = None) -> str:
    """One plain line: "index: 420/2,000 episodes, 9,812/~47,000 vectors (21%), 310 vectors/s,
    about 41 s left"."""
    return f"{progress.stage}: {figures(progress, meter)}"


def figures(progress: Progress, meter: Meter | None = None) -> str:
    """``describe``'s line without the stage's name (a bar shows the name in its own column)."""
    parts = [_figure(c.done, c.total, c.unit) for c in progress.also]
    parts.append(_figure(progress.done, progress.total, progress.unit, progress.estimated))
    line = ", ".join(parts)
    fraction = progress.fraction
    if fraction is not None:
        line += f" ({100 * fraction:.0f}%)"
    if meter is not None:
        rate = meter.rate
        if rate and rate < 0.1:
            line += f", {60 * rate:,.1f} {progress.unit}/min"
        elif rate:
            line += (
                f", {rate:,.1f} {progress.unit}/s"
                if rate < 10
                else f", {rate:,.0f} {progress.unit}/s"
            )
        left = meter.seconds_left
        if progress.finished:
            line += f", done in {duration(meter.elapsed)}"
        elif left is not None:
            line += f", about {duration(left)} left"
    if progress.note:
        line += f"; {progress.note}"
    return line
