"""Observations and beliefs end to end on a real database: saving with close statements shown,
revisions kept as history, vectors from the index pass, and the two search channels."""

from __future__ import annotations

import pytest

from memory_pipeline import statements
from memory_pipeline.domain.observations import make_observation
from memory_pipeline.domain.policies import Policy, load_policies
from memory_pipeline.errors import InputError
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import observations_store
from memory_pipeline.storage.profiles_store import active_profile
from memory_pipeline_tests.helpers import write_jsonl
from memory_pipeline_tests.search.conftest import NOW
from memory_pipeline_tests.support import stores


def draft(text: str, **fields):
    return make_observation(**{"memory": "alice", "text": text, **fields})


def test_saving_shows_close_statements_and_the_caller_decides(db, world):
    first = statements.save(
        db, draft("Alice planted tulips with Tomás in the back garden"), embedder=world
    )
    assert first.action == "added" and first.vector == "stored" and first.close == []

    similar = draft("Alice planted garlic in the back garden")
    asked = statements.save(db, similar, embedder=world)
    assert asked.action == "undecided" and asked.saved_id is None
    assert [c.observation.id for c in asked.close] == [first.saved_id]
    assert "words" in asked.close[0].by and asked.close[0].similarity is not None

    added = statements.save(db, similar, embedder=world, decision="add")
    assert added.action == "added" and added.saved_id != first.saved_id

    again = statements.save(
        db,
        draft("alice planted TULIPS with Tomas in the back garden!"),
        embedder=world,
        decision="add",
    )
    assert again.action == "refused" and again.duplicate_of == first.saved_id
    forced = statements.save(
        db,
        draft("alice planted TULIPS with Tomas in the back garden!"),
        embedder=world,
        decision="add",
        force=True,
    )
    assert forced.action == "added"


def test_a_revision_retires_the_old_version_and_keeps_it_as_history(db, world):
    old = statements.save(
        db, draft("Alice's bike chain was fixed with oil"), embedder=world
    ).saved_id
    new = statements.save(
        db,
        draft("Alice's bike chain and derailleur were fixed with oil"),
        embedder=world,
        decision="revise",
        revise_id=old,
    )
    assert new.action == "revised"
    with db.connection() as conn:
        live = observations_store.listing(conn, "alice")
        history = observations_store.listing(conn, "alice", with_retired=True)
    assert [o.id for o in live] == [new.saved_id]
    assert {o.id: o.status for o in history} == {new.saved_id: "active", old: "retired"}
    assert next(o for o in history if o.id == new.saved_id).revises == old
    with pytest.raises(InputError, match=f"no active or contested statement #{old}"):
        statements.save(db, draft("something else entirely"), decision="revise", revise_id=old)
    with pytest.raises(InputError, match="unknown decision"):
        statements.save(db, draft("x"), decision="maybe")


def test_the_index_pass_embeds_statements_and_builds_their_index(db, world):
    with db.connection() as conn:
        observations_store.insert(conn, draft("Alice fixed the bicycle chain"))
        observations_store.insert(
            conn, draft("Alice likes pear trees", kind="belief", status="contested")
        )
        profile = active_profile(conn)
        assert observations_store.pending_count(conn, profile) == 2
    report = index_pending(db, world)
    assert report.statement_vectors == 2
    with db.connection() as conn:
        assert observations_store.pending_count(conn, profile) == 0
        state = stores.observation_index_state(conn, profile)
    assert state["valid"] and state["vectors"] == 2
    assert index_pending(db, world).statement_vectors == 0


def test_search_returns_statements_with_their_kind_and_sources(db, world, service):
    obs = statements.save(
        db,
        draft(
            "The bike computer showed error LDG-4102 after the chain repair",
            episode_ids=[2],
            passages=["p1"],
        ),
        embedder=world,
    ).saved_id
    response = service.search("alice", "LDG-4102 bike computer error", limit=20)
    statement = next(r for r in response.results if r.kind == "observation")
    assert statement.chunk_id == f"observation:{obs}" and statement.ranks["observation"] == 1
    assert (
        statement.sources == {"episodeIds": [2], "passages": ["p1"]} and statement.episode_id == 2
    )
    assert statement.to_json()["sources"] == {"episodeIds": [2], "passages": ["p1"]}
    assert any(r.kind != "observation" for r in response.results)  # chunks still come back
    off = service.search(
        "alice", "LDG-4102 bike computer error", limit=5, channels=("vector", "keyword", "graph")
    )
    assert all(r.kind not in ("observation", "belief") for r in off.results)
    # Another memory's statements are never candidates.
    assert all(
        r.kind != "observation"
        for r in service.search("bob", "LDG-4102 bike computer error").results
    )


def test_contested_beliefs_only_when_the_policy_says_so(db, world):
    contested = statements.save(
        db,
        draft("Alice secretly dislikes the garden soil", kind="belief", status="contested"),
        embedder=world,
    ).saved_id
    active = statements.save(
        db, draft("Alice enjoys baking sourdough", kind="belief"), embedder=world
    ).saved_id
    policies = {**load_policies(), "doubts": Policy(name="doubts", contested_beliefs=True)}
    service = SearchService(db, policies, embedder=world, clock=lambda: NOW)
    keys = lambda response: {r.chunk_id for r in response.results}  # noqa: E731
    default = service.search("alice", "does Alice dislike garden soil?", limit=10)
    assert f"belief:{contested}" not in keys(default)
    doubts = service.search("alice", "does Alice dislike garden soil?", policy="doubts", limit=10)
    assert f"belief:{contested}" in keys(doubts)
    baking = service.search("alice", "sourdough baking", limit=10, channels=("belief",))
    assert keys(baking) == {f"belief:{active}"} and baking.results[0].kind == "belief"
    statements.set_status(db, "alice", active, "retired")
    assert service.search("alice", "sourdough baking", limit=10, channels=("belief",)).results == []
    with pytest.raises(InputError, match="no statement #999999"):
        statements.set_status(db, "alice", 999999, "contested")


def test_a_statement_citing_chunks_ranks_them_in_its_place(db, world, service):
    chunk = service.search("alice", "bike chain", channels=("keyword",), limit=1).results[0]
    bob_chunk = service.search("bob", "garden", channels=("keyword",), limit=1).results[0].chunk_id
    saved = statements.save(
        db,
        draft(
            "The LDG-4102 error came back after the repair",
            passages=["D1:2", bob_chunk, chunk.chunk_id],
        ),
        embedder=world,
    ).saved_id
    alone = service.search("alice", "LDG-4102 error", channels=("observation",), limit=5)
    # The cited chunk of this memory, not the statement; another memory's chunk is no source.
    assert [r.chunk_id for r in alone.results] == [chunk.chunk_id]
    assert alone.results[0].ranks == {"observation": 1}
    # A policy that excludes the source's kind keeps the statement as a result of its own.
    other_kind = "journal" if chunk.kind != "journal" else "note"
    policies = {**load_policies(), "other": Policy(name="other", kinds=(other_kind,))}
    narrowed = SearchService(db, policies, embedder=world, clock=lambda: NOW).search(
        "alice", "LDG-4102 error", policy="other", channels=("observation",), limit=5
    )
    assert [r.chunk_id for r in narrowed.results] == [f"observation:{saved}"]


def test_a_statement_citing_no_passage_is_ranked_among_the_chunks(db, world, service):
    query = "which error did the bike computer show?"
    before = service.candidates("alice", query)
    saved = statements.save(
        db, draft("Alice's bike computer shows error LDG-4102"), embedder=world
    ).saved_id
    unrelated = statements.save(db, draft("Alice enjoys baking sourdough"), embedder=world).saved_id
    key = f"observation:{saved}"
    after = service.candidates("alice", query)
    # The keyword channel scores it as one more chunk of the memory (its BM25 on the chunks'
    # statistics) and places it among them; the chunks keep their order and scores.
    assert key in [k for k, _ in after["keyword"]]
    for channel in ("vector", "keyword"):
        assert [hit for hit in after[channel] if not hit[0].startswith("observation:")] == before[
            channel
        ]
    # No word in common: not a keyword candidate. (This memory's six chunks are all vector
    # candidates, so any statement closer than the least similar of them is one too, as a chunk
    # would be.)
    assert f"observation:{unrelated}" not in [k for k, _ in after["keyword"]]
    # Its own channel's weight alone (0.5) could not lift it past a chunk that vector and keyword
    # both found; scored against the chunks, the statement that answers comes first.
    first = service.search("alice", query).results[0]
    assert (
        first.chunk_id == key
        and first.ranks["keyword"] is not None
        and first.ranks["observation"] == 1
    )
    # A policy without the statement channels takes no statements into the chunk channels either.
    off = service.candidates("alice", query, channels=("vector", "keyword"))
    assert not any(k.startswith("observation:") for hits in off.values() for k, _ in hits)


def test_a_statement_citing_chunks_does_not_join_the_chunk_channels(db, world, service):
    chunk = service.search("alice", "bike chain", channels=("keyword",), limit=1).results[0]
    statements.save(
        db,
        draft("Alice's bike computer shows error LDG-4102", passages=[chunk.chunk_id]),
        embedder=world,
    )
    after = service.candidates("alice", "which error did the bike computer show?")
    assert not any(
        k.startswith("observation:") for ch in ("vector", "keyword") for k, _ in after[ch]
    )
    assert [k for k, _ in after["observation"]] == [chunk.chunk_id]


def test_a_statement_does_not_join_the_keyword_channels_substring_fallback(
    db, world, service, tmp_path
):
    # Full text finds no chunk for "zzqx" (the label's word is "abczzqxdef"); the literal substring
    # fallback finds that chunk, scored 1.0, not on BM25's scale, so the statement, which full
    # text does match, is not placed among them.
    path = write_jsonl(
        tmp_path / "label.jsonl",
        [
            {
                "memory": "alice",
                "kind": "note",
                "title": "Label",
                "occurred_at": "2026-11-29T09:00:00Z",
                "body": "Serial number ABCZZQXDEF on the label.",
            }
        ],
    )
    ingest_paths(db, [path])
    index_pending(db, world)
    saved = statements.save(db, draft("The spare key code is zzqx"), embedder=world).saved_id
    ranked = service.candidates("alice", "zzqx", channels=("keyword", "observation"))
    assert [k for k, _ in ranked["observation"]] == [f"observation:{saved}"]
    assert len(ranked["keyword"]) == 1 and not ranked["keyword"][0][0].startswith("observation:")
    assert (
        service.search("alice", "zzqx", channels=("keyword", "observation")).keyword_method
        == "substring"
    )
    # When the substring finds no chunk either, the list holds the statements full text matched,
    # and says so.
    response = service.search("alice", "zzqx spare", channels=("keyword", "observation"))
    assert response.keyword_method == "full_text"
    assert (
        response.results[0].chunk_id == f"observation:{saved}"
        and response.results[0].ranks["keyword"] == 1
    )
