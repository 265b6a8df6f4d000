"""The HTTP API through a real ``memory-pipeline serve`` process and a real HTTP client."""

from __future__ import annotations

import subprocess

import psycopg
import pytest

from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.support.service import CLI, ServerProcess

JSON = {"Content-Type": "application/json"}


def ep(memory: str, title: str, body: str, day: str = "2026-03-01") -> dict:
    return {"memory": memory, "kind": "note", "title": title, "occurred_at": day, "body": body}


def test_add_index_search_get_and_forget(api, local):
    added = api.post(
        "/v1/episodes",
        json={
            "episodes": [
                ep("alice", "Bread", "Sourdough needs a warm kitchen and patience."),
                {"memory": "alice", "title": "no kind"},
                ep("alice", "Bike", "The bicycle chain was oiled on Sunday."),
            ]
        },
    )
    assert added.status_code == 201
    body = added.json()
    assert body["inserted"] == 2
    assert body["rejected"] == [
        {"location": "episodes[1]", "reason": "missing fields 'kind', 'occurred_at', 'body'"}
    ]
    one = api.post(
        "/v1/episodes?memory=alice&kind=journal",
        json={
            "title": "Zanzibar",
            "occurred_at": "2026-03-02",
            "body": "Zanzibar trip with Lucinda.",
        },
    )
    assert one.status_code == 201 and one.json()["inserted"] == 1
    secret = one.json()["episodeIds"][0]

    indexed = api.post("/v1/index")
    assert (
        indexed.status_code == 200
        and indexed.json()["episodes"] == 3
        and indexed.json()["pendingEpisodes"] == 0
    )

    found = api.get("/v1/search", params={"memory": "alice", "q": "sourdough kitchen", "limit": 2})
    assert found.status_code == 200
    doc = found.json()
    assert doc["memory"] == "alice" and doc["vector"]["status"] == "ok" and len(doc["results"]) == 2
    top = doc["results"][0]
    assert (
        top["title"] == "Bread"
        and top["kind"] == "chunk"
        and top["ord"] == 0
        and top["episodeKind"] == "note"
    )
    assert isinstance(top["episodeId"], int) and top["chunkId"]

    episode = api.get(f"/v1/episodes/{secret}").json()
    assert (episode["title"], episode["kind"], episode["memory"]) == (
        "Zanzibar",
        "journal",
        "alice",
    )
    assert api.get("/v1/memories").json()["memories"][0]["episodes"] == 3
    status = api.get("/v1/status").json()
    assert status["episodes"] == 3 and status["database"].startswith("postgresql://")

    assert api.get("/v1/search", params={"memory": "alice", "q": "Zanzibar"}).json()["results"]
    gone = api.delete(f"/v1/episodes/{secret}")
    assert gone.status_code == 200 and gone.json()["deleted"]["episodes"] == 1
    assert gone.json()["deleted"]["telemetry"] >= 1  # the searches that saw it as a candidate, too
    # The phrase was only in that episode: words find nothing, and no channel returns the episode.
    assert (
        api.get(
            "/v1/search", params={"memory": "alice", "q": "Zanzibar", "channels": "keyword"}
        ).json()["results"]
        == []
    )
    assert secret not in [
        r["episodeId"]
        for r in api.get("/v1/search", params={"memory": "alice", "q": "Zanzibar"}).json()[
            "results"
        ]
    ]
    assert api.get(f"/v1/episodes/{secret}").status_code == 404
    assert api.delete(f"/v1/episodes/{secret}").status_code == 404
    assert count(local.db, "SELECT count(*) FROM chunks WHERE episode_id = %s", secret) == 0

    whole = api.delete("/v1/memories/alice")
    assert whole.status_code == 200 and whole.json()["deleted"]["episodes"] == 2
    missing = api.get("/v1/search", params={"memory": "alice", "q": "bread"})
    assert missing.status_code == 404 and missing.json() == {
        "error": "unknown memory 'alice' (existing: none yet)"
    }


def test_errors_are_plain_with_their_status(api, local):
    local.add([ep("alice", "A", "apples"), ep("bob", "B", "bananas")])
    cases = [
        (
            api.get("/v1/search", params={"memory": "carol", "q": "x"}),
            404,
            "unknown memory 'carol' (existing: alice, bob)",
        ),
        (
            api.get("/v1/search", params={"memory": "alice"}),
            422,
            "'memory' and 'q' are required query parameters",
        ),
        (api.get("/v1/search", params={"memory": "alice", "q": "x", "limit": "many"}), 422, None),
        (api.get("/v1/search", params={"memory": "alice", "q": "x" * 5000}), 422, None),
        (api.get("/v1/search", params={"memory": "alice", "q": "x", "policy": "nope"}), 422, None),
        (api.get("/v1/search", params={"memory": "../etc", "q": "x"}), 422, None),
        (api.post("/v1/episodes", content=b"{not json", headers=JSON), 400, None),
        (api.post("/v1/episodes", content=b'{"title": "\xff"}', headers=JSON), 400, None),
        (api.post("/v1/episodes", content=b"x" * (9 * 1024 * 1024), headers=JSON), 413, None),
        (
            api.post("/v1/episodes", json=[ep("alice", "t", f"b{i}") for i in range(1001)]),
            413,
            None,
        ),
        (api.get("/v1/episodes/99999999999999999999999"), 404, None),
        (api.get("/v1/episodes/1%27%20OR%201=1"), 422, None),
        (api.put("/v1/search"), 405, "method PUT is not allowed here"),
        (api.get("/v1/nothing"), 404, "no such route"),
    ]
    for response, status, message in cases:
        assert response.status_code == status, (response.request.url, response.text)
        assert set(response.json()) == {"error"} and "Traceback" not in response.text
        if message:
            assert response.json()["error"] == message
    assert api.get("/openapi.json").json()["paths"]["/v1/search"]["get"]


@pytest.mark.slow  # starts processes
def test_model_server_down_is_502_and_database_down_is_503(env, local, model, pg_server, db_url):
    local.add([ep("alice", "A", "apples")])
    server = ServerProcess(["serve", "--port", "0"], {**env, "OLLAMA_HOST": "http://127.0.0.1:9"})
    try:
        import httpx

        with httpx.Client(base_url=server.url, timeout=60) as client:
            down = client.post("/v1/index")
            assert down.status_code == 502
            assert down.json()["error"].startswith("the Ollama embedding service is unavailable")
            # Search still answers by keyword, and says why the vector channel is off.
            found = client.get("/v1/search", params={"memory": "alice", "q": "apples"})
            assert found.status_code == 200 and found.json()["vector"]["status"] == "unavailable"
            name = psycopg.conninfo.conninfo_to_dict(db_url)["dbname"]
            with psycopg.connect(pg_server.uri("postgres"), autocommit=True) as admin:
                admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                    (name,),
                )
                try:
                    dead = client.get("/v1/memories")
                    assert dead.status_code == 503 and dead.json()["error"].startswith(
                        "the database is unavailable"
                    )
                finally:
                    admin.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
    finally:
        server.close()
    assert "Traceback" not in "".join(server.stderr)


@pytest.mark.slow  # starts processes
def test_without_tokens_the_server_refuses_to_listen_beyond_loopback(env):
    done = subprocess.run(
        CLI + ["serve", "--host", "0.0.0.0", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 7
    assert "loopback only" in done.stderr and "Traceback" not in done.stderr
