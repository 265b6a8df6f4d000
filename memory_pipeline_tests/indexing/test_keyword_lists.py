"""Keyword champion lists built beside an index run (``memory_pipeline.indexing.keyword_lists``): started
once most of the run is committed, they see what was committed by then and the writers add the
rest, so the lists are exact when the run ends and nothing is left to build after it. Real
database, real loopback model server with one slot."""

from __future__ import annotations

import random

import pytest

from memory_pipeline import Memory
from memory_pipeline.indexing import committer
from memory_pipeline.indexing.keyword_lists import START_SHARE
from memory_pipeline.storage import champions_store, keyword_store
from memory_pipeline_tests.helpers import QWEN, count
from memory_pipeline_tests.storage.test_keyword_store import (
    assert_lists_hold_the_rows_above_their_floor,
)
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

pytestmark = pytest.mark.slow  # thousands of episodes through a one-slot model: seconds each

EPISODES = 1200  # one chunk each; START_SHARE of them is over keyword_store.CAP


def _episodes(n: int) -> list[dict]:
    # Six words, each in most chunks, at lengths and counts that vary: lists with real floors.
    rng = random.Random(7)
    words = ["river", "harbour", "market", "bread", "ferry", "garden"]
    return [
        {
            "memory": "big",
            "kind": "note",
            "title": f"note {i}",
            "occurred_at": "2026-02-01",
            "body": f"Entry {i}: "
            + " ".join(rng.choice(words) for _ in range(rng.randint(4, 40)))
            + ".",
        }
        for i in range(n)
    ]


def _add(mem: Memory, episodes: list[dict]) -> None:
    for start in range(0, len(episodes), 1000):  # Memory.add takes at most 1,000 at once
        mem.add(episodes[start : start + 1000])


@pytest.fixture
def slow_mem(db_url, monkeypatch):
    # One call of 16 at a time, 0.1 s each, a commit after each: the run's last 15% (12 calls)
    # takes over a second, far longer than building lists over ~1,000 chunks.
    monkeypatch.setattr(committer, "WRITE_EVERY_CHUNKS", 1)
    with LoopbackEmbeddingServer(dim=512, models={QWEN}, delay_s=0.1, slots=1) as server:
        with Memory.open(
            url=db_url,
            embed_provider="ollama",
            embed_url=server.url,
            embed_batch_size=16,
            record_in_dagster=False,
        ) as mem:
            yield mem


def test_a_large_memorys_lists_are_built_beside_the_pass_and_exact_at_its_end(slow_mem):
    assert START_SHARE * EPISODES > keyword_store.CAP
    _add(slow_mem, _episodes(EPISODES))
    report = slow_mem.index(keyword_lists=True)
    assert report.episodes == EPISODES and report.pending_after == 0
    [built] = report.keyword_lists  # one build, beside the pass: the check after it found nothing
    assert built.memory == "big" and built.outcome == "built" and built.rows > 0
    seen = count(slow_mem.db, "SELECT chunks FROM keyword_champion_state WHERE memory = 'big'")
    # It read the chunks committed once the share was reached, not all of them ...
    assert START_SHARE * EPISODES <= seen < EPISODES
    # ... and the writers after it kept the lists exact, so they are not stale either.
    with slow_mem.db.connection() as conn:
        assert assert_lists_hold_the_rows_above_their_floor(conn, "big") > built.rows
        assert champions_store.refresh_all_champions(conn, stale_only=True) == []


def test_without_keyword_lists_nothing_is_built_and_a_small_run_builds_after_its_pass(slow_mem):
    _add(slow_mem, _episodes(keyword_store.CAP + 20))
    assert slow_mem.index(keyword_lists=False).keyword_lists == []
    assert count(slow_mem.db, "SELECT count(*) FROM keyword_champion_state") == 0
    # Nothing planned: the lists missing since are built by the check after the (empty) pass.
    report = slow_mem.index(keyword_lists=True)
    assert report.episodes == 0 and [b.outcome for b in report.keyword_lists] == ["built"]
    assert (
        count(slow_mem.db, "SELECT chunks FROM keyword_champion_state WHERE memory = 'big'")
        == keyword_store.CAP + 20
    )


class Interrupted(Exception):
    pass


def test_a_run_that_fails_beside_a_build_leaves_nothing_of_it_behind(slow_mem):
    # The run fails (here: its progress callback raises, as Ctrl-C would) once the build beside
    # the pass has registered: the failure is raised as it is, and the build is cancelled or
    # done, leaving no registration, no staged rows, no statement running, exact lists if any.
    _add(slow_mem, _episodes(EPISODES))

    def fail_once_the_build_started(report):
        if count(slow_mem.db, "SELECT count(*) FROM keyword_champion_builds") or count(
            slow_mem.db, "SELECT count(*) FROM keyword_champion_state"
        ):
            raise Interrupted

    with pytest.raises(Interrupted):
        slow_mem.index(on_progress=fail_once_the_build_started, keyword_lists=True)
    assert count(slow_mem.db, "SELECT count(*) FROM keyword_champion_builds") == 0
    assert count(slow_mem.db, "SELECT count(*) FROM keyword_champion_staged") == 0
    assert (
        count(
            slow_mem.db,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'memory_pipeline'"
            " AND state = 'active' AND pid <> pg_backend_pid()",
        )
        == 0
    )
    with slow_mem.db.connection() as conn:
        assert_lists_hold_the_rows_above_their_floor(conn, "big")
    assert 0 < count(slow_mem.db, "SELECT count(DISTINCT episode_id) FROM chunks") < EPISODES
