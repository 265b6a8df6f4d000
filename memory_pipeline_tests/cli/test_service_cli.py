"""``memory-pipeline memories``, ``forget`` and ``status`` (data folder, database) as a user runs them."""

from __future__ import annotations

import dagster as dg

from memory_pipeline_tests.helpers import dagster_instance, episode, write_jsonl


def test_memories_forget_and_status(cli, tmp_path, db_url):
    write_jsonl(tmp_path / "e.jsonl", [episode(1, "alice"), episode(2, "alice"), episode(3, "bob")])
    ingested = cli("ingest", str(tmp_path / "e.jsonl"), "--json")
    assert ingested.code == 0, ingested.err
    first = ingested.json()["episodeIds"][0]

    listed = cli("memories", "--json")
    assert [(m["name"], m["episodes"]) for m in listed.json()] == [("alice", 2), ("bob", 1)]
    assert "alice: 2 episode(s), 0 chunk(s)" in cli("memories").out

    status = cli("status")
    assert status.code == 0 and "data folder:" in status.out and "memories:         2" in status.out
    assert "database:         postgresql://" in status.out

    unknown = cli("forget", "--memory", "carol", "--all")
    # The CLI names where it looked (here the test database's URL, password masked).
    assert (
        unknown.code == 2 and "unknown memory 'carol' in the database postgresql://" in unknown.err
    )
    assert "(existing: alice, bob)" in unknown.err
    assert cli("forget", "--memory", "alice").code == 2
    assert cli("forget", "--memory", "bob", "--episode", str(first)).code == 2  # not bob's episode

    forgot = cli("forget", "--memory", "alice", "--episode", str(first), "--json")
    assert forgot.code == 0 and "warning" not in forgot.err, forgot.err
    assert forgot.json()["deleted"]["episodes"] == 1
    assert "forgot memory 'bob': 1 episode(s)" in cli("forget", "--memory", "bob", "--all").out
    assert [m["name"] for m in cli("memories", "--json").json()] == ["alice"]
    search = cli("search", "x", "--memory", "bob")
    assert search.code == 2 and "unknown memory 'bob' in the database " in search.err
    assert "(existing: alice)" in search.err

    # The Dagster UI shows the day's episodes partition as changed, with what was forgotten.
    with dagster_instance(db_url, tmp_path / "dagster_home") as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("episodes"))
        metadata = event.asset_materialization.metadata
        assert (
            metadata["forgotten_episodes"].value == 1 and metadata["dagster/row_count"].value == 1
        )


def test_ui_and_serve_on_a_taken_port_exit_2_plainly_and_start_nothing(cli):
    import socket

    import psutil

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        ui = cli("ui", "--port", port, timeout=120)
        serve = cli("serve", "--port", port, timeout=120)
    for result in (ui, serve):
        assert result.code == 2, result.err
        assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.err
        assert "another program holds it: --port picks another" in result.err
        assert "Traceback" not in result.err
    assert "Dagster UI on" not in ui.out
    started = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if p.info["cmdline"] and "dev" in p.info["cmdline"] and port in p.info["cmdline"]
    ]
    assert started == []
