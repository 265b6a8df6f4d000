"""The hostile-request script (benchmarks/hostile_requests.py) at a small size against a real server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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


@pytest.mark.slow  # a second server process, tokens through the CLI
def test_scope_fields_foreign_names_and_a_token_revoked_mid_run_change_nothing(
    api, env, local, db_url, tmp_path
):
    import base64

    from hostile_requests import (  # noqa: E402 - the script beside the benchmarks
        API_ROUTES,
        MCP_HEADERS,
        MCP_ROUTES,
        guard_attack,
        scope_attack,
    )

    from memory_pipeline_tests.server.test_tokens_isolation import cli, create_token
    from memory_pipeline_tests.support.documents import write_docx
    from memory_pipeline_tests.support.service import ServerProcess

    local.add(
        [
            {"memory": m, "kind": "note", "title": t, "occurred_at": "2026-03-01", "body": b}
            for m, t, b in SEED_EPISODES
        ]
    )
    for memory in ("bob", "alice", "bob", "alice"):
        local.observe(memory, f"{memory} keeps a statement {memory}", decision="add", force=True)
    base = str(api.base_url).rstrip("/")
    # Foreign Host and Origin on every route of both servers (no token yet: loopback access).
    report = guard_attack(base, db_url, API_ROUTES, requests=120, seed=5, workers=4)
    assert report.ok, report.to_json()
    mcp = ServerProcess(["mcp", "--http", "--port", "0"], env)
    try:
        mcp_report = guard_attack(
            mcp.url, db_url, MCP_ROUTES, requests=60, seed=6, workers=4, headers=MCP_HEADERS
        )
    finally:
        mcp.close()
    assert mcp_report.ok, mcp_report.to_json()
    assert "Traceback" not in "".join(mcp.stderr)
    assert set(report.by_kind) == set(mcp_report.by_kind) == {"host", "origin"}

    # Null, wrong-typed and foreign memories in every body, then the token revoked mid-run.
    alice = create_token(env, "alice-writer", "--memory", "alice", "--write")
    create_token(env, "reader", "--all-memories")  # tokens still exist once alice's is revoked
    docx = base64.b64encode(
        write_docx(tmp_path / "m.docx", title="M", sections=[(1, "A", ["Minutes."])]).read_bytes()
    ).decode()

    def revoke() -> None:
        assert cli(env, "tokens", "revoke", "alice-writer").returncode == 0

    scoped = scope_attack(base, db_url, alice, revoke, requests=240, workers=4, document=docx)
    assert scoped.ok, scoped.to_json()
    assert scoped.by_kind["scope"] == 120 and scoped.by_kind["revoked"] == 120
    assert scoped.statuses[401] == 120 and scoped.statuses[500] == 0
