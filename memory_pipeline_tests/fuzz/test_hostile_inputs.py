"""The fault and fuzz suite at CI size: generated hostile files, queries and batch lines through
the real ``memory-pipeline`` entry point, against the real PostgreSQL and a loopback model server.

The generators and checks live in ``hostile.py``; ``scripts/fuzz_hostile.py`` runs the same ones
for longer. Each example is a few files or lines, so a run of all of them takes well under a
minute; the longer run is where rare combinations are found.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline_tests.fuzz import hostile
from memory_pipeline_tests.helpers import episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

CI_SETTINGS = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@pytest.fixture(scope="module")
def embed_server():
    with LoopbackEmbeddingServer(dim=1024) as server:
        yield server


@pytest.fixture
def env(db_url, tmp_path, embed_server):
    return {
        "MEMORY_PIPELINE_DATABASE_URL": db_url,
        "MEMORY_PIPELINE_HOME": str(tmp_path / "home"),
        "MEMORY_PIPELINE_EMBED_PROVIDER": "ollama",
        "OLLAMA_HOST": embed_server.url,
    }


@pytest.fixture
def two_memories(db_url, tmp_path, env):
    """fuzz-a and fuzz-b, indexed, written about the same things: a leak between them would show."""
    rows = [
        episode(i, memory=hostile.MEMORIES[i % 2], words="garden bicycle dentist Ana")
        for i in range(6)
    ]
    write_jsonl(tmp_path / "world.jsonl", rows)
    for argv in (["ingest", str(tmp_path / "world.jsonl")], ["index"]):
        outcome = hostile.run_main(argv, env)
        assert outcome.code == 0 and not outcome.crash, outcome.err + outcome.crash
    return hostile.memory_episodes(db_url, list(hostile.MEMORIES))


@CI_SETTINGS
@given(files=hostile.ingest_cases())
def test_hostile_files_lose_no_valid_record(files, db_url, tmp_path, env):
    problems = hostile.check_ingest(files, tmp_path / uuid.uuid4().hex, db_url, env)
    assert problems == []


@settings(CI_SETTINGS, max_examples=2)
@given(files=hostile.ingest_cases())
@pytest.mark.slow
def test_hostile_files_through_the_console_script(files, db_url, tmp_path, env):
    problems = hostile.check_ingest(
        files, tmp_path / uuid.uuid4().hex, db_url, env, runner=hostile.run_script
    )
    assert problems == []


@CI_SETTINGS
@given(lines=hostile.batch_lines())
def test_hostile_batch_lines_are_each_answered(lines, two_memories, tmp_path, env):
    assert hostile.check_batch(lines, tmp_path / "batch.jsonl", two_memories, env) == []


@CI_SETTINGS
@given(query=hostile.queries, memory=st.sampled_from(hostile.MEMORIES))
def test_hostile_queries_answer_from_their_memory_or_exit_2(query, memory, two_memories, env):
    assert hostile.check_query(query, memory, two_memories, env) == []
