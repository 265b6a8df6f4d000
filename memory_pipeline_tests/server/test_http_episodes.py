"""``GET /v1/memories/{memory}/episodes`` and ``GET /v1/episodes/{id}/history`` on a real server,
and ``history=true`` on ``GET /v1/search``: an item re-sent with the same ``id`` and another body
is a new revision, listed once, its old body found only with history."""

from __future__ import annotations

import datetime as dt


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
    # As of yesterday the old revision was current; a bad date is a 422 naming it.
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).date().isoformat()
    then = api.get(
        "/v1/search", params={"memory": "alice", "q": "fence budget", "as_of": yesterday}
    ).json()
    assert [r["episodeId"] for r in then["results"]] == [old_id] and then["asOf"] == yesterday
    bad = api.get("/v1/search", params={"memory": "alice", "q": "fence", "as_of": "soon"})
    assert bad.status_code == 422 and "as_of 'soon' is not a date" in bad.text
    saved = api.post(
        "/v1/observations",
        json={"memory": "alice", "text": "The fence is oak", "valid_until": "2027-01-01"},
    )
    assert saved.status_code == 201, saved.text
    listed = api.get("/v1/observations", params={"memory": "alice"}).json()["observations"]
    assert listed[0]["validUntil"].startswith("2027-01-01") and listed[0]["validFrom"] is None
    wrong = api.post(
        "/v1/observations",
        json={"memory": "alice", "text": "x", "valid_from": "2026-02-30"},
    )
    assert wrong.status_code == 422 and "valid_from" in wrong.text
    assert api.get("/v1/episodes/999999/history").status_code == 404
    assert api.get("/v1/memories/nobody/episodes").status_code == 404
    assert api.get("/v1/memories/alice/episodes", params={"limit": 0}).status_code in (400, 422)
