"""The ``retrieval_quality`` asset materialized for real: numeric figures per memory (what the
Plots tab draws), the pandas tables, and its check, which fails when the figures fall."""

from __future__ import annotations

import dagster as dg
import pytest

from memory_pipeline.defs.assets.quality import retrieval_quality
from memory_pipeline.orchestration.resources import MemoryResource
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

NOTES = {
    "Sourdough": "The sourdough starter needs rye flour and a warm kitchen at 26 degrees.",
    "Dentist": "Doctor Marques found a small cavity in the upper molar; filling in June.",
    "Running": "Ines set the half marathon plan: intervals on Tuesday, long run on Sunday.",
}
QUESTIONS = [
    ("what does the sourdough starter need?", "Sourdough"),
    ("who found the cavity in my molar?", "Dentist"),
    ("when are the half marathon intervals?", "Running"),
]


@pytest.fixture
def resource(db_url):
    with LoopbackEmbeddingServer(dim=1024) as server:
        res = MemoryResource(url=db_url, embed_provider="ollama", embed_url=server.url)
        api = res.api
        api.add(
            [
                {
                    "memory": "mara",
                    "kind": "note",
                    "title": t,
                    "occurred_at": "2026-05-01",
                    "body": b,
                }
                for t, b in NOTES.items()
            ]
        )
        api.index()
        yield res
        api.close()


def _save(api, pairs) -> None:
    report = api.add_questions(
        [{"question": q, "expect_title": t} for q, t in pairs], memory="mara"
    )
    assert not report.rejections, report.rejections


def _run(resource, instance):
    result = dg.materialize(
        [retrieval_quality], resources={"memory_api": resource}, instance=instance
    )
    assert result.success
    [event] = result.get_asset_materialization_events()
    [check] = result.get_asset_check_evaluations()
    return event.materialization.metadata, check


def test_the_asset_shows_numeric_figures_tables_and_a_check(resource):
    _save(resource.api, QUESTIONS)
    instance = dg.DagsterInstance.ephemeral()

    meta, check = _run(resource, instance)

    assert isinstance(meta["mara/first_at_1"], dg.FloatMetadataValue)
    assert meta["mara/first_at_1"].value == 1.0 and meta["mara/recall_at_8"].value == 1.0
    assert meta["mara/questions"].value == 3 and meta["dagster/row_count"].value == 3
    assert isinstance(meta["mara/keyword/recall_at_8"], dg.FloatMetadataValue)
    table = meta["figures"].value
    assert isinstance(table, dg.TableMetadataValue)
    fused = next(r.data for r in table.records if r.data["ranking"] == "fused")
    assert fused["memory"] == "mara" and fused["first@1"] == 1.0 and fused["questions"] == 3
    assert "| mara" in meta["figures_markdown"].value and meta["misses"].value == "_none_"
    assert check.passed and check.check_name == "retrieval_quality_holds"
    latest = instance.get_latest_materialization_event(dg.AssetKey("retrieval_quality"))
    assert latest is not None and latest.asset_materialization.metadata["mara/mrr"].value == 1.0

    # The questions now expect the wrong notes: the figures fall, the misses say what came first.
    _save(
        resource.api, [(q, t) for (q, _), t in zip(QUESTIONS, ["Running", "Sourdough", "Dentist"])]
    )
    meta, check = _run(resource, instance)

    assert meta["mara/first_at_1"].value == 0.0
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert "first_at_1 1.000 -> 0.000" in check.metadata["mara/fell"].value
    misses = meta["misses"].value
    assert "| what does the sourdough starter need? | Running" in misses
    assert "| Sourdough" in misses  # what came first instead


def test_serving_generation_refuses_a_worse_model_unless_launched_to_accept_it(db_url, resource):
    from memory_pipeline.defs.assets.maintenance import hnsw_index, serving_generation
    from memory_pipeline.storage.profiles_store import active_profile
    from memory_pipeline_tests.search.test_quality_guard import RANDOM_MODEL, random_vectors

    _save(resource.api, QUESTIONS)
    instance = dg.DagsterInstance.ephemeral()
    _run(resource, instance)  # the serving generation's figures, recorded
    with LoopbackEmbeddingServer(dim=512, models={RANDOM_MODEL}, vector_fn=random_vectors) as s:
        worse = MemoryResource(
            url=db_url, embed_provider="ollama", embed_model=RANDOM_MODEL, embed_dim=512,
            embed_url=s.url,
        )  # fmt: skip
        assert worse.api.index().quality_guard["blocked"]  # built, not switched
        refused = dg.materialize(
            [serving_generation, hnsw_index],
            resources={"memory_api": worse},
            instance=instance,
            raise_on_error=False,
        )
        with worse.api.db.connection() as conn:
            still = active_profile(conn).model
        accepted = dg.materialize(
            [serving_generation],
            resources={"memory_api": worse},
            instance=instance,
            run_config={"ops": {"serving_generation": {"config": {"accept_worse": True}}}},
        )
        with worse.api.db.connection() as conn:
            now = active_profile(conn).model
        worse.api.close()

    checks = {c.check_name: c for c in refused.get_asset_check_evaluations()}
    guard = checks["serving_generation_scores_no_worse"]
    assert not guard.passed and guard.severity == dg.AssetCheckSeverity.ERROR
    assert "refused" in guard.description and still != RANDOM_MODEL
    meta = guard.metadata
    assert meta["mara/fused/serving_first_at_1"].value == 1.0
    assert meta["mara/fused/candidate_first_at_1"].value < 1.0
    assert "mara/vector/candidate_recall_at_8" in meta
    # A blocking check: the run's later step (the new generation's HNSW index) did not run.
    built = [e.asset_key.to_user_string() for e in refused.get_asset_materialization_events()]
    assert built == ["serving_generation"]
    [passed] = [
        c for c in accepted.get_asset_check_evaluations()
        if c.check_name == "serving_generation_scores_no_worse"
    ]  # fmt: skip
    assert passed.passed and passed.metadata["accepted_worse"].value is True
    assert now == RANDOM_MODEL


def test_the_sensor_scores_after_an_index_run_that_changed_a_memory_with_questions(resource):
    from memory_pipeline.defs.quality_sensors import retrieval_quality_sensor

    instance = dg.DagsterInstance.ephemeral()

    def tick():
        with dg.build_sensor_context(instance=instance, resources={"memory_api": resource}) as ctx:
            return retrieval_quality_sensor(ctx)

    assert "no memory with labelled questions" in tick().skip_message  # none yet
    _save(resource.api, QUESTIONS)
    first = tick()
    assert isinstance(first, dg.RunRequest) and first.run_key == "quality:never"
    _run(resource, instance)
    assert "no memory with labelled questions changed" in tick().skip_message
    resource.api.add(
        [
            {
                "memory": "mara",
                "kind": "note",
                "title": "New",
                "occurred_at": "2026-06-01",
                "body": "A new note about the sourdough oven.",
            }
        ]  # fmt: skip
    )
    assert "episodes are pending" in tick().skip_message
    resource.api.index()
    after = tick()
    assert isinstance(after, dg.RunRequest) and after.run_key != first.run_key
