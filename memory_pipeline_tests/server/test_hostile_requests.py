"""The hostile-request script (benchmarks/hostile_requests.py) at a small size against a real server."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from hostile_requests import SEED_EPISODES, attack  # noqa: E402 - a script beside the benchmarks


def test_hostile_requests_get_plain_4xx_and_leave_every_table_intact(api, local, db_url):
    ids = local.add(
        [
            {"memory": m, "kind": "note", "title": t, "occurred_at": "2026-03-01", "body": b}
            for m, t, b in SEED_EPISODES
        ]
    ).inserted_ids
    local.index()
    report = attack(
        str(api.base_url).rstrip("/"), db_url, requests=400, seed=3, workers=4, episode_ids=ids
    )
    assert report.ok, report.to_json()
    assert report.requests == 400 and set(report.by_kind) >= {
        "json",
        "huge",
        "sql",
        "traversal",
        "utf8",
        "method",
        "statement",
        "document",
    }
    assert (
        report.statuses[500] == 0
        and sum(n for s, n in report.statuses.items() if 400 <= s < 500) > 300
    )
