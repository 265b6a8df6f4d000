"""Observations and beliefs through a real ``serve`` process: saving with close ones shown,
duplicates, revising, listing, statuses, search by their channels, and token scopes."""

from __future__ import annotations

from memory_pipeline_tests.server.test_tokens_isolation import create_token, ep


def save(api, status: int, **statement) -> dict:
    response = api.post("/v1/observations", json={"memory": "alice", **statement})
    assert response.status_code == status, response.text
    return response.json()


def test_saving_shows_close_ones_refuses_duplicates_revises_and_search_finds_them(api, local, env):
    episode = local.add(
        [
            ep("alice", "Track day", "Mara ran intervals with her coach Ines on Tuesday."),
            ep("bob", "Bob", "Bob keeps bees."),
        ]
    ).inserted_ids[0]
    local.index()
    first = save(
        api, 201, text="Mara's running coach is Ines", episode_ids=[episode], author="agent"
    )
    assert first["action"] == "added" and first["vector"] == "stored" and first["close"] == []
    # Held back as close: reported as not saved (issue 27), never a success.
    close = save(api, 409, text="Mara's running coach is called Ines")
    assert close["action"] == "undecided" and close["id"] is None
    assert close["saved"] is False and close["error"].startswith("not saved")
    assert [c["id"] for c in close["close"]] == [first["id"]] and close["close"][0]["foundBy"]
    duplicate = save(api, 409, text="mara's running coach is ines!", decision="add")
    assert duplicate["duplicateOf"] == first["id"] and "force" in duplicate["error"]
    forced = save(api, 201, text="mara's running coach is ines!", decision="add", force=True)
    revised = save(
        api,
        201,
        text="Mara's running coach is now Joana",
        decision="revise",
        revise_id=forced["id"],
    )
    assert revised["action"] == "revised"
    belief = save(
        api,
        201,
        text="Mara prefers running before work",
        kind="belief",
        confidence=0.6,
        decision="add",
    )

    listed = api.get("/v1/observations", params={"memory": "alice"}).json()["observations"]
    assert [o["id"] for o in listed] == [belief["id"], revised["id"], first["id"]]
    assert listed[1]["revises"] == forced["id"] and listed[2]["episodeIds"] == [episode]
    history = api.get("/v1/observations", params={"memory": "alice", "all": "true"}).json()[
        "observations"
    ]
    assert {o["id"]: o["status"] for o in history}[forced["id"]] == "retired"
    beliefs = api.get("/v1/observations", params={"memory": "alice", "kind": "belief"}).json()[
        "observations"
    ]
    assert [o["id"] for o in beliefs] == [belief["id"]]

    found = api.get(
        "/v1/search",
        params={"memory": "alice", "q": "who is Mara's running coach", "channels": "observation"},
    ).json()["results"]
    assert found and all(r["kind"] == "observation" and r["status"] == "active" for r in found)
    top = next(r for r in found if r["chunkId"] == f"observation:{first['id']}")
    assert top["sources"]["episodeIds"] == [episode] and "ord" not in top
    assert f"observation:{forced['id']}" not in [
        r["chunkId"] for r in found
    ]  # retired: history only

    marked = api.patch(
        f"/v1/observations/{belief['id']}", params={"memory": "alice"}, json={"status": "contested"}
    )
    assert marked.status_code == 200 and marked.json()["status"] == "contested"
    query = {"memory": "alice", "q": "running before work", "channels": "belief"}
    assert (
        api.get("/v1/search", params=query).json()["results"] == []
    )  # the default policy leaves contested out
    contested = api.get("/v1/search", params={**query, "contested": "true"}).json()["results"]
    assert [(r["chunkId"], r["status"]) for r in contested] == [
        (f"belief:{belief['id']}", "contested")
    ]

    for response, status, words in [
        (
            api.patch(
                "/v1/observations/999999", params={"memory": "alice"}, json={"status": "retired"}
            ),
            404,
            "no statement #999999 in memory 'alice'",
        ),
        (
            api.patch(
                f"/v1/observations/{2**70}", params={"memory": "alice"}, json={"status": "retired"}
            ),
            404,
            None,
        ),
        (
            api.patch(
                f"/v1/observations/{belief['id']}",
                params={"memory": "bob"},
                json={"status": "retired"},
            ),
            404,
            None,
        ),
        (
            api.patch(
                f"/v1/observations/{belief['id']}",
                params={"memory": "alice"},
                json={"status": "gone"},
            ),
            422,
            "unknown status 'gone'",
        ),
        (
            api.post("/v1/observations", json={"memory": "alice", "txt": "typo"}),
            422,
            "unknown field 'txt'",
        ),
        (
            api.post("/v1/observations", json={"memory": "alice", "text": "x", "kind": "opinion"}),
            422,
            "kind",
        ),
        (
            api.post(
                "/v1/observations",
                json={"memory": "alice", "text": "x", "decision": "revise", "revise_id": 2**70},
            ),
            404,
            None,
        ),
        (
            api.post("/v1/observations", json={"memory": "alice", "text": "x", "confidence": 2}),
            422,
            "confidence",
        ),
        (
            api.post(
                "/v1/observations", json={"memory": "bob", "text": "x", "episode_ids": [episode]}
            ),
            422,
            f"episode_ids: no episode {episode} in memory 'bob'",
        ),  # another memory's episode is not a source
        (
            api.post(
                "/v1/observations",
                content=b"{oops",
                headers={"Content-Type": "application/json"},
            ),
            400,
            None,
        ),
        (api.get("/v1/observations"), 422, "'memory'"),
        (api.get("/v1/observations", params={"memory": "alice", "limit": 0}), 422, "limit"),
    ]:
        assert response.status_code == status, (response.status_code, response.text)
        assert list(response.json()) == ["error"] and "Traceback" not in response.text
        assert words is None or words in response.json()["error"], response.text

    # Tokens scope statements as they scope episodes.
    reader = create_token(env, "reader", "--memory", "alice")
    writer = create_token(env, "writer", "--memory", "bob", "--write")
    as_reader, as_writer = ({"Authorization": f"Bearer {t}"} for t in (reader, writer))
    assert api.get("/v1/observations", params={"memory": "alice"}).status_code == 401
    assert (
        len(
            api.get("/v1/observations", params={"memory": "alice"}, headers=as_reader).json()[
                "observations"
            ]
        )
        == 3
    )
    refused = api.post("/v1/observations", json={"memory": "alice", "text": "x"}, headers=as_reader)
    assert refused.status_code == 403 and "may only read" in refused.json()["error"]
    hidden = api.get("/v1/observations", params={"memory": "alice"}, headers=as_writer)
    assert (
        hidden.status_code == 404
        and hidden.json()["error"] == "unknown memory 'alice' (existing: bob)"
    )
    assert (
        api.post(
            "/v1/observations", json={"memory": "alice", "text": "x"}, headers=as_writer
        ).status_code
        == 404
    )
    assert (
        api.patch(
            f"/v1/observations/{belief['id']}",
            params={"memory": "alice"},
            json={"status": "retired"},
            headers=as_writer,
        ).status_code
        == 404
    )
    assert (
        api.post(
            "/v1/observations", json={"memory": "bob", "text": "Bob keeps bees"}, headers=as_writer
        ).status_code
        == 201
    )
