"""Nothing written is invisible: a search between ingest and index says how many of the memory's
episodes are not indexed yet and lists those holding the query's words, through ``Memory``, the
CLI's table and JSON, on a real database and a loopback model server."""

from __future__ import annotations

from memory_pipeline.search.render import human_table

NOTE = {
    "memory": "me",
    "kind": "note",
    "title": "Plumber visit",
    "occurred_at": "2026-03-01",
    "body": "The plumber replaced the kitchen tap washer on Tuesday.",
}


def test_a_search_before_indexing_names_the_pending_episode_then_finds_it(mem):
    mem.add([NOTE, {**NOTE, "title": "Garden", "body": "Planted tulip bulbs by the fence."}])
    before = mem.search("me", "who fixed the kitchen tap?")
    assert before.results == []
    doc = before.to_json()["pending"]
    assert doc["episodes"] == 2 and doc["atLeast"] is False
    assert [m["title"] for m in doc["matches"]] == ["Plumber visit"]
    assert "tap" in doc["matches"][0]["snippet"]
    table = human_table(before)
    assert "2 episode(s) of 'me' are not indexed yet" in table and "Plumber visit" in table
    # A policy's time window still applies to what is listed (the note is from March 2026).
    recent = mem.search("me", "who fixed the kitchen tap?", policy="recent")
    assert recent.pending_episodes == 2 and recent.pending_matches == []
    # The listing is read beside the statement channels, or after the channels when none runs.
    for channels in (("keyword", "graph"), ("observation",), ("vector",)):
        alone = mem.search("me", "who fixed the kitchen tap?", channels=channels)
        assert alone.to_json()["pending"] == doc, channels

    mem.index()
    after = mem.search("me", "who fixed the kitchen tap?")
    assert after.results and after.results[0].title == "Plumber visit"
    assert after.to_json()["pending"] == {"episodes": 0, "atLeast": False, "matches": []}
    assert "not indexed yet" not in human_table(after)


def test_hostile_words_in_the_query_are_data_in_the_pending_match(mem):
    mem.add([NOTE])
    for query in ("it's \\ 'tap' | !", "&&", "'''", "tap:*"):
        response = mem.search("me", query)
        assert response.pending_episodes == 1
    assert mem.search("me", "tap's").pending_matches[0]["title"] == "Plumber visit"
