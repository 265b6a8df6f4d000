"""Progress events: the rate and time left a meter derives, the line both the CLI and Dagster
print, and ingest's progress over the files it finds."""

from __future__ import annotations

from memory_pipeline.domain.sources import parse_paths
from memory_pipeline.progress import Count, Meter, Progress, describe, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_meter_measures_the_recent_rate_and_the_time_left():
    clock = Clock()
    meter = Meter(clock=clock)
    for second in range(11):
        clock.now = 100.0 + second
        meter.update(Progress("index", 40 * second, 2000, "vectors"))
    assert meter.rate == 40.0
    assert meter.seconds_left == (2000 - 400) / 40
    line = describe(
        Progress("index", 400, 2000, "vectors", also=(Count("episodes", 42, 210),)), meter
    )
    assert line == "index: 42/210 episodes, 400/2,000 vectors (20%), 40 vectors/s, about 40 s left"


def test_an_unknown_or_estimated_total_is_said_as_such():
    assert describe(Progress("index", 3, None, "vectors")) == "index: 3 vectors"
    line = describe(Progress("index", 10, 400, "vectors", estimated=True))
    assert line == "index: 10/~400 vectors (2%)"
    assert [duration(s) for s in (41, 200, 3900)] == ["41 s", "3 min 20 s", "1 h 05 min"]


def test_ingest_reports_each_file_of_those_found(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(7):
        (folder / f"n{i}.md").write_text(f"note number {i}", encoding="utf-8")
    seen: list[Progress] = []
    result = parse_paths([folder], memory="me", on_progress=seen.append)
    assert len(result.episodes) == 7
    assert [(p.done, p.total, p.unit) for p in seen] == [(i, 7, "files") for i in range(1, 8)]
    assert seen[-1].finished and not any(p.finished for p in seen[:-1])
