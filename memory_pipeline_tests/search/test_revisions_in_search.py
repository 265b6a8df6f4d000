"""Search answers with current revisions only: a superseded revision is in no channel (vector,
keyword, date, graph, pending), and ``history`` lists those holding the query's words after the
results, marked superseded, in the JSON and the table (DESIGN.md: revision, current)."""

from __future__ import annotations

from memory_pipeline.search.render import human_table

FENCE = {
    "id": "fence",
    "memory": "me",
    "kind": "note",
    "title": "Fence",
    "occurred_at": "2026-03-01T09:00:00Z",
    "body": "Cost estimate for the garden fence: 180 EUR, built by Anneliese Brandt.",
}
OTHER = {
    "memory": "me",
    "kind": "note",
    "title": "Tulips",
    "occurred_at": "2026-03-02T09:00:00Z",
    "body": "Planted tulip bulbs by the shed.",
}


def edited(body: str) -> dict:
    return {**FENCE, "body": body}


def test_search_returns_the_current_revision_and_history_the_old_one(mem):
    old = mem.add([FENCE, OTHER]).inserted_ids[0]
    mem.index()
    assert mem.search("me", "fence cost 180").results[0].episode_id == old
    new = mem.add([edited(FENCE["body"].replace("180", "240"))]).inserted_ids[0]

    # Before the new revision is indexed: the old one is gone, the new one is pending.
    waiting = mem.search("me", "fence cost estimate")
    assert old not in {r.episode_id for r in waiting.results}
    assert [m["episodeId"] for m in waiting.pending_matches] == [new]

    mem.index()
    for query, channels in [
        ("fence cost estimate EUR", None),
        ("fence cost estimate EUR", ("vector",)),
        ("180", ("keyword",)),
        ("what happened on 1 March 2026", ("date",)),
        ("Anneliese Brandt", None),
    ]:
        response = mem.search("me", query, channels=channels)
        assert old not in {r.episode_id for r in response.results}, (query, channels)
        assert response.pending_episodes == 0
    found = mem.search("me", "fence cost estimate EUR")
    assert found.results[0].episode_id == new and "240" in found.results[0].text
    assert all("superseded" not in r.to_json() for r in found.results)

    with_history = mem.search("me", "fence cost 180", history=True)
    superseded = [r for r in with_history.results if r.superseded_at is not None]
    assert [r.episode_id for r in superseded] == [old]
    assert with_history.results[-1] is superseded[0]  # after the current results
    document = with_history.to_json()
    assert document["history"] is True
    assert document["results"][-1]["superseded"] is True
    assert document["results"][-1]["supersededBy"] == new
    assert "180 EUR" in document["results"][-1]["snippet"]
    table = human_table(with_history)
    assert f"#{old} Fence [superseded " in table and f"by #{new}]" in table
    assert f"#{new} Fence" in table
    # History keeps the policy's filters: a kind the old revision is not finds nothing of it.
    assert mem.search("me", "fence 180", history=True, channels=("keyword",)).results
    none = mem.search("me", "tulips", history=True)
    assert all(r.superseded_at is None for r in none.results)


def test_a_revision_whose_body_comes_back_is_found_again_after_indexing(mem):
    first = mem.add([FENCE]).inserted_ids[0]
    mem.index()
    mem.add([edited("Fence cancelled; no cost.")])
    mem.index()
    assert first not in {r.episode_id for r in mem.search("me", "fence 180 EUR").results}
    mem.add([FENCE])
    assert mem.index().episodes == 1  # pending again: its chunks left the index
    assert mem.search("me", "fence 180 EUR").results[0].episode_id == first


def test_history_ranks_a_bounded_set_revisions_holding_every_word_first(mem, monkeypatch):
    from memory_pipeline.storage import search_store

    names = ["alder", "birch", "cedar", "maple", "rowan", "willow"]
    mem.add(
        [{**FENCE, "id": n, "title": n, "body": f"Old budget for the {n} hedge."} for n in names]
    )
    mem.add([{**FENCE, "id": n, "title": n, "body": f"New plan for the {n} hedge."} for n in names])
    monkeypatch.setattr(search_store, "HISTORY_CANDIDATES", 2)
    # Every old revision holds "budget" and "hedge"; only one holds "rowan" too.
    found = mem.search("me", "rowan hedge budget", history=True, channels=("keyword",))
    superseded = [r for r in found.results if r.superseded_at is not None]
    assert superseded[0].title == "rowan"
    assert len(superseded) <= 1 + 2  # the first tier, then at most the cap of the second
    assert all("hedge" in r.text for r in superseded)
