"""``GET /v1/memories/{memory}/episodes`` and ``GET /v1/episodes/{id}/history`` on a real server,
and ``history=true`` on ``GET /v1/search``: an item re-sent with the same ``id`` and another body
is a new revision, listed once, its old body found only with history."""

from __future__ import annotations


def item(body: str) -> dict:
    return {
        "id": "budget",
        "memory": "alice",
        "kind": "note",
        "title": "Budget",
        "occurred_at": "2026-03-01",
        "body": body,
    }


def test_revisions_over_http(api, local):
    old = api.post("/v1/episodes", json={"episodes": [item("Fence budget 180 EUR.")]}).json()
    revised = api.post("/v1/episodes", json={"episodes": [item("Fence budget 240 EUR.")]})
    assert revised.status_code == 201 and revised.json()["revised"] == 1
    new = revised.json()["episodeIds"][0]
    old_id = old["episodeIds"][0]
    api.post("/v1/index")

    listed = api.get("/v1/memories/alice/episodes").json()
    assert listed["memory"] == "alice"
    assert [(e["id"], e["sourceId"], e["revisions"]) for e in listed["episodes"]] == [
        (new, "budget", 2)
    ]
    history = api.get(f"/v1/episodes/{old_id}/history").json()
    assert [(r["id"], r["current"], r["supersededBy"]) for r in history["revisions"]] == [
        (new, True, None),
        (old_id, False, new),
    ]
    plain = api.get("/v1/search", params={"memory": "alice", "q": "fence budget 180"}).json()
    assert [r["episodeId"] for r in plain["results"]] == [new]
    both = api.get(
        "/v1/search", params={"memory": "alice", "q": "fence budget 180", "history": "true"}
    ).json()
    assert [(r["episodeId"], r.get("superseded", False)) for r in both["results"]] == [
        (new, False),
        (old_id, True),
    ]
    assert api.get("/v1/episodes/999999/history").status_code == 404
    assert api.get("/v1/memories/nobody/episodes").status_code == 404
    assert api.get("/v1/memories/alice/episodes", params={"limit": 0}).status_code in (400, 422)
