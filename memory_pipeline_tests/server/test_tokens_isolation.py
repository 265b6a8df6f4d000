"""Bearer tokens: scoped to memories and read/write, stored hashed, managed with the CLI; and
isolation between two memories that share words and entity names, through every endpoint."""

from __future__ import annotations

import hashlib
import json
import subprocess

import httpx
import pytest

from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.support import stores
from memory_pipeline_tests.support.service import CLI

SHARED = "Lucinda Okonkwo and the Harbor Project: budget review on Tuesday, apples for the team."


def ep(memory: str, title: str, body: str) -> dict:
    return {
        "memory": memory,
        "kind": "note",
        "title": title,
        "occurred_at": "2026-03-01",
        "body": body,
    }


def cli(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), env=env, capture_output=True, text=True, timeout=120)


def create_token(env, name: str, *args) -> str:
    done = cli(env, "tokens", "create", name, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["token"]


@pytest.fixture
def two_memories(local):
    report = local.add(
        [
            ep("alice", "Alice harbor", SHARED + " Alice-only: the kumquat orchard."),
            ep(
                "alice", "Alice second", "Lucinda Okonkwo met Alice again about the Harbor Project."
            ),
            ep("bob", "Bob harbor", SHARED + " Bob-only: the zeppelin hangar."),
            ep("bob", "Bob second", "Lucinda Okonkwo met Bob again about the Harbor Project."),
        ]
    )
    local.index()
    from memory_pipeline.storage import entities_store

    with local.db.connection() as conn:
        stores.refresh_memories(conn, ["alice", "bob"], entities_store.EntityReport())
    return report.inserted_ids


@pytest.mark.slow  # starts processes
def test_tokens_are_stored_hashed_and_managed_with_the_cli(env, local):
    token = create_token(env, "agent", "--memory", "alice", "--write")
    assert token.startswith("mpt_") and len(token) > 40
    with local.db.connection() as conn:
        rows = conn.execute("SELECT name, token_hash, memories, access FROM api_tokens").fetchall()
    assert rows == [("agent", hashlib.sha256(token.encode()).hexdigest(), ["alice"], "write")]
    assert token not in json.dumps([list(r) for r in rows])
    listed = cli(env, "tokens", "list")
    assert (
        listed.returncode == 0
        and "agent: write alice" in listed.stdout
        and token not in listed.stdout
    )
    again = cli(env, "tokens", "create", "agent", "--memory", "alice")
    assert again.returncode == 2 and "exists already" in again.stderr
    nothing = cli(env, "tokens", "create", "x")
    assert nothing.returncode == 2 and "--memory" in nothing.stderr
    assert cli(env, "tokens", "revoke", "agent").returncode == 0
    assert count(local.db, "SELECT count(*) FROM api_tokens") == 0


def test_a_token_sees_only_its_memories_through_every_endpoint(api, env, local, two_memories):
    alice_ids, bob_ids = two_memories[:2], two_memories[2:]
    alice = create_token(env, "alice-reader", "--memory", "alice")
    bob = create_token(env, "bob-writer", "--memory", "bob", "--write")

    def as_(token):
        return {"Authorization": f"Bearer {token}"}

    assert api.get("/v1/memories").status_code == 401
    assert api.get("/v1/memories", headers=as_("mpt_wrong")).status_code == 401
    responses = []

    def call(method, url, token, **kw):
        response = api.request(method, url, headers=as_(token), **kw)
        responses.append((token, response))
        return response

    for token, mine, other, other_ids, _other_name in (
        (alice, "alice", "bob", bob_ids, "bob"),
        (bob, "bob", "alice", alice_ids, "alice"),
    ):
        found = call(
            "GET",
            "/v1/search",
            token,
            params={"memory": mine, "q": "Lucinda Okonkwo Harbor Project apples"},
        )
        assert found.status_code == 200
        assert {r["episodeId"] for r in found.json()["results"]} <= set(two_memories)
        assert not {r["episodeId"] for r in found.json()["results"]} & set(other_ids)
        hidden = call("GET", "/v1/search", token, params={"memory": other, "q": "Lucinda"})
        nobody = call("GET", "/v1/search", token, params={"memory": "carol", "q": "Lucinda"})
        assert hidden.status_code == nobody.status_code == 404
        assert hidden.json()["error"] == f"unknown memory '{other}' (existing: {mine})"
        assert nobody.json()["error"] == f"unknown memory 'carol' (existing: {mine})"
        assert [m["name"] for m in call("GET", "/v1/memories", token).json()["memories"]] == [mine]
        status = call("GET", "/v1/status", token).json()
        assert [m["name"] for m in status["memories"]] == [mine] and "episodes" not in status
        for episode_id in other_ids:
            assert call("GET", f"/v1/episodes/{episode_id}", token).json() == {
                "error": f"no episode {episode_id}"
            }
            assert call("DELETE", f"/v1/episodes/{episode_id}", token).status_code == 404
        assert call("GET", "/v1/episodes/999999", token).json() == {"error": "no episode 999999"}
        assert call("DELETE", f"/v1/memories/{other}", token).json() == {
            "error": f"unknown memory '{other}' (existing: {mine})"
        }
        assert call("DELETE", "/v1/memories/carol", token).status_code == 404
        written = call("POST", "/v1/episodes", token, json=[ep(other, "sneak", "sneaky text")])
        assert written.status_code in (403, 422)

    # Read-only: alice's token cannot write even to alice.
    assert call("POST", "/v1/episodes", alice, json=[ep("alice", "t", "b")]).status_code == 403
    assert call("DELETE", f"/v1/episodes/{alice_ids[0]}", alice).status_code == 403
    assert call("POST", "/v1/index", alice).status_code == 403
    # Bob's write token writes to bob only; the item for alice is rejected in place.
    mixed = call(
        "POST", "/v1/episodes", bob, json=[ep("bob", "new", "new bob text"), ep("alice", "x", "y")]
    )
    assert mixed.status_code == 201
    assert mixed.json()["rejected"] == [
        {"location": "episodes[1]", "reason": "this token cannot write to memory 'alice'"}
    ]
    assert "episodes" not in call("POST", "/v1/index", bob).json()

    for token, response in responses:
        other_name, other_only = ("bob", "zeppelin") if token == alice else ("alice", "kumquat")
        text = response.text.lower()
        assert other_only not in text, (response.request.url, text)
        assert "traceback" not in text
        if (
            other_name not in str(response.request.url)
            and other_name not in (response.request.content or b"").decode()
        ):
            assert other_name not in text, (response.request.url, text)
    assert count(local.db, "SELECT count(*) FROM episodes WHERE memory = 'alice'") == 2
    assert count(local.db, "SELECT count(*) FROM episodes WHERE memory = 'bob'") == 3


@pytest.mark.slow  # starts processes
def test_with_tokens_every_request_needs_one_and_ipv6_loopback_serves(env, local):
    create_token(env, "admin", "--all-memories", "--write")
    from memory_pipeline_tests.support.service import ServerProcess

    server = ServerProcess(["serve", "--host", "::1", "--port", "0"], env)
    try:
        assert "bearer tokens required" in server.first_line and "[::1]" in server.first_line
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert client.get("/v1/status").status_code == 401
    finally:
        server.close()
